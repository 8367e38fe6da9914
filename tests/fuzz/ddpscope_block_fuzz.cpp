// Any bytes as the value of our "ddpscope" block (version, source, config, clock, buckets,
// incomplete, dropped_records) in a trace whose events name steps and buckets: the reader
// rejects it with a TraceError or gives a model that writes and reads back unchanged, and that
// the analysis and both report formats digest. The whole-file fuzzer rarely gets this deep into
// the block; this one starts there (seeds: blocks our writer wrote).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;

namespace {

// One step: gradients of bucket 0, its allreduce, the optimizer update, a second bucket.
constexpr std::string_view kHead = R"({"schemaVersion": 1,
"distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 2},
"baseTimeNanoseconds": 1700000000000000000,
"traceEvents": [
{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#0", "pid": 1, "tid": 1, "ts": 0, "dur": 100},
{"ph": "X", "cat": "kernel", "name": "gemm_backward", "pid": 0, "tid": 7, "ts": 1, "dur": 10, "args": {"stream": 7, "bucket": 0, "step": 0, "correlation": 1}},
{"ph": "X", "cat": "gpu_user_annotation", "name": "bucket 0 ready", "pid": 0, "tid": 7, "ts": 11, "dur": 0, "args": {"stream": 7, "bucket": 0, "step": 0}},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 13, "ts": 12, "dur": 20, "args": {"stream": 13, "bucket": 0, "step": 0}},
{"ph": "X", "cat": "kernel", "name": "pack_bucket", "pid": 0, "tid": 7, "ts": 30, "dur": 2, "args": {"stream": 7, "bucket": 1, "step": 0}},
{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_f32_RING_LL", "pid": 0, "tid": 13, "ts": 40, "dur": 20, "args": {"stream": 13, "bucket": 1, "step": 0, "bytes": 4096}},
{"ph": "X", "cat": "kernel", "name": "sgd_update", "pid": 0, "tid": 7, "ts": 35, "dur": 5, "args": {"stream": 7, "bucket": 1, "step": 0}}
],
"ddpscope": )";

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "ddpscope_block fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(kHead);
  text.append(reinterpret_cast<const char*>(data), size);
  text += "}";
  trace::RankTrace t;
  try {
    t = trace::parseTraceText(text, "block.json");
  } catch (const trace::TraceError&) {
    return 0;
  }
  const auto again = trace::parseTraceText(trace::serializeTrace(t), "block-rt.json");
  if (const auto d = trace::describeDifference(t, again); !d.empty()) {
    fail("the round trip changed the model", d);
  }
  trace::Run run;
  run.name = "fuzz";
  run.ranks.push_back(std::move(t));
  const auto report = analysis::analyzeRun(run);
  for (const auto& r : report.ranks) {
    if (r.whole.overlap_ns > r.whole.comm_ns) fail("overlap exceeds communication", r.path);
  }
  (void)analysis::reportToJson(report);
  (void)analysis::reportToText(report);
  return 0;
}
