#include "agent/cuda/launch_labels.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>
#include <unordered_map>

namespace ddpscope::agent::cuda {

using trace::EventKind;
using trace::TrackKind;

std::int64_t cuptiBaseNs(const trace::RankTrace& trace) {
  for (const auto& [key, value] : trace.ddpscope.clock) {
    if (key != "cupti_to_epoch_ns") continue;
    std::int64_t offset = 0;
    auto [p, ec] = std::from_chars(value.data(), value.data() + value.size(), offset);
    if (ec == std::errc() && p == value.data() + value.size()) return trace.base_time_ns - offset;
  }
  throw std::runtime_error("the CUPTI trace has no cupti_to_epoch_ns clock entry");
}

LabelStats labelLaunches(trace::RankTrace& trace, std::span<const LaunchWindow> windows,
                         std::int64_t cupti_base_ns) {
  LabelStats stats;
  if (windows.empty()) return stats;
  // Correlation id of each API record -> the window (launch) it was made in.
  std::unordered_map<std::int64_t, const LaunchWindow*> launch_of;
  for (const auto& t : trace.tracks) {
    if (t.kind != TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.kind_of[i] != EventKind::Runtime && t.kind_of[i] != EventKind::Driver) continue;
      if (t.correlation[i] == trace::kNoCorrelation) continue;
      const auto at = static_cast<std::uint64_t>(t.start[i] + cupti_base_ns);
      auto it =
          std::upper_bound(windows.begin(), windows.end(), at,
                           [](std::uint64_t x, const LaunchWindow& w) { return x < w.begin; });
      if (it == windows.begin()) continue;
      --it;
      if (at > it->end) continue;
      launch_of.emplace(t.correlation[i], &*it);
      ++stats.launches_matched;
    }
  }
  for (auto& t : trace.tracks) {
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      auto it = launch_of.find(t.correlation[i]);
      if (it == launch_of.end()) continue;
      const LaunchWindow& w = *it->second;
      if (t.step[i] == trace::kNoStep && w.step >= 0) {
        t.step[i] = w.step;
        ++stats.events_labelled;
      }
      if (t.bucket[i] == trace::kNoBucket && w.tags.bucket >= 0) t.bucket[i] = w.tags.bucket;
      if (t.bytes[i] == trace::kNoBytes && w.tags.bytes >= 0) t.bytes[i] = w.tags.bytes;
    }
  }
  return stats;
}

}  // namespace ddpscope::agent::cuda
