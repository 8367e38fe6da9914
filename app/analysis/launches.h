#pragma once
// GPU work and the host calls that launched it (METRICS.md "Launches"): a kernel, copy or set is
// launched by the CUDA runtime or driver call of its rank that carries the same correlation id.

#include <cstdint>
#include <limits>
#include <span>
#include <utility>
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

// The same links, resolved on demand: every event that can end a link (a Runtime or Driver call
// with a correlation id on a host track, GPU activity with one on a GPU track) as its position in
// the rank, sorted by correlation id. 4 bytes per such event where the resolved links of a run
// keep 24 per link; a lookup is a binary search. links() and launchesOf() give what
// launchLinks() and launchesOf() give over resolveLaunches(rank), for the rank it was built from.
class LaunchIndex {
 public:
  LaunchIndex() = default;
  explicit LaunchIndex(const trace::RankTrace& rank);
  std::vector<LaunchLink> links(const trace::RankTrace& rank, std::int64_t correlation) const;
  std::vector<LaunchLink> launchesOf(const trace::RankTrace& rank, std::int64_t correlation,
                                     std::int32_t host_track, std::uint32_t host_index) const;
  // Per track of the rank, how many links have their host end on it (0 for GPU tracks): one pass.
  std::vector<std::size_t> launchesPerTrack(const trace::RankTrace& rank) const;
  bool empty() const { return order_.empty(); }
  std::size_t capacityBytes() const {
    return order_.capacity() * sizeof(std::uint32_t) + first_.capacity() * sizeof(std::uint64_t);
  }

 private:
  // The track and index of a position, and the correlation id there.
  std::pair<std::int32_t, std::uint32_t> at(std::uint32_t position) const;
  std::int64_t correlationAt(const trace::RankTrace& rank, std::uint32_t position) const;

  std::vector<std::uint64_t> first_;  // each track's first position; one past the last at the end
  std::vector<std::uint32_t> order_;  // positions, by correlation id, then position
};

// Correlation id -> the start of the host call that launched it: every Runtime or Driver call
// with a correlation id on a host track of the rank, starting before `cut`; when two calls carry
// one id, the first in track order, then index (the launch, as for LaunchIndex). 16 bytes per
// call in one sorted array (a hash map took about 40 and a fresh allocation per call); lookups
// in increasing correlation order, as a GPU track's events mostly come, are found next to the
// previous one (find's hint) instead of by a binary search.
class LaunchTimes {
 public:
  LaunchTimes() = default;
  explicit LaunchTimes(const trace::RankTrace& rank,
                       trace::TimeNs cut = std::numeric_limits<trace::TimeNs>::max());
  // The launch's start, or nullptr. `hint` (optional) is where the previous lookup ended; keep
  // one per sequence of lookups.
  const trace::TimeNs* find(std::int64_t correlation, std::size_t* hint = nullptr) const;
  bool empty() const { return by_correlation_.empty(); }
  std::size_t size() const { return by_correlation_.size(); }

 private:
  std::vector<std::pair<std::int64_t, trace::TimeNs>> by_correlation_;
};

// Launch latency: from the start of the host call to the start of the GPU work it launched.
inline trace::TimeNs launchLatency(trace::TimeNs launch_start, trace::TimeNs gpu_start) {
  return gpu_start - launch_start;
}

}  // namespace ddpscope::analysis
