#include "app/ui/draw_list.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace ddpscope::ui {

PixelSpan pixelSpan(TimeNs start, TimeNs end, const ViewWindow& view) {
  if (view.width <= 0 || view.hi <= view.lo) return {};
  if (start >= view.hi || end < view.lo || (end == view.lo && start < end)) return {};
  const double scale = static_cast<double>(view.width) / static_cast<double>(view.hi - view.lo);
  const double x0f = static_cast<double>(start - view.lo) * scale;
  const double x1f = static_cast<double>(end - view.lo) * scale;
  int x0 = static_cast<int>(std::floor(x0f));
  int x1 = static_cast<int>(std::ceil(x1f));
  if (x1 <= x0) x1 = x0 + 1;
  x0 = std::clamp(x0, 0, view.width);
  x1 = std::clamp(x1, 0, view.width);
  if (x1 <= x0) return {};
  return {x0, x1};
}

void LaneEvents::finish() {
  std::vector<std::uint32_t> order(start.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(),
                   [&](std::uint32_t a, std::uint32_t b) { return start[a] < start[b]; });
  auto permute = [&](auto& v) {
    auto copy = v;
    for (std::size_t i = 0; i < order.size(); ++i)
      v[i] = copy[order[i]];
  };
  permute(start);
  permute(end);
  permute(style);
  permute(source);
  max_end.resize(start.size());
  TimeNs m = std::numeric_limits<TimeNs>::min();
  for (std::size_t i = 0; i < start.size(); ++i) {
    m = std::max(m, end[i]);
    max_end[i] = m;
  }
}

std::size_t firstEventEndingAfter(const LaneEvents& events, TimeNs t) {
  return static_cast<std::size_t>(
      std::lower_bound(events.max_end.begin(), events.max_end.end(), t) - events.max_end.begin());
}

std::vector<DrawBox> buildDrawList(const LaneEvents& events, const ViewWindow& view,
                                   int merge_below_px) {
  std::vector<DrawBox> out;
  if (view.width <= 0 || view.hi <= view.lo || events.size() == 0) return out;
  const std::size_t n = events.size();
  DrawBox run;
  TimeNs run_longest = -1;
  bool have_run = false;
  bool sorted = true;
  const double scale = static_cast<double>(view.width) / static_cast<double>(view.hi - view.lo);
  const TimeNs* starts = events.start.data();
  const TimeNs* ends = events.end.data();
  for (std::size_t i = firstEventEndingAfter(events, view.lo); i < n; ++i) {
    const TimeNs s = starts[i];
    if (s >= view.hi) break;
    const TimeNs e = ends[i];
    // Fast path (most events at a far zoom): the event lies inside the columns of the run being
    // merged (its start is not before the run's, events being sorted), so it only joins it.
    if (have_run && s >= view.lo) {
      const double xe = static_cast<double>(e - view.lo) * scale;
      if (s < e ? xe <= run.x1 : xe < run.x1) {
        ++run.count;
        run.busy_ns += e - s;
        if (e - s > run_longest) {
          run_longest = e - s;
          run.style = events.style[i];
        }
        continue;
      }
    }
    const PixelSpan px = pixelSpan(s, e, view);
    if (px.empty()) continue;
    const auto index = static_cast<std::uint32_t>(i);
    if (px.x1 - px.x0 >= merge_below_px) {
      if (!out.empty() && px.x0 < out.back().x0) sorted = false;
      out.push_back({px.x0, px.x1, events.style[i], index, 1, e - s});
      continue;
    }
    if (have_run && px.x0 <= run.x1) {
      run.x1 = std::max(run.x1, px.x1);
      ++run.count;
      run.busy_ns += e - s;
      if (e - s > run_longest) {
        run_longest = e - s;
        run.style = events.style[i];
      }
      continue;
    }
    if (have_run) {
      if (!out.empty() && run.x0 < out.back().x0) sorted = false;
      out.push_back(run);
    }
    run = {px.x0, px.x1, events.style[i], index, 1, e - s};
    run_longest = e - s;
    have_run = true;
  }
  if (have_run) {
    if (!out.empty() && run.x0 < out.back().x0) sorted = false;
    out.push_back(run);
  }
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
