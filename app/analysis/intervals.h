#pragma once
// Exact interval arithmetic in integer nanoseconds: unions, intersections, differences.

#include <span>
#include <vector>

#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

using trace::TimeNs;

struct Interval {
  TimeNs start = 0;
  TimeNs end = 0;  // exclusive; end >= start
  bool operator==(const Interval&) const = default;
};

// A set of disjoint, non-touching intervals sorted by start (a normalised union).
using IntervalSet = std::vector<Interval>;

// Appends [start,end) to a union being built from intervals sorted by start.
inline void extendUnion(IntervalSet& u, TimeNs start, TimeNs end) {
  if (end <= start) return;  // zero-length intervals cover nothing
  if (!u.empty() && start <= u.back().end) {
    if (end > u.back().end) u.back().end = end;
  } else {
    u.push_back({start, end});
  }
}

// The length of the union of intervals added in start order, without keeping the union: what
// totalLength gives for the set extendUnion builds from the same intervals.
class UnionLength {
 public:
  void add(TimeNs start, TimeNs end) {
    if (end <= start) return;  // as extendUnion: covers nothing
    if (open_ && start <= end_) {
      if (end > end_) end_ = end;
    } else {
      total_ += end_ - start_;
      start_ = start;
      end_ = end;
      open_ = true;
    }
  }
  TimeNs total() const { return total_ + (end_ - start_); }

 private:
  bool open_ = false;
  TimeNs start_ = 0, end_ = 0;  // the last interval, still growing (empty before the first)
  TimeNs total_ = 0;            // the ones before it
};

// Union of intervals in any order: up to 16 runs each in start order (intervals gathered stream by
// stream) are united run by run and merged, more are sorted first.
IntervalSet unionOf(std::vector<Interval> intervals);
// Union of two normalised sets.
IntervalSet unite(const IntervalSet& a, const IntervalSet& b);
// Union of several normalised sets.
IntervalSet uniteAll(std::span<const IntervalSet> sets);
IntervalSet uniteAll(std::vector<IntervalSet>&& sets);  // consumes the sets, no copies
IntervalSet intersect(const IntervalSet& a, const IntervalSet& b);
IntervalSet subtract(const IntervalSet& a, const IntervalSet& b);

TimeNs totalLength(const IntervalSet& s);
TimeNs intersectionLength(const IntervalSet& a, const IntervalSet& b);
// Length of s inside [lo, hi).
TimeNs lengthWithin(const IntervalSet& s, TimeNs lo, TimeNs hi);
// The part of s inside [lo, hi).
IntervalSet clip(const IntervalSet& s, TimeNs lo, TimeNs hi);
// Length of [lo, hi) not covered by s.
TimeNs uncoveredLength(const IntervalSet& s, TimeNs lo, TimeNs hi);

}  // namespace ddpscope::analysis
