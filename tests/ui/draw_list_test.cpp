// The level-of-detail builder against a brute-force rasteriser: for random traces and zooms the
// drawn boxes cover exactly the pixel columns the events cover, and every event is counted once.
#include <gtest/gtest.h>

#include <random>

#include "app/ui/draw_list.h"

using namespace ddpscope::ui;

namespace {

std::vector<bool> rasterEvents(const LaneEvents& ev, const ViewWindow& w) {
  std::vector<bool> px(static_cast<std::size_t>(w.width), false);
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const PixelSpan s = pixelSpan(ev.start[i], ev.end[i], w);
    for (int x = s.x0; x < s.x1; ++x)
      px[static_cast<std::size_t>(x)] = true;
  }
  return px;
}

std::vector<bool> rasterBoxes(const std::vector<DrawBox>& boxes, int width) {
  std::vector<bool> px(static_cast<std::size_t>(width), false);
  for (const auto& b : boxes) {
    EXPECT_LT(b.x0, b.x1);
    EXPECT_GE(b.x0, 0);
    EXPECT_LE(b.x1, width);
    for (int x = b.x0; x < b.x1; ++x)
      px[static_cast<std::size_t>(x)] = true;
  }
  return px;
}

// A lane like a GPU stream (back-to-back kernels of very different lengths), or with nested and
// overlapping events (annotations, bucket rows) when `overlapping`.
LaneEvents randomLane(std::mt19937_64& rng, std::size_t n, bool overlapping) {
  LaneEvents ev;
  std::uniform_int_distribution<int> kind(0, 9);
  std::exponential_distribution<double> gap(1.0 / 2000.0);
  TimeNs t = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const int k = kind(rng);
    TimeNs dur = k < 6   ? static_cast<TimeNs>(rng() % 3000)
                 : k < 9 ? static_cast<TimeNs>(rng() % 200'000)
                         : static_cast<TimeNs>(rng() % 5'000'000);
    if (k == 0) dur = 0;
    if (overlapping && k % 3 == 0) {
      ev.add(t - static_cast<TimeNs>(rng() % 10'000), t + dur, static_cast<std::uint16_t>(k % 4),
             static_cast<std::uint32_t>(i));
    } else {
      ev.add(t, t + dur, static_cast<std::uint16_t>(k % 4), static_cast<std::uint32_t>(i));
      t += dur;
    }
    t += static_cast<TimeNs>(gap(rng));
  }
  ev.finish();
  return ev;
}

}  // namespace

TEST(UiDrawList, PixelSpanCoversTouchedColumns) {
  const ViewWindow w{1000, 2000, 100};  // 10 ns per column
  EXPECT_EQ(pixelSpan(1000, 1010, w).x0, 0);
  EXPECT_EQ(pixelSpan(1000, 1010, w).x1, 1);
  EXPECT_EQ(pixelSpan(1005, 1015, w).x1, 2);   // straddles two columns
  EXPECT_EQ(pixelSpan(1500, 1500, w).x0, 50);  // zero length: one column
  EXPECT_EQ(pixelSpan(1500, 1500, w).x1, 51);
  EXPECT_TRUE(pixelSpan(900, 1000, w).empty());   // ends at the window start
  EXPECT_TRUE(pixelSpan(2000, 2100, w).empty());  // starts at the window end
  EXPECT_EQ(pixelSpan(0, 5000, w).x0, 0);         // clipped both sides
  EXPECT_EQ(pixelSpan(0, 5000, w).x1, 100);
}

TEST(UiDrawList, WideEventsKeepTheirOwnBoxesAndNarrowOnesMerge) {
  LaneEvents ev;
  ev.add(0, 500, 0, 0);    // 50 columns
  ev.add(500, 503, 1, 1);  // three sub-pixel events touching: one box
  ev.add(504, 507, 1, 2);
  ev.add(508, 509, 2, 3);
  ev.add(700, 701, 1, 4);  // alone
  ev.finish();
  const auto boxes = buildDrawList(ev, {0, 1000, 100});
  ASSERT_EQ(boxes.size(), 3u);
  EXPECT_EQ(boxes[0].x0, 0);
  EXPECT_EQ(boxes[0].x1, 50);
  EXPECT_EQ(boxes[0].count, 1u);
  EXPECT_EQ(boxes[1].x0, 50);
  EXPECT_EQ(boxes[1].x1, 51);
  EXPECT_EQ(boxes[1].count, 3u);
  EXPECT_EQ(boxes[1].busy_ns, 7);
  EXPECT_EQ(boxes[1].style, 1);  // the longest event's style
  EXPECT_EQ(boxes[2].count, 1u);
  EXPECT_EQ(boxes[2].first, 4u);
}

TEST(UiDrawList, LongEventStartingBeforeTheWindowIsFound) {
  LaneEvents ev;
  ev.add(0, 1'000'000, 0, 0);  // spans the window
  for (int i = 0; i < 100; ++i)
    ev.add(10 + i, 11 + i, 1, 1);
  ev.finish();
  const auto boxes = buildDrawList(ev, {500'000, 600'000, 200});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].x0, 0);
  EXPECT_EQ(boxes[0].x1, 200);
}

class UiDrawListRandom : public ::testing::TestWithParam<int> {};

TEST_P(UiDrawListRandom, BoxesEqualThePixelRasterisationOfTheEvents) {
  std::mt19937_64 rng(static_cast<std::uint64_t>(GetParam()));
  const bool overlapping = GetParam() % 2 == 1;
  const LaneEvents ev = randomLane(rng, 20'000, overlapping);
  const TimeNs lo = ev.start.front(), hi = ev.max_end.back();
  for (int zoom = 0; zoom < 40; ++zoom) {
    // From the whole lane down to a few ns across the widget, at random places.
    const double frac = std::pow(10.0, -static_cast<double>(rng() % 9000) / 1000.0);
    const TimeNs width_ns =
        std::max<TimeNs>(3, static_cast<TimeNs>(static_cast<double>(hi - lo) * frac * 1.1));
    const TimeNs start =
        lo - width_ns / 20 +
        static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(std::max<TimeNs>(1, hi - lo)));
    const ViewWindow w{start, start + width_ns, 50 + static_cast<int>(rng() % 2000)};
    const auto boxes = buildDrawList(ev, w);
    EXPECT_EQ(rasterBoxes(boxes, w.width), rasterEvents(ev, w))
        << "zoom " << zoom << " [" << w.lo << ", " << w.hi << ") x " << w.width;
    // Every visible event is in exactly one box; boxes are sorted.
    std::size_t visible = 0;
    for (std::size_t i = 0; i < ev.size(); ++i)
      visible += pixelSpan(ev.start[i], ev.end[i], w).empty() ? 0 : 1;
    std::size_t counted = 0;
    for (std::size_t b = 0; b < boxes.size(); ++b) {
      counted += boxes[b].count;
      if (b > 0) {
        EXPECT_LE(boxes[b - 1].x0, boxes[b].x0);
      }
    }
    EXPECT_EQ(counted, visible);
    // Level of detail: never more boxes than about one per column and lane.
    if (!overlapping) {
      EXPECT_LE(boxes.size(), 2 * static_cast<std::size_t>(w.width) + 1);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Seeds, UiDrawListRandom, ::testing::Range(1, 9));
