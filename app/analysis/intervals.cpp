#include "intervals.h"

#include <algorithm>

#include "tracer/format/memory.h"

namespace ddpscope::analysis {

IntervalSet unionOf(std::vector<Interval> intervals) {
  // Intervals gathered stream by stream come as a few runs, each in start order: each run is
  // united as it stands and the unions merged, instead of sorting them all (the sort was a
  // tenth of a rank's analysis). More runs than this: sorted.
  constexpr std::size_t kMostRuns = 16;
  std::vector<std::size_t> run_ends;
  for (std::size_t i = 1; i < intervals.size() && run_ends.size() < kMostRuns; ++i) {
    if (intervals[i].start < intervals[i - 1].start) run_ends.push_back(i);
  }
  if (run_ends.size() < kMostRuns) {
    run_ends.push_back(intervals.size());
    std::vector<IntervalSet> runs(run_ends.size());
    std::size_t begin = 0;
    for (std::size_t r = 0; r < run_ends.size(); ++r) {
      trace::reserveAdvised(runs[r], run_ends[r] - begin);
      for (std::size_t i = begin; i < run_ends[r]; ++i)
        extendUnion(runs[r], intervals[i].start, intervals[i].end);
      begin = run_ends[r];
    }
    return uniteAll(std::move(runs));
  }
  std::sort(intervals.begin(), intervals.end(),
            [](const Interval& a, const Interval& b) { return a.start < b.start; });
  IntervalSet u;
  trace::reserveAdvised(u, intervals.size());
  for (const auto& i : intervals)
    extendUnion(u, i.start, i.end);
  return u;
}

IntervalSet unite(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet u;
  trace::reserveAdvised(u, a.size() + b.size());
  std::size_t i = 0, j = 0;
  while (i < a.size() || j < b.size()) {
    const bool take_a = j == b.size() || (i < a.size() && a[i].start <= b[j].start);
    const auto& x = take_a ? a[i++] : b[j++];
    extendUnion(u, x.start, x.end);
  }
  return u;
}

IntervalSet uniteAll(std::span<const IntervalSet> sets) {
  return uniteAll(std::vector<IntervalSet>(sets.begin(), sets.end()));
}

IntervalSet uniteAll(std::vector<IntervalSet>&& sets) {
  if (sets.empty()) return {};
  // Pairwise merging keeps the cost O(n log k) for k sets.
  std::vector<IntervalSet> level = std::move(sets);
  while (level.size() > 1) {
    std::vector<IntervalSet> next;
    next.reserve((level.size() + 1) / 2);
    for (std::size_t k = 0; k + 1 < level.size(); k += 2)
      next.push_back(unite(level[k], level[k + 1]));
    if (level.size() % 2 == 1) next.push_back(std::move(level.back()));
    level.swap(next);
  }
  return std::move(level.front());
}

IntervalSet intersect(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const TimeNs s = std::max(a[i].start, b[j].start);
    const TimeNs e = std::min(a[i].end, b[j].end);
    if (e > s) out.push_back({s, e});
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return out;
}

IntervalSet subtract(const IntervalSet& a, const IntervalSet& b) {
  IntervalSet out;
  std::size_t j = 0;
  for (const auto& x : a) {
    TimeNs cur = x.start;
    while (j < b.size() && b[j].end <= cur)
      ++j;
    std::size_t k = j;
    while (k < b.size() && b[k].start < x.end) {
      if (b[k].start > cur) out.push_back({cur, b[k].start});
      cur = std::max(cur, b[k].end);
      if (cur >= x.end) break;
      ++k;
    }
    if (cur < x.end) out.push_back({cur, x.end});
  }
  return out;
}

TimeNs totalLength(const IntervalSet& s) {
  TimeNs t = 0;
  for (const auto& i : s)
    t += i.end - i.start;
  return t;
}

TimeNs intersectionLength(const IntervalSet& a, const IntervalSet& b) {
  TimeNs t = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const TimeNs s = std::max(a[i].start, b[j].start);
    const TimeNs e = std::min(a[i].end, b[j].end);
    if (e > s) t += e - s;
    if (a[i].end < b[j].end) {
      ++i;
    } else {
      ++j;
    }
  }
  return t;
}

namespace {
// First interval whose end is after lo.
IntervalSet::const_iterator firstEndingAfter(const IntervalSet& s, TimeNs lo) {
  return std::upper_bound(s.begin(), s.end(), lo,
                          [](TimeNs t, const Interval& i) { return t < i.end; });
}
}  // namespace

TimeNs lengthWithin(const IntervalSet& s, TimeNs lo, TimeNs hi) {
  TimeNs t = 0;
  for (auto it = firstEndingAfter(s, lo); it != s.end() && it->start < hi; ++it) {
    t += std::min(it->end, hi) - std::max(it->start, lo);
  }
  return t;
}

IntervalSet clip(const IntervalSet& s, TimeNs lo, TimeNs hi) {
  IntervalSet out;
  for (auto it = firstEndingAfter(s, lo); it != s.end() && it->start < hi; ++it) {
    out.push_back({std::max(it->start, lo), std::min(it->end, hi)});
  }
  return out;
}

TimeNs uncoveredLength(const IntervalSet& s, TimeNs lo, TimeNs hi) {
  if (hi <= lo) return 0;
  return (hi - lo) - lengthWithin(s, lo, hi);
}

}  // namespace ddpscope::analysis
