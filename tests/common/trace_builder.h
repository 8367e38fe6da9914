#pragma once
// Builds small traces in memory for tests: events in ns on (device, stream) or host tracks.

#include <string>

#include "tracer/format/trace_model.h"
#include "tracer/format/trace_reader.h"

namespace ddpscope::testing {

struct EventSpec {
  std::string name;
  trace::TimeNs start = 0;
  trace::TimeNs dur = 0;
  std::int64_t stream = 7;
  std::int64_t device = 0;
  trace::EventKind kind = trace::EventKind::Kernel;
  std::int32_t bucket = trace::kNoBucket;
  std::int32_t step = trace::kNoStep;
  std::int64_t correlation = trace::kNoCorrelation;
  std::int64_t bytes = trace::kNoBytes;
};

class TraceBuilder {
 public:
  TraceBuilder& add(const EventSpec& e) {
    const bool gpu = trace::isGpuKind(e.kind);
    const auto ti = trace_.trackIndex(gpu ? trace::TrackKind::Gpu : trace::TrackKind::Host,
                                      gpu ? e.device : 100, gpu ? e.stream : 1);
    trace_.tracks[static_cast<std::size_t>(ti)].push(
        {e.start, e.dur, trace_.names.intern(e.name),
         trace_.names.intern(trace::categoryName(e.kind)), e.kind, e.correlation, e.bucket, e.step,
         e.bytes});
    return *this;
  }
  TraceBuilder& kernel(const std::string& name, trace::TimeNs start, trace::TimeNs dur,
                       std::int64_t stream = 7) {
    return add({name, start, dur, stream});
  }
  TraceBuilder& comm(trace::TimeNs start, trace::TimeNs dur, std::int64_t stream = 40) {
    return add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", start, dur, stream});
  }
  TraceBuilder& step(std::int32_t n, trace::TimeNs start, trace::TimeNs dur) {
    return add(
        {"ProfilerStep#" + std::to_string(n), start, dur, 1, 0, trace::EventKind::UserAnnotation});
  }
  trace::RankTrace& trace() { return trace_; }
  trace::RankTrace build() {
    trace::canonicalize(trace_);
    return trace_;
  }

 private:
  trace::RankTrace trace_;
};

// One step, two buckets, world size 4: gradients on stream 7, allreduces on stream 40,
// optimizer updates on stream 7 after each allreduce. The waits can be left out to break the
// two dependencies.
inline TraceBuilder twoBuckets(bool comm_waits = true, bool compute_waits = true) {
  TraceBuilder b;
  auto& t = b.trace();
  t.world_size = 4;
  t.ddpscope.present = true;
  t.ddpscope.source = "sim";
  t.ddpscope.buckets = {{0, 4'000'000, "f32", {{"fc2.weight", 3'000'000}, {"fc2.bias", 1'000'000}}},
                        {1, 2'000'000, "f32", {{"fc1.weight", 2'000'000}}}};
  b.step(0, 0, 10'000);
  b.add({"gemm_bwd_fc2", 0, 1'000, 7, 0, trace::EventKind::Kernel, 0, 0});
  b.add({"gemm_bwd_fc1", 1'000, 1'000, 7, 0, trace::EventKind::Kernel, 1, 0});
  // Bucket 0 ready at 1000; its allreduce 1000..3000 (1000 hidden by fc1's backward).
  b.add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", comm_waits ? 1'000 : 500, 2'000, 40, 0,
         trace::EventKind::Kernel, 0, 0, -1, 4'000'000});
  // Bucket 1 ready at 2000, allreduce waits for the comm stream: 3000..4000 (exposed).
  b.add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 3'000, 1'000, 40, 0, trace::EventKind::Kernel,
         1, 0, -1, 2'000'000});
  b.add({"sgd_update_bucket", compute_waits ? 3'000 : 2'500, 100, 7, 0, trace::EventKind::Kernel, 0,
         0});
  b.add({"sgd_update_bucket", 4'000, 100, 7, 0, trace::EventKind::Kernel, 1, 0});
  return b;
}

}  // namespace ddpscope::testing
