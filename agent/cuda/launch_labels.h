#pragma once
// Labels a CUPTI trace with what the training loop knew at each launch (step, bucket, bytes):
// a runtime or driver API record that starts inside a launch's host-time window belongs to that
// launch, and the GPU activity with the same correlation id gets its labels. Plain C++, so it is
// tested without a GPU.

#include <cstdint>
#include <span>

#include "agent/cuda/launch_window.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::agent::cuda {

struct LabelStats {
  std::int64_t launches_matched = 0;  // API records inside some window
  std::int64_t events_labelled = 0;   // GPU events that got a step
};

// `windows` are in CUPTI time, sorted by begin; `cupti_base_ns` is the CUPTI time of the trace's
// time 0. Labels only fields still unset.
LabelStats labelLaunches(trace::RankTrace& trace, std::span<const LaunchWindow> windows,
                         std::int64_t cupti_base_ns);

// The CUPTI time of the trace's time 0, from the converter's clock block
// (base_time_ns - cupti_to_epoch_ns); throws std::runtime_error when the block lacks it.
std::int64_t cuptiBaseNs(const trace::RankTrace& trace);

}  // namespace ddpscope::agent::cuda
