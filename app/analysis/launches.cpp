#include "app/analysis/launches.h"

#include <algorithm>

namespace ddpscope::analysis {

namespace {
bool isLaunchKind(trace::EventKind k) {
  return k == trace::EventKind::Runtime || k == trace::EventKind::Driver;
}

struct HostCall {
  std::int64_t correlation;
  std::int32_t track;
  std::uint32_t index;
};
}  // namespace

std::vector<LaunchLink> resolveLaunches(const trace::RankTrace& rank) {
  std::vector<HostCall> calls;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (isLaunchKind(t.kind_of[i]) && t.correlation[i] != trace::kNoCorrelation)
        calls.push_back(
            {t.correlation[i], static_cast<std::int32_t>(ti), static_cast<std::uint32_t>(i)});
  }
  std::vector<LaunchLink> links;
  if (calls.empty()) return links;
  // Stable: of two calls with one id, the first in track order stays first.
  std::stable_sort(calls.begin(), calls.end(), [](const HostCall& a, const HostCall& b) {
    return a.correlation < b.correlation;
  });
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const std::int64_t c = t.correlation[i];
      if (c == trace::kNoCorrelation || !trace::isGpuActivity(t.kind_of[i])) continue;
      const auto it =
          std::lower_bound(calls.begin(), calls.end(), c,
                           [](const HostCall& h, std::int64_t v) { return h.correlation < v; });
      if (it == calls.end() || it->correlation != c) continue;
      links.push_back(
          {c, it->track, it->index, static_cast<std::int32_t>(ti), static_cast<std::uint32_t>(i)});
    }
  }
  std::sort(links.begin(), links.end(), [](const LaunchLink& a, const LaunchLink& b) {
    if (a.correlation != b.correlation) return a.correlation < b.correlation;
    if (a.gpu_track != b.gpu_track) return a.gpu_track < b.gpu_track;
    return a.gpu_index < b.gpu_index;
  });
  links.shrink_to_fit();
  return links;
}

std::span<const LaunchLink> launchLinks(const std::vector<LaunchLink>& links,
                                        std::int64_t correlation) {
  if (correlation == trace::kNoCorrelation) return {};
  const auto [lo, hi] = std::equal_range(
      links.begin(), links.end(), LaunchLink{correlation, -1, 0, -1, 0},
      [](const LaunchLink& a, const LaunchLink& b) { return a.correlation < b.correlation; });
  return {lo, hi};
}

std::span<const LaunchLink> launchesOf(const std::vector<LaunchLink>& links,
                                       std::int64_t correlation, std::int32_t host_track,
                                       std::uint32_t host_index) {
  const auto all = launchLinks(links, correlation);
  if (all.empty() || all.front().host_track != host_track || all.front().host_index != host_index)
    return {};
  return all;
}

}  // namespace ddpscope::analysis
