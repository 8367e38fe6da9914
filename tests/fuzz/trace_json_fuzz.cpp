// Any bytes: the reader either rejects them with a TraceError or yields a model that writes and
// reads back to the same model, and that the analysis digests. Differential: parsed in tiny
// pieces of the event array (as big files are), on up to three threads, the outcome is the same,
// to the message.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <variant>

#include "app/analysis/analysis.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;

namespace {

// The model, or the error message.
std::variant<trace::RankTrace, std::string> load(std::string_view text, std::size_t piece_bytes,
                                                 unsigned threads) {
  trace::ReadOptions options;
  options.piece_bytes = piece_bytes;
  options.threads = threads;
  try {
    return trace::parseTraceText(text, "fuzz.json", options);
  } catch (const trace::TraceError& e) {
    return std::string(e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto whole = load(text, 0, 1);
  const auto pieces = load(text, 16, 3);
  if (whole.index() != pieces.index()) std::abort();
  if (const auto* error = std::get_if<std::string>(&whole)) {
    if (*error != std::get<std::string>(pieces)) std::abort();
    return 0;
  }
  const auto& t = std::get<trace::RankTrace>(whole);
  const auto& p = std::get<trace::RankTrace>(pieces);
  if (!trace::describeDifference(t, p).empty() || t.warnings != p.warnings) std::abort();
  const auto report = analysis::analyzeRank(t);
  if (report.whole.overlap_ns > report.whole.comm_ns) std::abort();
  const auto again = trace::parseTraceText(trace::serializeTrace(t), "fuzz-rt.json");
  if (!trace::describeDifference(t, again).empty()) std::abort();
  return 0;
}
