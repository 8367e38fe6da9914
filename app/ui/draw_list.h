#pragma once
// The level-of-detail step of the timeline (docs/UI.md "How it draws millions of events"): from
// one lane's events and a view window to the boxes to paint. Pure and Qt-free so that it is
// tested against a brute-force rasteriser.

#include <cstdint>
#include <utility>
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
//
// Stored compactly, about 9.75 bytes an event (a lane of a GPU stream holds one item per kernel):
// the start as a 32-bit offset from its block's first start (kBlock events a block; an event more
// than 4.29 s after its block's first keeps its start exactly aside); the duration in 32 bits, with
// the rare event that does not fit (4.29 s or longer, or ending before it starts) kept exactly
// aside; the style in one byte; the source only when it is not the event's own index (a stream lane
// whose events are its track's, in order, has none); and the running maximum of end once per block
// of kBlock events, for firstEventEndingAfter.
class LaneEvents {
 public:
  static constexpr std::size_t kBlock = 64;
  // Stored in place of a duration that does not fit in 32 bits: the end is kept in long_end_.
  static constexpr std::uint32_t kLongDuration = 0xFFFFFFFFu;

  // Stored in place of a start offset that does not fit in 32 bits: the start is in far_start_.
  static constexpr std::uint32_t kFarStart = 0xFFFFFFFFu;

  std::size_t size() const { return style_.size(); }
  // After finish() (add() keeps the starts whole until then).
  TimeNs start(std::size_t i) const {
    const std::uint32_t o = start_offset_[i];
    return o != kFarStart ? block_start_[i / kBlock] + static_cast<TimeNs>(o) : farStart(i);
  }
  TimeNs end(std::size_t i) const {
    const std::uint32_t d = dur_[i];
    return d != kLongDuration ? start(i) + static_cast<TimeNs>(d) : longEnd(i);
  }
  // The first event starting at or after t (size() when none).
  std::size_t firstStartingAtOrAfter(TimeNs t) const;
  std::uint8_t style(std::size_t i) const { return style_[i]; }
  std::uint32_t source(std::size_t i) const {
    return source_.empty() ? static_cast<std::uint32_t>(i) : source_[i];
  }
  // The largest end of any event; the lane must not be empty.
  TimeNs maxEnd() const { return block_max_end_.back(); }

  void add(TimeNs s, TimeNs e, std::uint8_t st, std::uint32_t src);
  // Sorts by start (stable), fits the columns to their size and fills the block maxima; call once
  // after the last add() (a second call does nothing; no add() after it), before reading.
  void finish();

  // The durations as stored, for the draw-list builder's loop and for tests.
  const std::uint32_t* durationData() const { return dur_.data(); }
  // Running maximum of end at the last event of each block (monotonic: binary searched).
  const std::vector<TimeNs>& blockMaxEnd() const { return block_max_end_; }
  // What the draw-list builder needs to take a whole block at once at a far zoom: the sum of its
  // events' durations, the length of their union, the largest end (as an offset from the first
  // start), and its styles: `styles` 1 when every event has `style`, 2 when they have `style` or
  // `second_style` (`second_busy` the time of the latter), 0 when the block cannot be taken
  // whole (more styles, an event ending before it starts, or an end too far for the offset;
  // end_offset is then at most 0xFFFFFFFF, and no less than any event's duration).
  struct BlockSummary {
    TimeNs busy = 0;
    TimeNs union_ns = 0;
    TimeNs second_busy = 0;
    std::uint32_t end_offset = 0;
    std::uint8_t style = 0;
    std::uint8_t second_style = 0;
    std::uint8_t styles = 0;
  };
  const std::vector<BlockSummary>& blockSummaries() const { return block_summary_; }
  bool sourcesAreIndices() const { return source_.empty(); }
  std::size_t longDurationCount() const { return long_end_.size(); }
  std::size_t farStartCount() const { return far_start_.size(); }
  // Bytes held by the columns (their capacity).
  std::size_t bytes() const;

 private:
  TimeNs longEnd(std::size_t i) const;
  TimeNs farStart(std::size_t i) const;

  std::vector<TimeNs> start_;                // the starts whole, from add() to finish() only
  std::vector<TimeNs> block_start_;          // each block's first start
  std::vector<std::uint32_t> start_offset_;  // start - its block's first start, or kFarStart
  std::vector<std::pair<std::uint32_t, TimeNs>> far_start_;  // (index, start), sorted by index
  std::vector<std::uint32_t> dur_;                           // end - start, or kLongDuration
  std::vector<std::uint8_t> style_;
  std::vector<std::uint32_t> source_;  // empty while source(i) == i for every event
  std::vector<std::pair<std::uint32_t, TimeNs>> long_end_;  // (index, end), sorted by index
  std::vector<TimeNs> block_max_end_;
  std::vector<BlockSummary> block_summary_;
};

// A box to paint: a run of columns with the events drawn in it.
struct DrawBox {
  int x0 = 0, x1 = 0;       // columns [x0, x1)
  std::uint8_t style = 0;   // the event's style; in a merged box, the style taking most time
  std::uint32_t first = 0;  // index (in LaneEvents) of its first event
  std::uint32_t count = 0;  // events merged into it
  TimeNs busy_ns = 0;       // sum of their durations
};

// Events at least `merge_below_px` columns wide get their own box; narrower events that touch or
// overlap (in pixels) are merged into one box, and so is any event lying wholly inside the
// columns of such a merged box. A narrow event of another style than the merged box it touches
// starts a box of its own when it reaches columns beyond it (the two may share one column), so
// colours follow the events at any zoom. The union of the boxes' columns equals the union of
// the events' columns exactly. Boxes are sorted by x0. Cost: log(n) + events in the window.
//
// With `occupancy`, also how busy each column is (resized to view.width): the length of the
// union of the events inside the column divided by the column's length, in [0, 1]. A merged box
// is drawn column by column at that height, so that idle time inside it stays visible at any
// zoom (docs/UI.md "How it draws millions of events"). Same pass, no extra cost in events.
//
// At a far zoom a whole block of events (LaneEvents::kBlock) that joins the box being merged, in
// one column, is taken at once from its summary (`use_blocks`; false walks every event, the
// oracle the tests compare with; `blocks_taken` counts them): the same boxes, and the same
// occupancy up to rounding, at a cost of about kBlock events per column plus one step per block
// instead of one per event.
std::vector<DrawBox> buildDrawList(const LaneEvents& events, const ViewWindow& view,
                                   int merge_below_px = 3, std::vector<float>* occupancy = nullptr,
                                   bool use_blocks = true, std::size_t* blocks_taken = nullptr);

// Whether a box is drawn whole (one event at least `merge_below_px` columns wide) rather than
// column by column at each column's occupancy.
inline bool drawnWhole(const DrawBox& b, int merge_below_px = 3) {
  return b.count == 1 && b.x1 - b.x0 >= merge_below_px;
}

// Index of the first event that may be visible at or after time t: the first whose running
// maximum of end is at least t (binary search on the block maxima, then a scan of one block).
std::size_t firstEventEndingAfter(const LaneEvents& events, TimeNs t);

// The box under column x, or nullptr.
const DrawBox* boxAtColumn(const std::vector<DrawBox>& boxes, int x);

}  // namespace ddpscope::ui
