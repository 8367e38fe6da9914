// Any bytes as a gzip stream: inflate stops with a TraceError (corrupt, truncated, too large) or
// succeeds within the size limit; never crashes or grows past it.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tracer/format/file_io.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trace::ReadLimits limits;
  limits.max_bytes = 1 << 20;
  try {
    const auto plain = trace::inflateBytes(
        std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json.gz", limits);
    if (plain.size() > limits.max_bytes) std::abort();
    (void)trace::parseTrace(plain, "fuzz.json.gz");
  } catch (const trace::TraceError&) {
  }
  return 0;
}
