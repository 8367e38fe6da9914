// The figures of a window of the timeline (docs/METRICS.md "A window of the timeline") on
// hand-built ranks, each expectation worked out by hand from the intervals.
#include <gtest/gtest.h>

#include "app/analysis/analysis.h"
#include "app/analysis/statistics.h"
#include "tests/common/trace_builder.h"

using namespace ddpscope;
using ddpscope::testing::TraceBuilder;

namespace {
// Rank A: compute [50, 250) on stream 7; allreduces [0, 100) and [200, 300) on stream 40.
trace::RankTrace rankA() {
  TraceBuilder b;
  b.kernel("gemm", 50, 200).comm(0, 100).comm(200, 100);
  return b.build();
}
// Rank B: an allreduce [0, 100) and no compute.
trace::RankTrace rankB() {
  TraceBuilder b;
  b.comm(0, 100);
  return b.build();
}
}  // namespace

TEST(WindowFigures, OneRankByHand) {
  const std::vector<analysis::RankActivity> a{analysis::rankActivity(rankA())};
  // [0, 400): comm 200, hidden [50, 100) + [200, 250) = 100, busy [0, 300) = 300.
  auto f = analysis::windowFigures(a, 0, 400);
  EXPECT_EQ(f.comm_ns, 200);
  EXPECT_EQ(f.hidden_ns, 100);
  EXPECT_EQ(f.busy_ns, 300);
  ASSERT_TRUE(f.overlap_pct);
  EXPECT_DOUBLE_EQ(*f.overlap_pct, 50.0);
  EXPECT_EQ(f.exposed_ns, 100);
  ASSERT_TRUE(f.gpu_idle_pct);
  EXPECT_DOUBLE_EQ(*f.gpu_idle_pct, 25.0);  // 100 of 400 idle
  // [60, 210): comm [60, 100) + [200, 210) = 50, all of it under compute; busy all 150.
  f = analysis::windowFigures(a, 60, 210);
  EXPECT_EQ(f.comm_ns, 50);
  EXPECT_DOUBLE_EQ(*f.overlap_pct, 100.0);
  EXPECT_EQ(f.exposed_ns, 0);
  EXPECT_DOUBLE_EQ(*f.gpu_idle_pct, 0.0);
  // The status bar's overlap of a selected range is the same figure for one rank.
  EXPECT_DOUBLE_EQ(*analysis::overlapPctWithin(a[0], 60, 210), 100.0);
  // [120, 180): compute only: no communication, so no overlap % (n/a, never 0).
  f = analysis::windowFigures(a, 120, 180);
  EXPECT_FALSE(f.overlap_pct);
  EXPECT_EQ(f.exposed_ns, 0);
  EXPECT_DOUBLE_EQ(*f.gpu_idle_pct, 0.0);
  // An empty window has nothing to divide.
  f = analysis::windowFigures(a, 100, 100);
  EXPECT_FALSE(f.overlap_pct);
  EXPECT_FALSE(f.gpu_idle_pct);
}

TEST(WindowFigures, RanksPooled) {
  const std::vector<analysis::RankActivity> a{analysis::rankActivity(rankA()),
                                              analysis::rankActivity(rankB())};
  // [0, 400): comm 200 + 100, hidden 100 + 0: overlap 1/3; exposed (300 − 100) / 2 ranks = 100;
  // busy 300 + 100 of 2 × 400: idle 50 %.
  const auto f = analysis::windowFigures(a, 0, 400);
  EXPECT_EQ(f.ranks, 2u);
  EXPECT_DOUBLE_EQ(*f.overlap_pct, 100.0 / 3.0);
  EXPECT_EQ(f.exposed_ns, 100);
  EXPECT_DOUBLE_EQ(*f.gpu_idle_pct, 50.0);
  EXPECT_EQ(analysis::windowFigureText(f),
            "window 0–400 ns: overlap 33.33 %, exposed 100 ns per rank, GPU idle 50.0 %");
}

TEST(WindowFigures, TextGivesTheWindowInItsUnit) {
  analysis::WindowFigures f;
  f.lo = 1'200'000'000;
  f.hi = 1'350'000'000;
  f.ranks = 1;
  f.overlap_pct = 15.744;
  f.exposed_ns = 1'970'000;
  f.gpu_idle_pct = 75.66;
  // A 150 ms window: a tenth of it (15 ms) needs two decimals of a second.
  EXPECT_EQ(analysis::windowFigureText(f),
            "window 1.20–1.35 s: overlap 15.74 %, exposed 1.97 ms, GPU idle 75.7 %");
  // 64.070–64.100 ms: a tenth (3 µs) needs three decimals of a millisecond.
  f.lo = 64'070'000;
  f.hi = 64'100'000;
  f.overlap_pct.reset();
  EXPECT_EQ(analysis::windowFigureText(f),
            "window 64.070–64.100 ms: overlap n/a, exposed 1.97 ms, GPU idle 75.7 %");
}
