#include "app/ui/draw_list.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <limits>
#include <numeric>

namespace ddpscope::ui {

PixelSpan pixelSpan(TimeNs start, TimeNs end, const ViewWindow& view) {
  if (view.width <= 0 || view.hi <= view.lo) return {};
  if (start >= view.hi || end < view.lo || (end == view.lo && start < end)) return {};
  const double scale = static_cast<double>(view.width) / static_cast<double>(view.hi - view.lo);
  // Clamped just outside the window before the conversion to int: an event seconds long seen at
  // nanosecond zoom spans more columns than an int holds. (start < hi and end >= lo here, so
  // only the start can lie far left and the end far right.)
  const double x0f = std::max(static_cast<double>(start - view.lo) * scale, -1.0);
  const double x1f =
      std::min(static_cast<double>(end - view.lo) * scale, static_cast<double>(view.width) + 1.0);
  int x0 = static_cast<int>(std::floor(x0f));
  int x1 = static_cast<int>(std::ceil(x1f));
  if (x1 <= x0) x1 = x0 + 1;
  x0 = std::clamp(x0, 0, view.width);
  x1 = std::clamp(x1, 0, view.width);
  if (x1 <= x0) return {};
  return {x0, x1};
}

namespace {

template <class T>
std::vector<T> permuted(const std::vector<T>& v, const std::vector<std::uint32_t>& order) {
  std::vector<T> out;
  out.reserve(order.size());
  for (const auto k : order)
    out.push_back(v[k]);
  return out;
}

}  // namespace

void LaneEvents::add(TimeNs s, TimeNs e, std::uint8_t st, std::uint32_t src) {
  assert(start_.size() == style_.size() && "LaneEvents::add after finish");
  const std::size_t i = style_.size();
  // Sources are kept only from the first event whose source is not its index.
  if (!source_.empty()) {
    source_.push_back(src);
  } else if (src != i) {
    source_.resize(i);
    std::iota(source_.begin(), source_.end(), 0u);
    source_.push_back(src);
  }
  start_.push_back(s);
  style_.push_back(st);
  if (e >= s && e - s < TimeNs{kLongDuration}) {
    dur_.push_back(static_cast<std::uint32_t>(e - s));
  } else {
    dur_.push_back(kLongDuration);
    long_end_.emplace_back(static_cast<std::uint32_t>(i), e);
  }
}

TimeNs LaneEvents::farStart(std::size_t i) const {
  const auto it = std::lower_bound(
      far_start_.begin(), far_start_.end(), i,
      [](const std::pair<std::uint32_t, TimeNs>& p, std::size_t k) { return p.first < k; });
  return it->second;
}

std::size_t LaneEvents::firstStartingAtOrAfter(TimeNs t) const {
  std::size_t lo = 0, hi = size();
  while (lo < hi) {
    const std::size_t mid = lo + (hi - lo) / 2;
    if (start(mid) < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

TimeNs LaneEvents::longEnd(std::size_t i) const {
  const auto it = std::lower_bound(
      long_end_.begin(), long_end_.end(), i,
      [](const std::pair<std::uint32_t, TimeNs>& p, std::size_t k) { return p.first < k; });
  return it->second;
}

void LaneEvents::finish() {
  if (start_.size() != style_.size()) return;  // finished already: the starts are offsets now
  const std::size_t n = start_.size();
  if (!std::is_sorted(start_.begin(), start_.end())) {
    std::vector<std::uint32_t> order(n);
    std::iota(order.begin(), order.end(), 0u);
    std::stable_sort(order.begin(), order.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return start_[a] < start_[b]; });
    std::vector<std::pair<std::uint32_t, TimeNs>> long_end;
    long_end.reserve(long_end_.size());
    for (std::size_t i = 0; i < n; ++i)
      if (dur_[order[i]] == kLongDuration)
        long_end.emplace_back(static_cast<std::uint32_t>(i), longEnd(order[i]));
    start_ = permuted(start_, order);
    dur_ = permuted(dur_, order);
    style_ = permuted(style_, order);
    source_ = source_.empty() ? std::move(order) : permuted(source_, order);
    long_end_ = std::move(long_end);
  }
  bool indices = true;
  for (std::size_t i = 0; i < source_.size() && indices; ++i)
    indices = source_[i] == i;
  if (indices) source_ = {};
  // The starts as offsets from their block's first (sorted: offsets are never negative).
  block_start_.clear();
  block_start_.reserve((n + kBlock - 1) / kBlock);
  start_offset_.clear();
  start_offset_.reserve(n);
  far_start_.clear();
  for (std::size_t i = 0; i < n; ++i) {
    if (i % kBlock == 0) block_start_.push_back(start_[i]);
    const TimeNs off = start_[i] - block_start_.back();
    if (off < TimeNs{kFarStart}) {
      start_offset_.push_back(static_cast<std::uint32_t>(off));
    } else {
      start_offset_.push_back(kFarStart);
      far_start_.emplace_back(static_cast<std::uint32_t>(i), start_[i]);
    }
  }
  std::vector<TimeNs>().swap(start_);  // (`= {}` would keep the capacity)
  far_start_.shrink_to_fit();
  dur_.shrink_to_fit();
  style_.shrink_to_fit();
  source_.shrink_to_fit();
  long_end_.shrink_to_fit();
  block_max_end_.clear();
  block_max_end_.reserve((n + kBlock - 1) / kBlock);
  block_summary_.clear();
  block_summary_.reserve((n + kBlock - 1) / kBlock);
  TimeNs m = std::numeric_limits<TimeNs>::min();
  BlockSummary b;
  TimeNs first = 0, block_end = 0;  // the block's first start and its largest end so far
  for (std::size_t i = 0; i < n; ++i) {
    const TimeNs s = start(i), e = end(i);
    const std::uint8_t st = style_[i];
    m = std::max(m, e);
    if (i % kBlock == 0) {
      b = {0, 0, 0, 0, st, st, 1};
      first = s;
      block_end = s;
    }
    if (e < s) {
      b.styles = 0;
    } else if (b.styles > 0 && st != b.style) {
      if (b.styles == 1) {
        b.second_style = st;
        b.styles = 2;
      }
      if (st == b.second_style) {
        b.second_busy += e - s;
      } else {
        b.styles = 0;
      }
    }
    b.busy += e - s;
    if (e > block_end) {  // the part of this event beyond every earlier one of the block
      b.union_ns += e - std::max(s, block_end);
      block_end = e;
    }
    if (i % kBlock == kBlock - 1 || i + 1 == n) {
      block_max_end_.push_back(m);
      if (block_end - first > TimeNs{0xFFFFFFFF}) b.styles = 0;
      b.end_offset = static_cast<std::uint32_t>(std::min<TimeNs>(block_end - first, 0xFFFFFFFF));
      block_summary_.push_back(b);
    }
  }
}

std::size_t LaneEvents::bytes() const {
  return start_.capacity() * sizeof(TimeNs) + block_start_.capacity() * sizeof(TimeNs) +
         start_offset_.capacity() * sizeof(std::uint32_t) +
         far_start_.capacity() * sizeof(far_start_[0]) + dur_.capacity() * sizeof(std::uint32_t) +
         style_.capacity() * sizeof(std::uint8_t) + source_.capacity() * sizeof(std::uint32_t) +
         long_end_.capacity() * sizeof(long_end_[0]) + block_max_end_.capacity() * sizeof(TimeNs) +
         block_summary_.capacity() * sizeof(BlockSummary);
}

std::size_t firstEventEndingAfter(const LaneEvents& events, TimeNs t) {
  // The block holding the first event whose running maximum of end reaches t; the maximum before
  // that block is below t, so that event is the block's first whose own end reaches t.
  const auto& blocks = events.blockMaxEnd();
  const auto b =
      static_cast<std::size_t>(std::lower_bound(blocks.begin(), blocks.end(), t) - blocks.begin());
  const std::size_t n = events.size();
  if (b == blocks.size()) return n;
  const std::size_t last = std::min(n, (b + 1) * LaneEvents::kBlock);
  std::size_t i = b * LaneEvents::kBlock;
  while (i < last && events.end(i) < t)
    ++i;
  return i;
}

namespace {

// The time each style takes in a merged box, so that the box shows the style that takes most of
// it (a box of many short hidden pieces and one long exposed tail is mostly hidden; of two with
// the same time, the lower style). A few styles meet in one box; past kSlots, further styles are
// not counted. The style shown depends on the totals only, not on the order they were added in,
// so a block of events added as one total per style shows what adding its events one by one does.
class StyleTotals {
 public:
  void reset(std::uint8_t style, TimeNs dur) {
    n_ = 1;
    slots_[0] = {style, dur};
    best_ = 0;
  }
  // Adds dur to style; returns the style with the most time so far.
  std::uint8_t add(std::uint8_t style, TimeNs dur) {
    if (slots_[best_].first == style) {  // the common case: more of the leading style
      slots_[best_].second += dur;
      return style;
    }
    int k = 0;
    while (k < n_ && slots_[k].first != style)
      ++k;
    if (k == n_) {
      if (n_ == kSlots) return slots_[best_].first;
      slots_[n_++] = {style, 0};
    }
    slots_[k].second += dur;
    const auto& b = slots_[best_];
    if (slots_[k].second > b.second || (slots_[k].second == b.second && style < b.first)) best_ = k;
    return slots_[best_].first;
  }
  // Whether `styles` more styles would all be counted, whatever they are.
  bool roomFor(int styles) const { return n_ + styles <= kSlots; }

 private:
  static constexpr int kSlots = 8;
  std::array<std::pair<std::uint8_t, TimeNs>, kSlots> slots_{};
  int n_ = 0;
  int best_ = 0;
};

// Accumulates the union of a lane's events into the columns of a window: events arrive in start
// order, and only the part of each beyond the furthest end seen so far is added, so that
// overlapping events are counted once.
class OccupancyAccumulator {
 public:
  OccupancyAccumulator(std::vector<float>* out, const ViewWindow& view, double scale)
      : out_(out), view_(view), scale_(scale), covered_(view.lo) {
    if (out_) sums_.assign(static_cast<std::size_t>(view.width), 0.0);
  }
  void add(TimeNs s, TimeNs e) {
    if (!out_ || e <= covered_) return;
    const TimeNs a = std::max(s, covered_);
    covered_ = e;
    const TimeNs b = std::min(e, view_.hi);
    if (b <= a) return;
    const double xa = static_cast<double>(a - view_.lo) * scale_;
    const double xb = static_cast<double>(b - view_.lo) * scale_;
    const int w = view_.width;
    const int ca = std::min(w - 1, static_cast<int>(xa));
    const int cb = std::min(w, static_cast<int>(xb));
    if (ca >= cb) {
      sums_[static_cast<std::size_t>(ca)] += xb - xa;
      return;
    }
    sums_[static_cast<std::size_t>(ca)] += static_cast<double>(ca + 1) - xa;
    for (int c = ca + 1; c < cb; ++c)
      sums_[static_cast<std::size_t>(c)] += 1.0;
    if (cb < w) sums_[static_cast<std::size_t>(cb)] += xb - static_cast<double>(cb);
  }
  bool enabled() const { return out_ != nullptr; }
  TimeNs covered() const { return covered_; }
  // Events starting at or after covered() that lie in column c, their union `union_ns` long,
  // the largest end `end`: what add() of each would give.
  void addWithinColumn(int c, TimeNs union_ns, TimeNs end) {
    if (!out_) return;
    sums_[static_cast<std::size_t>(c)] += static_cast<double>(union_ns) * scale_;
    covered_ = std::max(covered_, end);
  }
  void finish() {
    if (!out_) return;
    out_->resize(sums_.size());
    for (std::size_t c = 0; c < sums_.size(); ++c)
      (*out_)[c] = static_cast<float>(std::clamp(sums_[c], 0.0, 1.0));
  }

 private:
  std::vector<float>* out_;
  ViewWindow view_;
  double scale_;
  TimeNs covered_;
  std::vector<double> sums_;
};

}  // namespace

std::vector<DrawBox> buildDrawList(const LaneEvents& events, const ViewWindow& view,
                                   int merge_below_px, std::vector<float>* occupancy,
                                   bool use_blocks, std::size_t* blocks_taken) {
  std::vector<DrawBox> out;
  if (occupancy) occupancy->clear();
  if (view.width <= 0 || view.hi <= view.lo) return out;
  if (events.size() == 0) {
    if (occupancy) occupancy->assign(static_cast<std::size_t>(view.width), 0.0f);
    return out;
  }
  const std::size_t n = events.size();
  DrawBox run;
  StyleTotals totals;
  bool have_run = false;
  bool sorted = true;
  const double scale = static_cast<double>(view.width) / static_cast<double>(view.hi - view.lo);
  const std::uint32_t* durations = events.durationData();
  OccupancyAccumulator occ(occupancy, view, scale);
  const auto& blocks = events.blockSummaries();
  constexpr std::size_t kBlock = LaneEvents::kBlock;
  for (std::size_t i = firstEventEndingAfter(events, view.lo); i < n; ++i) {
    const TimeNs s = events.start(i);
    if (s >= view.hi) break;
    // A whole block that would join the run event by event (each passing the fast path below:
    // of the run's style, or any style while the run is one column), in one column: taken at
    // once. Its largest end lies strictly left of the run's end, so every event's end does,
    // inside the window; the part of its events beyond what earlier events covered is their
    // union when none of those reaches past the block's first start.
    if (use_blocks && have_run && i % kBlock == 0 && s >= view.lo) {
      const auto& b = blocks[i / kBlock];
      const bool joins = (b.styles == 1 && b.style == run.style) ||
                         (b.styles > 0 && run.x1 - run.x0 == 1 && totals.roomFor(2));
      if (joins) {
        const TimeNs block_end = s + static_cast<TimeNs>(b.end_offset);
        const double xe = static_cast<double>(block_end - view.lo) * scale;
        const int column = static_cast<int>(static_cast<double>(s - view.lo) * scale);
        if (xe < run.x1 &&
            (!occ.enabled() || (occ.covered() <= s && static_cast<int>(xe) == column))) {
          const std::size_t last = std::min(n, i + kBlock) - 1;
          run.count += static_cast<std::uint32_t>(last + 1 - i);
          run.busy_ns += b.busy;
          run.style = totals.add(b.style, b.busy - b.second_busy);
          if (b.styles == 2) run.style = totals.add(b.second_style, b.second_busy);
          occ.addWithinColumn(column, b.union_ns, block_end);
          if (blocks_taken) ++*blocks_taken;
          i = last;
          continue;
        }
      }
    }
    const std::uint32_t d = durations[i];
    const TimeNs e = d != LaneEvents::kLongDuration ? s + static_cast<TimeNs>(d) : events.end(i);
    occ.add(s, e);
    // Fast path (most events at a far zoom): the event lies inside the columns of the run being
    // merged (its start is not before the run's, events being sorted), so it only joins it, when
    // it has the run's style or the run is one column (where the style taking most time shows).
    if (have_run && s >= view.lo && (events.style(i) == run.style || run.x1 - run.x0 == 1)) {
      const double xe = static_cast<double>(e - view.lo) * scale;
      if (s < e ? xe <= run.x1 : xe < run.x1) {
        ++run.count;
        run.busy_ns += e - s;
        run.style = totals.add(events.style(i), e - s);
        continue;
      }
    }
    const PixelSpan px = pixelSpan(s, e, view);
    if (px.empty()) continue;
    const auto index = static_cast<std::uint32_t>(i);
    if (px.x1 - px.x0 >= merge_below_px) {
      if (!out.empty() && px.x0 < out.back().x0) sorted = false;
      out.push_back({px.x0, px.x1, events.style(i), index, 1, e - s});
      continue;
    }
    // A touching event of the run's style joins it. One of another style does not carry the run's
    // colour over columns of its own: reaching beyond the run, it starts a run (sharing at most
    // the run's last column); inside the run's last column, that column becomes a run of its own.
    // So the colours along a lane follow the events at any zoom. (In a lane whose events overlap,
    // an event inside earlier columns of the run joins it.)
    if (have_run && px.x0 <= run.x1) {
      const bool inside = px.x1 <= run.x1;
      if (events.style(i) == run.style ||
          (inside && (run.x1 - run.x0 == 1 || px.x0 < run.x1 - 1))) {
        run.x1 = std::max(run.x1, px.x1);
        ++run.count;
        run.busy_ns += e - s;
        run.style = totals.add(events.style(i), e - s);
        continue;
      }
      if (inside) --run.x1;  // px is the run's last column
    }
    if (have_run) {
      if (!out.empty() && run.x0 < out.back().x0) sorted = false;
      out.push_back(run);
    }
    run = {px.x0, px.x1, events.style(i), index, 1, e - s};
    totals.reset(events.style(i), e - s);
    have_run = true;
  }
  if (have_run) {
    if (!out.empty() && run.x0 < out.back().x0) sorted = false;
    out.push_back(run);
  }
  occ.finish();
  if (!sorted) {
    std::stable_sort(out.begin(), out.end(),
                     [](const DrawBox& a, const DrawBox& b) { return a.x0 < b.x0; });
  }
  return out;
}

const DrawBox* boxAtColumn(const std::vector<DrawBox>& boxes, int x) {
  // Boxes are sorted by x0 and at most a few overlap at one column: scan back from the last
  // box starting at or before x.
  auto it = std::upper_bound(boxes.begin(), boxes.end(), x,
                             [](int v, const DrawBox& b) { return v < b.x0; });
  const DrawBox* best = nullptr;
  for (int k = 0; it != boxes.begin() && k < 8; ++k) {
    --it;
    if (x < it->x1 && (!best || it->count < best->count)) best = &*it;
  }
  return best;
}

}  // namespace ddpscope::ui
