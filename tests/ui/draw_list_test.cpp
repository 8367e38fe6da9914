// The level-of-detail builder against a brute-force rasteriser: for random traces and zooms the
// drawn boxes cover exactly the pixel columns the events cover, and every event is counted once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "app/ui/draw_list.h"

using namespace ddpscope::ui;

namespace {

std::vector<bool> rasterEvents(const LaneEvents& ev, const ViewWindow& w) {
  std::vector<bool> px(static_cast<std::size_t>(w.width), false);
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const PixelSpan s = pixelSpan(ev.start(i), ev.end(i), w);
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

// The style painted in each column (boxes painted in order, the last one wins), -1 where none.
std::vector<int> paintedStyles(const std::vector<DrawBox>& boxes, int width) {
  std::vector<int> px(static_cast<std::size_t>(width), -1);
  for (const auto& b : boxes)
    for (int x = std::max(0, b.x0); x < std::min(width, b.x1); ++x)
      px[static_cast<std::size_t>(x)] = b.style;
  return px;
}

// How busy each column is, by brute force: the union of the events (sorted and merged here),
// then each column's share of it, integrated in long double over the union intervals that touch
// the column.
std::vector<double> bruteOccupancy(const LaneEvents& ev, const ViewWindow& w) {
  std::vector<std::pair<TimeNs, TimeNs>> iv;
  for (std::size_t i = 0; i < ev.size(); ++i)
    if (ev.end(i) > ev.start(i)) iv.emplace_back(ev.start(i), ev.end(i));
  std::sort(iv.begin(), iv.end());
  std::vector<std::pair<TimeNs, TimeNs>> u;
  for (const auto& [s, e] : iv) {
    if (!u.empty() && s <= u.back().second) {
      u.back().second = std::max(u.back().second, e);
    } else {
      u.emplace_back(s, e);
    }
  }
  std::vector<double> out(static_cast<std::size_t>(w.width), 0.0);
  const long double col = static_cast<long double>(w.hi - w.lo) / w.width;
  for (int x = 0; x < w.width; ++x) {
    const long double c0 = static_cast<long double>(w.lo) + col * x;
    const long double c1 = c0 + col;
    long double busy = 0;
    // The merged intervals are disjoint and sorted: start at the first one ending after c0.
    auto it = std::partition_point(u.begin(), u.end(), [&](const std::pair<TimeNs, TimeNs>& p) {
      return static_cast<long double>(p.second) <= c0;
    });
    for (; it != u.end(); ++it) {
      const auto [s, e] = *it;
      const long double a = std::max<long double>(static_cast<long double>(s), c0);
      const long double b = std::min<long double>(static_cast<long double>(e), c1);
      if (b > a) busy += b - a;
      if (static_cast<long double>(s) >= c1) break;
    }
    out[static_cast<std::size_t>(x)] = static_cast<double>(busy / col);
  }
  return out;
}

// Checks the builder's occupancy against bruteOccupancy; returns the columns that differ by more
// than `tolerance` (a float's rounding over many additions).
int occupancyMismatches(const std::vector<float>& occ, const std::vector<double>& brute,
                        double tolerance = 2e-4) {
  EXPECT_EQ(occ.size(), brute.size());
  int wrong = 0;
  for (std::size_t x = 0; x < std::min(occ.size(), brute.size()); ++x)
    if (std::fabs(static_cast<double>(occ[x]) - std::min(1.0, brute[x])) > tolerance) ++wrong;
  return wrong;
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
      ev.add(t - static_cast<TimeNs>(rng() % 10'000), t + dur, static_cast<std::uint8_t>(k % 4),
             static_cast<std::uint32_t>(i));
    } else {
      ev.add(t, t + dur, static_cast<std::uint8_t>(k % 4), static_cast<std::uint32_t>(i));
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

TEST(UiDrawList, AMergedBoxShowsTheStyleTakingMostOfItsTime) {
  // One allreduce, a pixel wide: eight short hidden pieces and one longer exposed tail.
  LaneEvents ev;
  for (int k = 0; k < 8; ++k)
    ev.add(100 * k, 100 * k + 90, 1, static_cast<std::uint32_t>(k));  // 720 ns hidden
  ev.add(800, 1000, 2, 8);                                            // 200 ns exposed
  ev.finish();
  const auto boxes = buildDrawList(ev, {0, 100'000, 100});  // 1000 ns per column
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].count, 9u);
  EXPECT_EQ(boxes[0].style, 1);  // mostly hidden, though the exposed piece is the longest
}

TEST(UiDrawList, ColoursFollowTheEventsAcrossColumnsAtAFarZoom) {
  // Sub-pixel events, back to back: 30 columns of style 1, 30 of style 2, 40 of style 1 again.
  LaneEvents ev;
  std::uint32_t i = 0;
  for (TimeNs t = 0; t < 1000; t += 3, ++i) {
    const std::uint8_t style = t < 300 ? 1 : t < 600 ? 2 : 1;
    ev.add(t, std::min<TimeNs>(t + 3, t < 300 ? 300 : t < 600 ? 600 : 1000), style, i);
  }
  ev.finish();
  const ViewWindow w{0, 1000, 100};  // 10 ns per column
  const auto boxes = buildDrawList(ev, w);
  EXPECT_EQ(rasterBoxes(boxes, w.width), rasterEvents(ev, w));
  const auto painted = paintedStyles(boxes, w.width);
  for (int x = 0; x < 100; ++x)
    EXPECT_EQ(painted[static_cast<std::size_t>(x)], x < 30 || x >= 60 ? 1 : 2) << "column " << x;
  EXPECT_LE(boxes.size(), 3u);
}

TEST(UiDrawList, AMergedBoxShowsHowBusyEachColumnIs) {
  // A stream busy a quarter of the time: 100 ns kernels every 400 ns. At 10 µs a column they
  // merge into one box across the lane, and every column is a quarter busy; then 600 idle
  // columns, then a kernel filling whole columns.
  LaneEvents ev;
  std::uint32_t i = 0;
  for (TimeNs t = 0; t < 1'000'000; t += 400, ++i)
    ev.add(t, t + 100, 0, i);
  ev.add(7'000'000, 7'025'000, 0, i++);  // 2.5 columns, from a column's start
  ev.finish();
  const ViewWindow w{0, 10'000'000, 1000};  // 10 µs per column
  std::vector<float> occ;
  const auto boxes = buildDrawList(ev, w, 3, &occ);
  ASSERT_EQ(occ.size(), 1000u);
  ASSERT_EQ(boxes.size(), 2u);
  EXPECT_EQ(boxes[0].x0, 0);
  EXPECT_EQ(boxes[0].x1, 100);
  EXPECT_FALSE(drawnWhole(boxes[0]));
  for (int x = 0; x < 100; ++x)
    EXPECT_NEAR(occ[static_cast<std::size_t>(x)], 0.25, 1e-6) << "column " << x;
  for (int x = 100; x < 700; ++x)
    EXPECT_EQ(occ[static_cast<std::size_t>(x)], 0.0f) << "column " << x;
  EXPECT_FLOAT_EQ(occ[700], 1.0f);
  EXPECT_FLOAT_EQ(occ[701], 1.0f);
  EXPECT_NEAR(occ[702], 0.5, 1e-6);
  EXPECT_TRUE(drawnWhole(boxes[1]));
  EXPECT_EQ(occupancyMismatches(occ, bruteOccupancy(ev, w)), 0);
  // Overlapping events count once: a second lane of the same kernels twice over is as busy.
  LaneEvents twice;
  for (std::size_t k = 0; k < ev.size(); ++k) {
    twice.add(ev.start(k), ev.end(k), 0, static_cast<std::uint32_t>(2 * k));
    twice.add(ev.start(k) + 50, ev.end(k), 1, static_cast<std::uint32_t>(2 * k + 1));
  }
  twice.finish();
  std::vector<float> occ2;
  buildDrawList(twice, w, 3, &occ2);
  EXPECT_EQ(occupancyMismatches(occ2, bruteOccupancy(ev, w)), 0);
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
  const TimeNs lo = ev.start(0), hi = ev.maxEnd();
  for (int zoom = 0; zoom < 40; ++zoom) {
    // From the whole lane down to a few ns across the widget, at random places.
    const double frac = std::pow(10.0, -static_cast<double>(rng() % 9000) / 1000.0);
    const TimeNs width_ns =
        std::max<TimeNs>(3, static_cast<TimeNs>(static_cast<double>(hi - lo) * frac * 1.1));
    const TimeNs start =
        lo - width_ns / 20 +
        static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(std::max<TimeNs>(1, hi - lo)));
    const ViewWindow w{start, start + width_ns, 50 + static_cast<int>(rng() % 2000)};
    std::vector<float> occ;
    const auto boxes = buildDrawList(ev, w, 3, &occ);
    EXPECT_EQ(rasterBoxes(boxes, w.width), rasterEvents(ev, w))
        << "zoom " << zoom << " [" << w.lo << ", " << w.hi << ") x " << w.width;
    // Each column's occupancy is the brute-force rasteriser's; a busy column is always covered
    // by a box, and a box column without busy time holds only zero-length events.
    const auto brute = bruteOccupancy(ev, w);
    EXPECT_EQ(occupancyMismatches(occ, brute), 0)
        << "zoom " << zoom << " [" << w.lo << ", " << w.hi << ") x " << w.width;
    const auto covered = rasterBoxes(boxes, w.width);
    for (int x = 0; x < w.width; ++x) {
      if (brute[static_cast<std::size_t>(x)] > 1e-9) {
        EXPECT_TRUE(covered[static_cast<std::size_t>(x)]) << "busy column " << x << " not drawn";
      }
    }
    // On a lane of back-to-back events (a GPU stream, the overlap strip) each column shows the
    // style of an event in it: colours follow the events.
    if (!overlapping) {
      std::vector<std::uint32_t> styles_in(static_cast<std::size_t>(w.width), 0);  // bit set
      for (std::size_t i = 0; i < ev.size(); ++i) {
        const PixelSpan s = pixelSpan(ev.start(i), ev.end(i), w);
        for (int x = s.x0; x < s.x1; ++x)
          styles_in[static_cast<std::size_t>(x)] |= 1u << ev.style(i);
      }
      const auto painted = paintedStyles(boxes, w.width);
      int wrong = 0;
      for (int x = 0; x < w.width; ++x) {
        const int p = painted[static_cast<std::size_t>(x)];
        if (p >= 0 && !(styles_in[static_cast<std::size_t>(x)] & (1u << p))) ++wrong;
      }
      EXPECT_EQ(wrong, 0) << "zoom " << zoom;
    }
    // Every visible event is in exactly one box; boxes are sorted.
    std::size_t visible = 0;
    for (std::size_t i = 0; i < ev.size(); ++i)
      visible += pixelSpan(ev.start(i), ev.end(i), w).empty() ? 0 : 1;
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

// At a far zoom, whole blocks of events are taken from their summaries. On lanes made for it (long
// runs of one style, thousands of events a column, some overlapping or zero-length events, and
// style changes inside blocks, which must fall back to event by event), the boxes equal those of
// the event-by-event walk field by field, and the occupancy equals it and the brute force.
TEST(UiDrawList, WholeBlocksAtAFarZoomGiveWhatEventByEventGives) {
  std::mt19937_64 rng(11);
  // Lanes 6-8 change style at every event, as a communication stream's hidden and exposed
  // kernels do: two styles (lane 7 with equal durations, so that styles tie on time), or three.
  for (int lane = 0; lane < 9; ++lane) {
    LaneEvents ev;
    TimeNs t = 1000;
    std::uint8_t style = 0;
    for (std::uint32_t i = 0; i < 200'000; ++i) {
      if (lane >= 6) {
        style = static_cast<std::uint8_t>(1 + rng() % (lane == 8 ? 3 : 2));
      } else if (rng() % (lane < 3 ? 5000 : 300) == 0) {
        style = static_cast<std::uint8_t>(rng() % 3);
      }
      TimeNs dur = rng() % 50 == 0 ? 0 : static_cast<TimeNs>(20 + rng() % 400);
      if (lane == 7) dur = 100;
      if (lane % 2 == 1 && rng() % (lane == 5 ? 3 : 1000) == 0) {
        ev.add(t - 300, t + 5000, style, i);  // overlaps its neighbours (lane 5: most events)
      } else {
        ev.add(t, t + dur, style, i);
        t += dur;
      }
      t += static_cast<TimeNs>(rng() % (lane == 2 ? 5 : 200));
    }
    ev.finish();
    std::size_t whole = 0;
    for (const auto& b : ev.blockSummaries())
      whole += b.styles > 0 ? 1 : 0;
    if (lane == 8) {
      EXPECT_EQ(whole, 0u);
    } else {
      EXPECT_GT(whole, ev.blockSummaries().size() / 2) << "lane " << lane;
    }
    const TimeNs lo = ev.start(0), hi = ev.maxEnd();
    for (int zoom = 0; zoom < 12; ++zoom) {
      const TimeNs width_ns = (hi - lo) / (1 + zoom * 3) + 7;
      const TimeNs start = lo - 1000 + static_cast<TimeNs>(rng() % 1000) +
                           static_cast<TimeNs>(zoom) * ((hi - lo) / 20);
      const ViewWindow w{start, start + width_ns, 100 + static_cast<int>(rng() % 1700)};
      SCOPED_TRACE(::testing::Message() << "lane " << lane << " zoom " << zoom << " [" << w.lo
                                        << ", " << w.hi << ") x " << w.width);
      for (const bool with_occupancy : {true, false}) {
        std::vector<float> fast_occ, slow_occ;
        std::size_t taken = 0;
        const auto fast = buildDrawList(ev, w, 3, with_occupancy ? &fast_occ : nullptr,
                                        /*use_blocks=*/true, &taken);
        // The whole lane in view (over a hundred events a column) takes blocks whole; not lane
        // 8 (three styles in every block) and hardly lane 5 (a third of its events reach over the
        // next ones, so most blocks start inside time already covered).
        if (zoom == 0 && lane != 8 && lane != 5) {
          EXPECT_GT(taken, ev.blockSummaries().size() / 20);
        }
        if (lane == 8) {
          EXPECT_EQ(taken, 0u);
        }
        const auto slow =
            buildDrawList(ev, w, 3, with_occupancy ? &slow_occ : nullptr, /*use_blocks=*/false);
        ASSERT_EQ(fast.size(), slow.size());
        for (std::size_t k = 0; k < fast.size(); ++k) {
          ASSERT_EQ(fast[k].x0, slow[k].x0) << k;
          ASSERT_EQ(fast[k].x1, slow[k].x1) << k;
          ASSERT_EQ(fast[k].style, slow[k].style) << k;
          ASSERT_EQ(fast[k].first, slow[k].first) << k;
          ASSERT_EQ(fast[k].count, slow[k].count) << k;
          ASSERT_EQ(fast[k].busy_ns, slow[k].busy_ns) << k;
        }
        ASSERT_EQ(fast_occ.size(), slow_occ.size());
        for (std::size_t x = 0; x < fast_occ.size(); ++x)
          ASSERT_NEAR(fast_occ[x], slow_occ[x], 1e-6) << "column " << x;
        if (with_occupancy) {
          EXPECT_EQ(occupancyMismatches(fast_occ, bruteOccupancy(ev, w)), 0);
        }
      }
    }
  }
}

// The first event whose running maximum of end reaches t, by brute force.
std::size_t firstEndingAfterBrute(const LaneEvents& ev, TimeNs t) {
  TimeNs m = std::numeric_limits<TimeNs>::min();
  for (std::size_t i = 0; i < ev.size(); ++i) {
    m = std::max(m, ev.end(i));
    if (m >= t) return i;
  }
  return ev.size();
}

TEST(UiDrawList, FirstEventEndingAfterMatchesTheRunningMaximum) {
  std::mt19937_64 rng(7);
  // Sizes around the block size, and lanes with long events that hide shorter ones.
  for (const std::size_t n : {0u, 1u, 2u, 63u, 64u, 65u, 127u, 128u, 129u, 1000u, 5000u}) {
    for (const bool overlapping : {false, true}) {
      const LaneEvents ev = randomLane(rng, n, overlapping);
      ASSERT_EQ(ev.size(), n);
      ASSERT_EQ(ev.blockMaxEnd().size(), (n + LaneEvents::kBlock - 1) / LaneEvents::kBlock);
      if (n == 0) {
        EXPECT_EQ(firstEventEndingAfter(ev, 0), 0u);
        continue;
      }
      std::vector<TimeNs> probes = {std::numeric_limits<TimeNs>::min(), ev.start(0) - 1,
                                    ev.maxEnd(), ev.maxEnd() + 1,
                                    std::numeric_limits<TimeNs>::max()};
      for (std::size_t i = 0; i < n; ++i) {  // every end, and either side of it
        probes.push_back(ev.end(i) - 1);
        probes.push_back(ev.end(i));
        probes.push_back(ev.end(i) + 1);
      }
      for (int k = 0; k < 200; ++k)
        probes.push_back(
            ev.start(0) +
            static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(ev.maxEnd() - ev.start(0) + 1)));
      for (const TimeNs t : probes)
        ASSERT_EQ(firstEventEndingAfter(ev, t), firstEndingAfterBrute(ev, t))
            << "n " << n << " t " << t;
    }
  }
}

TEST(UiDrawList, DurationsThatDoNotFitIn32BitsAreKeptExactly) {
  constexpr TimeNs kFits = TimeNs{LaneEvents::kLongDuration} - 1;  // the longest stored inline
  LaneEvents ev;
  // Added out of order, so that sorting moves the long ones.
  ev.add(500, 500 + (TimeNs{1} << 62), 1, 10);  // decades
  ev.add(100, 100 + kFits, 2, 11);
  ev.add(300, 300 + kFits + 1, 3, 12);  // one past: the escape itself
  ev.add(0, 0, 0, 13);                  // zero length
  ev.add(200, 150, 4, 14);              // ends before it starts
  ev.add(400, 400 + 10'000'000'000, 5, 15);
  ev.finish();
  ASSERT_EQ(ev.size(), 6u);
  const TimeNs want_start[] = {0, 100, 200, 300, 400, 500};
  const TimeNs want_end[] = {
      0, 100 + kFits, 150, 300 + kFits + 1, 400 + 10'000'000'000, 500 + (TimeNs{1} << 62)};
  const std::uint32_t want_source[] = {13, 11, 14, 12, 15, 10};
  const std::uint8_t want_style[] = {0, 2, 4, 3, 5, 1};
  for (std::size_t i = 0; i < ev.size(); ++i) {
    EXPECT_EQ(ev.start(i), want_start[i]) << i;
    EXPECT_EQ(ev.end(i), want_end[i]) << i;
    EXPECT_EQ(ev.source(i), want_source[i]) << i;
    EXPECT_EQ(ev.style(i), want_style[i]) << i;
  }
  EXPECT_EQ(ev.longDurationCount(), 4u);
  EXPECT_EQ(ev.maxEnd(), 500 + (TimeNs{1} << 62));
  // Long events are drawn as such: the one spanning decades covers a window far away.
  const auto boxes = buildDrawList(ev, {TimeNs{1} << 40, (TimeNs{1} << 40) + 1000, 100});
  ASSERT_EQ(boxes.size(), 1u);
  EXPECT_EQ(boxes[0].first, 5u);
  EXPECT_EQ(boxes[0].x0, 0);
  EXPECT_EQ(boxes[0].x1, 100);
}

TEST(UiDrawList, StartsFarFromTheirBlocksFirstAreKeptExactly) {
  // Starts are stored as 32-bit offsets from their block's first: gaps of up to hours between
  // events put some more than 4.29 s after their block's first, kept aside. Every start, end
  // and search must give the values added (sorted here on their own).
  std::mt19937_64 rng(5);
  struct Added {
    TimeNs start, end;
    std::uint32_t source;
  };
  std::vector<Added> added;
  LaneEvents ev;
  for (std::uint32_t i = 0; i < 3000; ++i) {
    const TimeNs s = rng() % 3 == 0 ? static_cast<TimeNs>(rng() % 40'000'000'000'000)
                                    : static_cast<TimeNs>(rng() % 2'000'000'000);
    const TimeNs e = s + static_cast<TimeNs>(rng() % 1'000'000);
    added.push_back({s, e, i});
    ev.add(s, e, static_cast<std::uint8_t>(i % 3), i);
  }
  ev.finish();
  std::stable_sort(added.begin(), added.end(),
                   [](const Added& a, const Added& b) { return a.start < b.start; });
  ASSERT_EQ(ev.size(), added.size());
  EXPECT_GT(ev.farStartCount(), 100u);
  for (std::size_t i = 0; i < added.size(); ++i) {
    ASSERT_EQ(ev.start(i), added[i].start) << i;
    ASSERT_EQ(ev.end(i), added[i].end) << i;
    ASSERT_EQ(ev.source(i), added[i].source) << i;
  }
  for (int k = 0; k < 500; ++k) {
    const TimeNs t =
        k % 2 ? added[rng() % added.size()].start : static_cast<TimeNs>(rng() % 41'000'000'000'000);
    const auto want = std::lower_bound(added.begin(), added.end(), t,
                                       [](const Added& a, TimeNs v) { return a.start < v; }) -
                      added.begin();
    ASSERT_EQ(ev.firstStartingAtOrAfter(t), static_cast<std::size_t>(want)) << t;
  }
  // A second finish() changes nothing.
  ev.finish();
  EXPECT_EQ(ev.start(added.size() - 1), added.back().start);
}

TEST(UiDrawList, SourcesAreStoredOnlyWhenTheyAreNotTheIndices) {
  LaneEvents same;  // a stream lane that is its track, in order
  for (std::uint32_t i = 0; i < 100; ++i)
    same.add(10 * i, 10 * i + 5, 0, i);
  same.finish();
  EXPECT_TRUE(same.sourcesAreIndices());
  for (std::uint32_t i = 0; i < 100; ++i)
    EXPECT_EQ(same.source(i), i);

  LaneEvents split;  // a comm kernel cut into pieces: both point at event 1
  split.add(0, 10, 0, 0);
  split.add(20, 25, 1, 1);
  split.add(25, 30, 2, 1);
  split.add(40, 50, 0, 2);
  split.finish();
  EXPECT_FALSE(split.sourcesAreIndices());
  const std::uint32_t want[] = {0, 1, 1, 2};
  for (std::size_t i = 0; i < split.size(); ++i)
    EXPECT_EQ(split.source(i), want[i]);

  LaneEvents reordered;  // indices in the order added, then sorted by start
  reordered.add(30, 40, 0, 0);
  reordered.add(10, 20, 0, 1);
  reordered.add(20, 30, 0, 2);
  reordered.finish();
  EXPECT_FALSE(reordered.sourcesAreIndices());
  EXPECT_EQ(reordered.source(0), 1u);
  EXPECT_EQ(reordered.source(1), 2u);
  EXPECT_EQ(reordered.source(2), 0u);
}

TEST(UiDrawList, LongEventsEqualThePixelRasterisation) {
  // Events of seconds to hours among short ones (the 32-bit escape in the builder's loop).
  std::mt19937_64 rng(11);
  LaneEvents ev;
  TimeNs t = 0;
  for (std::uint32_t i = 0; i < 5000; ++i) {
    const TimeNs dur = rng() % 50 == 0 ? static_cast<TimeNs>(rng() % 10'000'000'000'000)
                                       : static_cast<TimeNs>(rng() % 100'000'000);
    ev.add(t, t + dur, static_cast<std::uint8_t>(i % 4), i);
    t += static_cast<TimeNs>(rng() % 200'000'000);
  }
  ev.finish();
  ASSERT_GT(ev.longDurationCount(), 50u);
  const TimeNs lo = ev.start(0), hi = ev.maxEnd();
  for (int zoom = 0; zoom < 60; ++zoom) {
    const double frac = std::pow(10.0, -static_cast<double>(rng() % 9000) / 1000.0);
    const TimeNs width_ns =
        std::max<TimeNs>(3, static_cast<TimeNs>(static_cast<double>(hi - lo) * frac));
    const TimeNs start = lo + static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(hi - lo));
    const ViewWindow w{start, start + width_ns, 50 + static_cast<int>(rng() % 2000)};
    std::vector<float> occ;
    EXPECT_EQ(rasterBoxes(buildDrawList(ev, w, 3, &occ), w.width), rasterEvents(ev, w))
        << "zoom " << zoom << " [" << w.lo << ", " << w.hi << ") x " << w.width;
    EXPECT_EQ(occupancyMismatches(occ, bruteOccupancy(ev, w)), 0) << "zoom " << zoom;
  }
}

TEST(UiDrawList, EventsWiderThanAnIntOfColumnsAreClipped) {
  // A 2 s event seen 1 ns wide across 1600 columns spans 3.2e12 columns.
  const ViewWindow w{1'000'000'000, 1'000'000'001, 1600};
  EXPECT_EQ(pixelSpan(0, 2'000'000'000, w).x0, 0);
  EXPECT_EQ(pixelSpan(0, 2'000'000'000, w).x1, 1600);
  EXPECT_EQ(pixelSpan(1'000'000'000, 2'000'000'000, w).x0, 0);
  EXPECT_EQ(pixelSpan(0, 1'000'000'000, w).x1, 0);  // ends at the window start: not drawn
}
