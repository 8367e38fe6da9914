// Any bytes: the reader either rejects them with a TraceError or yields a model that writes and
// reads back to the same model, and that the analysis digests.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "app/analysis/analysis.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  trace::RankTrace t;
  try {
    t = trace::parseTraceText(text, "fuzz.json");
  } catch (const trace::TraceError&) {
    return 0;
  }
  const auto report = analysis::analyzeRank(t);
  if (report.whole.overlap_ns > report.whole.comm_ns) std::abort();
  const auto again = trace::parseTraceText(trace::serializeTrace(t), "fuzz-rt.json");
  if (!trace::describeDifference(t, again).empty()) std::abort();
  return 0;
}
