#pragma once
// The level-of-detail step of the timeline (STYLE.md): from one lane's events and a view window
// to the boxes to paint. Pure and Qt-free so that it is tested against a brute-force rasteriser.

#include <cstdint>
#include <vector>

#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

using trace::TimeNs;

// The visible time window [lo, hi) drawn across `width` pixel columns.
struct ViewWindow {
  TimeNs lo = 0;
  TimeNs hi = 1;
  int width = 1;
  bool operator==(const ViewWindow&) const = default;
};

// Pixel columns [x0, x1) relative to the window's left edge; empty when x1 <= x0.
struct PixelSpan {
  int x0 = 0;
  int x1 = 0;
  bool empty() const { return x1 <= x0; }
};

// The columns an event [start, end) covers: every column it touches, at least one when it is
// inside the window (a zero-length event still shows as a one-pixel tick).
PixelSpan pixelSpan(TimeNs start, TimeNs end, const ViewWindow& view);

// One lane's events, sorted by start. `style` picks the colour; `source` points back at the
// record the event came from (a track event, a step, a bucket) for hover and selection.
struct LaneEvents {
  std::vector<TimeNs> start;
  std::vector<TimeNs> end;
  std::vector<std::uint16_t> style;
  std::vector<std::uint32_t> source;
  std::vector<TimeNs> max_end;  // running maximum of end: monotonic, so it can be binary searched

  std::size_t size() const { return start.size(); }
  void add(TimeNs s, TimeNs e, std::uint16_t st, std::uint32_t src) {
    start.push_back(s);
    end.push_back(e);
    style.push_back(st);
    source.push_back(src);
  }
  // Sorts by start (stable) and fills max_end; call once after the last add().
  void finish();
};

// A box to paint: a run of columns with the events drawn in it.
struct DrawBox {
  int x0 = 0, x1 = 0;       // columns [x0, x1)
  std::uint16_t style = 0;  // the event's style, or the style of the longest event of a merged run
  std::uint32_t first = 0;  // index (in LaneEvents) of its first event
  std::uint32_t count = 0;  // events merged into it
  TimeNs busy_ns = 0;       // sum of their durations
};

// Events at least `merge_below_px` columns wide get their own box; narrower events that touch or
// overlap (in pixels) are merged into one box, and so is any event lying wholly inside the
// columns of such a merged box. The union of the boxes' columns equals the union of
// the events' columns exactly. Boxes are sorted by x0. Cost: log(n) + events in the window.
std::vector<DrawBox> buildDrawList(const LaneEvents& events, const ViewWindow& view,
                                   int merge_below_px = 3);

// Index of the first event that may be visible at or after time t (binary search on max_end).
std::size_t firstEventEndingAfter(const LaneEvents& events, TimeNs t);

// The box under column x, or nullptr.
const DrawBox* boxAtColumn(const std::vector<DrawBox>& boxes, int x);

}  // namespace ddpscope::ui
