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
    auto& t = trace_.tracks[static_cast<std::size_t>(ti)];
    t.start.push_back(e.start);
    t.dur.push_back(e.dur);
    t.name.push_back(trace_.names.intern(e.name));
    t.cat.push_back(trace_.names.intern(trace::categoryName(e.kind)));
    t.kind_of.push_back(e.kind);
    t.correlation.push_back(e.correlation);
    t.bucket.push_back(e.bucket);
    t.step.push_back(e.step);
    t.bytes.push_back(e.bytes);
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

}  // namespace ddpscope::testing
