#include "app/analysis/intervals.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace ddpscope::analysis;

namespace {
// Brute force over unit cells: which ns in [0, n) are covered.
std::vector<char> cover(const IntervalSet& s, int n) {
  std::vector<char> c(static_cast<std::size_t>(n), 0);
  for (const auto& i : s) {
    for (auto t = i.start; t < i.end; ++t)
      c[static_cast<std::size_t>(t)] = 1;
  }
  return c;
}
IntervalSet randomSet(std::mt19937& rng, int n, int count) {
  std::vector<Interval> v;
  std::uniform_int_distribution<int> pos(0, n - 1), len(0, n / 8);
  for (int k = 0; k < count; ++k) {
    const int s = pos(rng);
    v.push_back({s, std::min(n, s + len(rng))});
  }
  return unionOf(v);
}
}  // namespace

TEST(Intervals, UnionMergesOverlappingAndTouchingAndDropsEmpty) {
  const auto u = unionOf({{5, 10}, {0, 3}, {3, 4}, {8, 12}, {20, 20}, {15, 16}});
  EXPECT_EQ(u, (IntervalSet{{0, 4}, {5, 12}, {15, 16}}));
  EXPECT_EQ(totalLength(u), 4 + 7 + 1);
}

TEST(Intervals, OperationsAgreeWithBruteForce) {
  std::mt19937 rng(42);
  constexpr int n = 400;
  for (int round = 0; round < 200; ++round) {
    const auto a = randomSet(rng, n, 1 + round % 13);
    const auto b = randomSet(rng, n, 1 + round % 7);
    const auto ca = cover(a, n), cb = cover(b, n);
    std::vector<char> both(n), either(n), only_a(n);
    int n_both = 0;
    for (int t = 0; t < n; ++t) {
      both[t] = ca[t] && cb[t];
      either[t] = ca[t] || cb[t];
      only_a[t] = ca[t] && !cb[t];
      n_both += both[t];
    }
    EXPECT_EQ(cover(intersect(a, b), n), both);
    EXPECT_EQ(cover(unite(a, b), n), either);
    EXPECT_EQ(cover(subtract(a, b), n), only_a);
    EXPECT_EQ(intersectionLength(a, b), n_both);
    const int lo = round % 100, hi = lo + 150;
    int within = 0;
    for (int t = lo; t < hi; ++t)
      within += ca[t];
    EXPECT_EQ(lengthWithin(a, lo, hi), within);
    EXPECT_EQ(totalLength(clip(a, lo, hi)), within);
    EXPECT_EQ(uncoveredLength(a, lo, hi), (hi - lo) - within);
  }
}

// unionOf takes input made of a few runs in start order (intervals gathered stream by stream)
// run by run, and sorts the rest: both ways give the canonical union of the cells covered.
TEST(Intervals, UnionOfRunsInStartOrderAgreesWithBruteForce) {
  // A run ends where the start goes back, even when the end goes on: a long kernel on a second
  // stream that began before the first stream's last one.
  EXPECT_EQ(unionOf({{10, 20}, {30, 40}, {5, 50}}), (IntervalSet{{5, 50}}));
  EXPECT_EQ(unionOf({{10, 20}, {30, 40}, {5, 8}, {45, 60}}),
            (IntervalSet{{5, 8}, {10, 20}, {30, 40}, {45, 60}}));
  EXPECT_TRUE(unionOf({}).empty());
  EXPECT_TRUE(unionOf({{5, 5}, {3, 1}, {9, 2}}).empty());  // empty or reversed: nothing covered
  // 16 runs merged run by run, 17 sorted: the same union either way.
  for (int runs : {16, 17}) {
    std::vector<Interval> v;
    for (int r = 0; r < runs; ++r)
      v.insert(v.end(), {{100 - 5 * r, 102 - 5 * r}, {200 + r, 201 + r}});
    IntervalSet want;
    for (int r = runs - 1; r >= 0; --r)
      want.push_back({100 - 5 * r, 102 - 5 * r});
    want.push_back({200, 201 + runs - 1});
    EXPECT_EQ(unionOf(v), want) << runs << " runs";
  }
  std::mt19937 rng(7);
  constexpr int n = 500;
  for (int round = 0; round < 300; ++round) {
    const int runs = 1 + round % 40;  // below and above the number of runs taken as they stand
    std::vector<Interval> v;
    std::uniform_int_distribution<int> pos(0, n - 1), len(-2, n / 12), count(0, 12);
    for (int r = 0; r < runs; ++r) {
      std::vector<Interval> run;
      for (int k = count(rng); k > 0; --k) {
        const int s = pos(rng);
        run.push_back({s, std::min(n, s + len(rng))});  // some empty or reversed
      }
      std::sort(run.begin(), run.end(),
                [](const Interval& a, const Interval& b) { return a.start < b.start; });
      v.insert(v.end(), run.begin(), run.end());
    }
    const auto u = unionOf(v);
    std::vector<char> c(static_cast<std::size_t>(n), 0);
    for (const auto& i : v) {
      for (auto t = i.start; t < i.end; ++t)
        c[static_cast<std::size_t>(t)] = 1;
    }
    EXPECT_EQ(cover(u, n), c) << "round " << round;
    for (std::size_t k = 0; k < u.size(); ++k) {  // canonical: sorted, apart, none empty
      EXPECT_LT(u[k].start, u[k].end) << "round " << round;
      if (k > 0) {
        EXPECT_LT(u[k - 1].end, u[k].start) << "round " << round;
      }
    }
  }
}

TEST(Intervals, UniteAllOfManySets) {
  std::vector<IntervalSet> sets = {{{0, 2}}, {{1, 5}}, {{7, 8}}, {}, {{8, 9}}};
  EXPECT_EQ(uniteAll(sets), (IntervalSet{{0, 5}, {7, 9}}));
}

TEST(Intervals, UnionLengthIsTheLengthOfTheUnionOfSortedIntervals) {
  std::mt19937 rng(11);
  for (int round = 0; round < 200; ++round) {
    const int n = 300;
    std::uniform_int_distribution<int> pos(0, n - 1), len(-3, n / 10);
    std::vector<Interval> v;
    const int count = round % 40;
    for (int k = 0; k < count; ++k) {
      const int s = pos(rng);
      v.push_back({s, std::min(n, s + len(rng))});  // some empty or reversed: cover nothing
    }
    std::stable_sort(v.begin(), v.end(),
                     [](const Interval& a, const Interval& b) { return a.start < b.start; });
    UnionLength u;
    for (const auto& i : v)
      u.add(i.start, i.end);
    // Independent: count the covered unit cells.
    std::vector<char> c(static_cast<std::size_t>(n), 0);
    for (const auto& i : v) {
      for (auto t = i.start; t < i.end; ++t)
        c[static_cast<std::size_t>(t)] = 1;
    }
    EXPECT_EQ(u.total(), std::count(c.begin(), c.end(), 1)) << "round " << round;
  }
  UnionLength none;
  EXPECT_EQ(none.total(), 0);
}
