#pragma once
// GPU work and the host calls that launched it (METRICS.md "Launches"): a kernel, copy or set is
// launched by the CUDA runtime or driver call of its rank that carries the same correlation id.

#include <cstdint>
#include <span>
#include <vector>

#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

// One resolved launch: the host call (a Runtime or Driver event of a host track) and the GPU
// activity (Kernel, Memcpy, Memset or Sync of a GPU track) that share a correlation id.
struct LaunchLink {
  std::int64_t correlation = trace::kNoCorrelation;
  std::int32_t host_track = -1;
  std::uint32_t host_index = 0;
  std::int32_t gpu_track = -1;
  std::uint32_t gpu_index = 0;
  bool operator==(const LaunchLink&) const = default;
};

// Every GPU activity of `rank` whose correlation id names a Runtime or Driver call on one of its
// host tracks, sorted by (correlation, GPU track, GPU index). A call that launched several
// activities (a CUDA graph) has a link to each; when two calls carry one id, the first in track
// order is the launch. Empty for a trace without host calls.
std::vector<LaunchLink> resolveLaunches(const trace::RankTrace& rank);

// The links of correlation id `correlation` (empty when none): the lookup in both directions,
// from a kernel's correlation to its launch and from a launch's to its kernels.
std::span<const LaunchLink> launchLinks(const std::vector<LaunchLink>& links,
                                        std::int64_t correlation);

// The links whose host end is event `host_index` of host track `host_track`, `correlation` being
// that event's id: the GPU work that call launched. Empty for an event that is not the launch,
// such as a CPU op or a second call carrying the same id (every link of one id has one host
// end, the launch resolveLaunches chose).
std::span<const LaunchLink> launchesOf(const std::vector<LaunchLink>& links,
                                       std::int64_t correlation, std::int32_t host_track,
                                       std::uint32_t host_index);

// Launch latency: from the start of the host call to the start of the GPU work it launched.
inline trace::TimeNs launchLatency(trace::TimeNs launch_start, trace::TimeNs gpu_start) {
  return gpu_start - launch_start;
}

}  // namespace ddpscope::analysis
