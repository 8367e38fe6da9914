#include "app/analysis/launches.h"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "tracer/format/memory.h"

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

namespace {
// Whether event i of track t can end a link: what resolveLaunches looks at on each side.
bool linkEnd(const trace::Track& t, std::size_t i) {
  if (t.correlation[i] == trace::kNoCorrelation) return false;
  return t.kind == trace::TrackKind::Host ? isLaunchKind(t.kind_of[i])
                                          : trace::isGpuActivity(t.kind_of[i]);
}
}  // namespace

LaunchIndex::LaunchIndex(const trace::RankTrace& rank) {
  std::uint64_t total = 0;
  first_.reserve(rank.tracks.size() + 1);
  for (const auto& t : rank.tracks) {
    first_.push_back(total);
    total += t.size();
  }
  first_.push_back(total);
  if (total > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("a rank of more than 2^32 events");
  // (correlation, position) pairs sorted, then the positions alone.
  std::vector<std::pair<std::int64_t, std::uint32_t>> keyed;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    for (std::size_t i = 0; i < t.size(); ++i)
      if (linkEnd(t, i))
        keyed.emplace_back(t.correlation[i], static_cast<std::uint32_t>(first_[ti] + i));
  }
  // No host call or no GPU work: no links at all (as resolveLaunches).
  bool host = false, gpu = false;
  for (const auto& [c, pos] : keyed)
    (rank.tracks[static_cast<std::size_t>(at(pos).first)].kind == trace::TrackKind::Host ? host
                                                                                         : gpu) =
        true;
  if (!host || !gpu) return;
  std::sort(keyed.begin(), keyed.end());
  order_.reserve(keyed.size());
  for (const auto& [c, pos] : keyed)
    order_.push_back(pos);
}

std::pair<std::int32_t, std::uint32_t> LaunchIndex::at(std::uint32_t position) const {
  const auto it = std::upper_bound(first_.begin(), first_.end(), std::uint64_t{position});
  const auto track = static_cast<std::size_t>(it - first_.begin()) - 1;
  return {static_cast<std::int32_t>(track), static_cast<std::uint32_t>(position - first_[track])};
}

std::int64_t LaunchIndex::correlationAt(const trace::RankTrace& rank,
                                        std::uint32_t position) const {
  const auto [track, index] = at(position);
  return rank.tracks[static_cast<std::size_t>(track)].correlation[index];
}

std::vector<LaunchLink> LaunchIndex::links(const trace::RankTrace& rank,
                                           std::int64_t correlation) const {
  std::vector<LaunchLink> out;
  if (correlation == trace::kNoCorrelation || order_.empty()) return out;
  const auto lo =
      std::lower_bound(order_.begin(), order_.end(), correlation,
                       [&](std::uint32_t p, std::int64_t c) { return correlationAt(rank, p) < c; });
  auto hi = lo;
  while (hi != order_.end() && correlationAt(rank, *hi) == correlation)
    ++hi;
  // The launch: the first host call in track order (positions are in track order).
  std::int32_t host_track = -1;
  std::uint32_t host_index = 0;
  for (auto it = lo; it != hi && host_track < 0; ++it) {
    const auto [track, index] = at(*it);
    if (rank.tracks[static_cast<std::size_t>(track)].kind == trace::TrackKind::Host) {
      host_track = track;
      host_index = index;
    }
  }
  if (host_track < 0) return out;
  for (auto it = lo; it != hi; ++it) {
    const auto [track, index] = at(*it);
    if (rank.tracks[static_cast<std::size_t>(track)].kind == trace::TrackKind::Gpu)
      out.push_back({correlation, host_track, host_index, track, index});
  }
  return out;
}

std::vector<std::size_t> LaunchIndex::launchesPerTrack(const trace::RankTrace& rank) const {
  std::vector<std::size_t> out(rank.tracks.size(), 0);
  // Each id's run of positions: its first host call takes every GPU end of the run.
  for (std::size_t lo = 0; lo < order_.size();) {
    const std::int64_t c = correlationAt(rank, order_[lo]);
    std::size_t hi = lo;
    std::int32_t host = -1;
    std::size_t gpu = 0;
    for (; hi < order_.size() && correlationAt(rank, order_[hi]) == c; ++hi) {
      const auto track = at(order_[hi]).first;
      if (rank.tracks[static_cast<std::size_t>(track)].kind == trace::TrackKind::Host) {
        if (host < 0) host = track;
      } else {
        ++gpu;
      }
    }
    if (host >= 0) out[static_cast<std::size_t>(host)] += gpu;
    lo = hi;
  }
  return out;
}

std::vector<LaunchLink> LaunchIndex::launchesOf(const trace::RankTrace& rank,
                                                std::int64_t correlation, std::int32_t host_track,
                                                std::uint32_t host_index) const {
  auto all = links(rank, correlation);
  if (all.empty() || all.front().host_track != host_track || all.front().host_index != host_index)
    all.clear();
  return all;
}

LaunchTimes::LaunchTimes(const trace::RankTrace& rank, trace::TimeNs cut) {
  auto launch = [&](const trace::Track& t, std::size_t i) {
    const auto k = t.kind_of[i];
    return (k == trace::EventKind::Runtime || k == trace::EventKind::Driver) &&
           t.correlation[i] != trace::kNoCorrelation && t.start[i] < cut;
  };
  std::size_t n = 0;
  for (const auto& t : rank.tracks) {
    if (t.kind != trace::TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i)
      n += launch(t, i) ? 1 : 0;
  }
  if (n == 0) return;
  trace::reserveAdvised(by_correlation_, n);
  for (const auto& t : rank.tracks) {
    if (t.kind != trace::TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (launch(t, i)) by_correlation_.emplace_back(t.correlation[i], t.start[i]);
    }
  }
  auto by_id = [](const auto& a, const auto& b) { return a.first < b.first; };
  // One host thread launching in order is sorted already; stable: the first of equal ids stays
  // first, and unique keeps it.
  if (!std::is_sorted(by_correlation_.begin(), by_correlation_.end(), by_id))
    std::stable_sort(by_correlation_.begin(), by_correlation_.end(), by_id);
  by_correlation_.erase(
      std::unique(by_correlation_.begin(), by_correlation_.end(),
                  [](const auto& a, const auto& b) { return a.first == b.first; }),
      by_correlation_.end());
}

const trace::TimeNs* LaunchTimes::find(std::int64_t correlation, std::size_t* hint) const {
  const auto& v = by_correlation_;
  std::size_t lo = 0, hi = v.size();
  if (hint != nullptr && *hint < v.size() && v[*hint].first <= correlation) {
    // Gallop forward from the hint: a few steps when lookups come in increasing order.
    lo = *hint;
    std::size_t step = 1;
    while (lo + step < v.size() && v[lo + step].first <= correlation) {
      lo += step;
      step *= 2;
    }
    hi = std::min(v.size(), lo + step + 1);
  }
  const auto it = std::lower_bound(v.begin() + static_cast<std::ptrdiff_t>(lo),
                                   v.begin() + static_cast<std::ptrdiff_t>(hi), correlation,
                                   [](const auto& e, std::int64_t c) { return e.first < c; });
  const auto at = static_cast<std::size_t>(it - v.begin());
  if (hint != nullptr) *hint = at;
  return it != v.end() && it->first == correlation ? &it->second : nullptr;
}

}  // namespace ddpscope::analysis
