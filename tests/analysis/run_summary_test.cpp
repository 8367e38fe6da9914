// The run summary (docs/METRICS.md "Run summary") on hand-built reports whose figures are worked
// out in the comments: the step selection and its words, pooling over ranks, whole-trace runs.
#include "app/analysis/run_summary.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "app/analysis/report_json.h"
#include "app/analysis/sweep.h"

using namespace ddpscope;
using analysis::RankReport;
using analysis::RunReport;
using analysis::StepReport;

namespace {

StepReport step(std::int32_t n, analysis::TimeNs dur, analysis::TimeNs comm,
                analysis::TimeNs hidden, analysis::TimeNs busy) {
  StepReport s;
  s.step = n;
  s.dur_ns = dur;
  s.metrics.comm_ns = comm;
  s.metrics.overlap_ns = hidden;
  s.metrics.exposed_ns = comm - hidden;
  s.metrics.busy_ns = busy;
  s.compute_critical_ns = std::max<analysis::TimeNs>(0, dur - (comm - hidden));
  s.dp_efficiency = static_cast<double>(s.compute_critical_ns) / static_cast<double>(dur);
  s.allreduces = 2;
  return s;
}

RankReport rank(std::int32_t r, std::vector<StepReport> steps) {
  RankReport rr;
  rr.rank = r;
  rr.world_size = 2;
  rr.steps = std::move(steps);
  return rr;
}

}  // namespace

// Signed differences never print "-0.0", and sizes never an exponent ("1e+06 MiB").
TEST(RunSummary, SignedDifferencesAndSizesInWords) {
  EXPECT_EQ(analysis::signedText(1.234, 1), "+1.2 %");
  EXPECT_EQ(analysis::signedText(-0.004, 2), "0.00 %");
  EXPECT_EQ(analysis::signedText(0.004, 2), "0.00 %");
  EXPECT_EQ(analysis::signedText(-0.006, 2), "-0.01 %");
  EXPECT_EQ(analysis::signedText(-2.5, 1, " pts"), "-2.5 pts");
  EXPECT_EQ(analysis::mibNumberText(1e6), "1000000");
  EXPECT_EQ(analysis::mibNumberText(0.1), "0.1");
  EXPECT_EQ(analysis::mibNumberText(25), "25");
  EXPECT_EQ(analysis::mibNumberText(2.5), "2.5");
}

TEST(RunSummary, StepListsInWords) {
  EXPECT_EQ(analysis::stepListText({}), "no steps");
  EXPECT_EQ(analysis::stepListText({4}), "step 4");
  EXPECT_EQ(analysis::stepListText({5, 6}), "steps 5–6");
  EXPECT_EQ(analysis::stepListText({1, 3, 4, 5, 9}), "steps 1, 3–5 and 9");
}

TEST(RunSummary, TheFirstOfThreeOrMoreCommonStepsIsWarmUpAndPartialStepsAreNamed) {
  RunReport rep;
  rep.ranks.push_back(rank(
      0, {step(0, 10, 0, 0, 5), step(1, 10, 0, 0, 5), step(2, 10, 0, 0, 5), step(3, 10, 0, 0, 5)}));
  rep.ranks.push_back(rank(1, {step(0, 10, 0, 0, 5), step(1, 10, 0, 0, 5), step(2, 10, 0, 0, 5)}));
  const auto sel = analysis::selectSteps(rep);
  EXPECT_EQ(sel.used, (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(sel.warm_up, (std::vector<std::int32_t>{0}));
  EXPECT_EQ(sel.partial, (std::vector<std::int32_t>{3}));
  EXPECT_FALSE(sel.whole_trace);
  EXPECT_EQ(sel.rule, "steps 1–2; step 0 left out as warm-up, step 3 left out: not on every rank");

  // Two common steps: both used, and the words say why the first was kept.
  rep.ranks[0].steps.resize(2);
  rep.ranks[1].steps.resize(2);
  EXPECT_EQ(analysis::selectSteps(rep).rule, "steps 0–1 (all: too few to drop warm-up)");
  // No step markers at all.
  rep.ranks[0].steps.clear();
  rep.ranks[1].steps.clear();
  EXPECT_EQ(analysis::selectSteps(rep).rule, "no step markers: whole trace");
  EXPECT_TRUE(analysis::selectSteps(rep).whole_trace);
}

// A trace that ends inside its last step (a profiler stopped, a crash) leaves a short last step:
// it is left out and named, so that it does not pull the step time down.
TEST(RunSummary, ALastStepCutShortByTheEndOfATraceIsLeftOut) {
  auto at = [](StepReport s, analysis::TimeNs start) {
    s.start_ns = start;
    return s;
  };
  RunReport rep;
  // Rank 0: steps 0-4 of 100 ns after a 900 ns warm-up. Rank 1: the same, but its trace ends
  // 40 ns into step 4.
  for (std::int32_t r = 0; r < 2; ++r) {
    std::vector<StepReport> steps{at(step(0, 900, 0, 0, 5), 0)};
    for (std::int32_t n = 1; n <= 4; ++n)
      steps.push_back(at(step(n, r == 1 && n == 4 ? 40 : 100, 0, 0, 5), 900 + 100 * (n - 1)));
    rep.ranks.push_back(rank(r, std::move(steps)));
  }
  auto sel = analysis::selectSteps(rep);
  EXPECT_EQ(sel.used, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(sel.warm_up, (std::vector<std::int32_t>{0}));
  EXPECT_EQ(sel.cut_short, (std::vector<std::int32_t>{4}));
  EXPECT_EQ(sel.cut_short_ranks, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(sel.rule,
            "steps 1–3; step 0 left out as warm-up, step 4 left out: a short last step on rank 1 "
            "(the trace may end inside it)");
  // The step time is the slowest rank's over steps 1-3: 100, not pulled down by the 40.
  EXPECT_EQ(analysis::summarizeRun(rep).step_ns, 100);
  {
    // Cut short on every rank: said so rather than listed.
    RunReport both = rep;
    both.ranks[0].steps.back().dur_ns = 40;
    EXPECT_EQ(analysis::selectSteps(both).rule,
              "steps 1–3; step 0 left out as warm-up, step 4 left out: a short last step on every "
              "rank (the traces may end inside it)");
  }

  // Half the usual step or more is a step, not a cut (the lower median of 100, 100, 100: 100).
  rep.ranks[1].steps.back().dur_ns = 50;
  sel = analysis::selectSteps(rep);
  EXPECT_TRUE(sel.cut_short.empty());
  EXPECT_EQ(sel.used, (std::vector<std::int32_t>{1, 2, 3, 4}));
  // ... unless it reduced fewer buckets than every other step: cut in its backward pass (75 % of
  // the usual time, one allreduce of two).
  rep.ranks[1].steps.back().dur_ns = 75;
  rep.ranks[1].steps.back().allreduces = 1;
  sel = analysis::selectSteps(rep);
  EXPECT_EQ(sel.cut_short, (std::vector<std::int32_t>{4}));
  EXPECT_EQ(sel.cut_short_ranks, (std::vector<std::int32_t>{1}));
  // A warm-up step with fewer allreduces is left out of the comparison: one of two in the warm-up
  // and in the last step, two in the others: the last is still cut.
  rep.ranks[1].steps[0].allreduces = 1;
  EXPECT_EQ(analysis::selectSteps(rep).cut_short, (std::vector<std::int32_t>{4}));
  rep.ranks[1].steps[0].allreduces = 2;
  // Steps without allreduces (gradient accumulation) make the count no evidence.
  rep.ranks[1].steps[2].allreduces = 0;
  EXPECT_TRUE(analysis::selectSteps(rep).cut_short.empty());
  rep.ranks[1].steps[2].allreduces = 2;
  rep.ranks[1].steps.back().allreduces = 2;
  // Against the median of the others after the warm-up: 160, 300 and 200 (median 200, not the
  // mean 220 nor the first): 99 is cut, 100 is not.
  rep.ranks[1].steps[1].dur_ns = 160;
  rep.ranks[1].steps[2].dur_ns = 300;
  rep.ranks[1].steps[3].dur_ns = 200;
  rep.ranks[1].steps.back().dur_ns = 99;
  EXPECT_EQ(analysis::selectSteps(rep).cut_short, (std::vector<std::int32_t>{4}));
  rep.ranks[1].steps.back().dur_ns = 100;
  EXPECT_TRUE(analysis::selectSteps(rep).cut_short.empty());
  // An even count takes the lower middle one: with a sixth step, the others are 160, 300, 200,
  // 100 (lower middle 160): 79 is cut, 80 is not.
  rep.ranks[1].steps.back().dur_ns = 100;
  rep.ranks[1].steps.push_back(at(step(5, 79, 0, 0, 5), 1400));
  rep.ranks[0].steps.push_back(at(step(5, 100, 0, 0, 5), 1400));
  EXPECT_EQ(analysis::selectSteps(rep).cut_short, (std::vector<std::int32_t>{5}));
  rep.ranks[1].steps.back().dur_ns = 80;
  EXPECT_TRUE(analysis::selectSteps(rep).cut_short.empty());
  rep.ranks[0].steps.pop_back();
  rep.ranks[1].steps.pop_back();
  rep.ranks[1].steps[1].dur_ns = rep.ranks[1].steps[2].dur_ns = rep.ranks[1].steps[3].dur_ns = 100;
  // Judged against the steps after warm-up: a long first step does not make the others look cut
  // (with it, the lower median of 1000, 100, 200 would be 200, and 90 would be cut).
  rep.ranks[1].steps[0].dur_ns = 1000;
  rep.ranks[1].steps[1].dur_ns = 100;
  rep.ranks[1].steps[2].dur_ns = 200;
  rep.ranks[1].steps[3].dur_ns = 90;
  rep.ranks[1].steps.pop_back();  // steps 0-3, step 3 last
  EXPECT_TRUE(analysis::selectSteps(rep).cut_short.empty());
  // Two ranges of one step number are one step: a short second range of step 3 is not a cut.
  rep.ranks[1].steps[3].dur_ns = 100;
  rep.ranks[1].steps.push_back(at(step(3, 20, 0, 0, 5), 1300));
  EXPECT_TRUE(analysis::selectSteps(rep).cut_short.empty());
  rep.ranks[1].steps.pop_back();
  rep.ranks[0].steps.pop_back();
  // Three common steps with the last cut: the first is still the warm-up.
  RunReport three;
  three.ranks.push_back(rank(0, {at(step(0, 900, 0, 0, 5), 0), at(step(1, 100, 0, 0, 5), 900),
                                 at(step(2, 40, 0, 0, 5), 1000)}));
  sel = analysis::selectSteps(three);
  EXPECT_EQ(sel.used, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(sel.warm_up, (std::vector<std::int32_t>{0}));
  EXPECT_EQ(sel.cut_short, (std::vector<std::int32_t>{2}));
  EXPECT_EQ(analysis::summarizeRun(three).step_ns, 100);
  // With two steps nothing is judged (the first may be a long warm-up).
  rep.ranks[0].steps.resize(2);
  rep.ranks[1].steps.resize(2);
  rep.ranks[1].steps[1].dur_ns = 1;
  EXPECT_TRUE(analysis::selectSteps(rep).cut_short.empty());
  // The only common steps all cut: the whole trace is summarised, and the words say why.
  RunReport cut;
  cut.ranks.push_back(rank(0, {at(step(0, 100, 0, 0, 5), 0), at(step(1, 100, 0, 0, 5), 100),
                               at(step(2, 100, 0, 0, 5), 200), at(step(3, 10, 0, 0, 5), 300)}));
  cut.ranks.push_back(rank(1, {at(step(3, 10, 0, 0, 5), 300)}));
  sel = analysis::selectSteps(cut);
  EXPECT_TRUE(sel.whole_trace);
  EXPECT_EQ(sel.rule,
            "no whole step on every rank: whole trace; steps 0–2 left out: not on every rank, "
            "step 3 left out: a short last step on rank 0 (the trace may end inside it)");
}

TEST(RunSummary, FiguresPoolRanksAndStepsAndTheStepTimeIsTheSlowestRanks) {
  // Step 0 is warm-up (left out). Steps 1 and 2 on ranks 0 and 1:
  //   rank 0: step 1 dur 100, comm 40, hidden 10, busy 70; step 2 dur 120, comm 20, hidden 20, busy
  //   120 rank 1: step 1 dur 110, comm 60, hidden 30, busy 50; step 2 dur 100, comm 20, hidden 0,
  //   busy 90
  // step time: mean(max(100, 110), max(120, 100)) = (110 + 120) / 2 = 115
  // overlap: (10 + 20 + 30 + 0) / (40 + 20 + 60 + 20) = 60 / 140 = 42.857 %
  //   (not the mean of the ranks' own percentages, (30/60 + 30/80) / 2 = 43.75 %)
  // exposed per step: (30 + 0 + 30 + 20) / 4 = 20
  // DP efficiency: 1 − 80 / (100 + 120 + 110 + 100) = 1 − 80/430
  // GPU idle: (30 + 0 + 60 + 10) / 430
  RunReport rep;
  rep.ranks.push_back(
      rank(0, {step(0, 999, 500, 0, 1), step(1, 100, 40, 10, 70), step(2, 120, 20, 20, 120)}));
  rep.ranks.push_back(
      rank(1, {step(0, 999, 500, 0, 1), step(1, 110, 60, 30, 50), step(2, 100, 20, 0, 90)}));
  rep.completeness.world_size = 2;
  const auto s = analysis::summarizeRun(rep);
  EXPECT_EQ(s.steps_used, 2);
  EXPECT_EQ(s.step_ns, 115);
  ASSERT_TRUE(s.overlap_pct);
  EXPECT_DOUBLE_EQ(*s.overlap_pct, 100.0 * 60 / 140);
  EXPECT_EQ(s.exposed_ns_per_step, 20);
  ASSERT_TRUE(s.dp_efficiency);
  EXPECT_DOUBLE_EQ(*s.dp_efficiency, 1.0 - 80.0 / 430.0);
  ASSERT_TRUE(s.gpu_idle_pct);
  EXPECT_DOUBLE_EQ(*s.gpu_idle_pct, 100.0 * 100 / 430);
  EXPECT_DOUBLE_EQ(s.allreduces_per_step, 2);
  const auto t = analysis::runFigureText(s);
  EXPECT_EQ(t.ranks, "2 ranks");
  EXPECT_EQ(t.overlap, "42.86 %");
  EXPECT_EQ(t.exposed, "20 ns/step");
  EXPECT_EQ(t.dp_efficiency, "81.4 %");
  EXPECT_EQ(t.gpu_idle, "23.3 %");
  EXPECT_EQ(t.scope, "steps 1–2; step 0 left out as warm-up");
  // A count of allreduces: whole when the steps agree ("2", not "2.0"), else the mean's tenth.
  EXPECT_EQ(t.allreduces, "2");
  auto fractional = s;
  fractional.allreduces_per_step = 13.5;
  EXPECT_EQ(analysis::runFigureText(fractional).allreduces, "13.5");
}

// The exposed part waiting for a late rank, per step: the mean over ranks × selected steps of the
// steps' exposed wait (the warm-up step left out); none when nothing was matched. Compare gives
// it a row only then.
//   rank 0: steps 1, 2 wait 10, 20; rank 1: 30, 40 -> (10 + 20 + 30 + 40) / 4 = 25
TEST(RunSummary, ExposedWaitingForALateRankPerStep) {
  auto waited = [](StepReport st, analysis::TimeNs wait) {
    st.breakdown.exposed_wait_ns = wait;
    st.breakdown.exposed_transfer_ns = st.metrics.exposed_ns - wait;
    return st;
  };
  RunReport rep;
  rep.ranks.push_back(
      rank(0, {waited(step(0, 999, 500, 0, 1), 400), waited(step(1, 100, 40, 0, 70), 10),
               waited(step(2, 120, 40, 0, 120), 20)}));
  rep.ranks.push_back(
      rank(1, {waited(step(0, 999, 500, 0, 1), 400), waited(step(1, 110, 60, 0, 50), 30),
               waited(step(2, 100, 60, 0, 90), 40)}));
  rep.completeness.world_size = 2;
  const auto s = analysis::summarizeRun(rep);
  ASSERT_TRUE(s.exposed_wait_ns_per_step);
  EXPECT_EQ(*s.exposed_wait_ns_per_step, 25);
  EXPECT_NE(analysis::reportToJson(rep).find("\"exposed_wait_per_step_us\": 0.025"),
            std::string::npos);

  RunReport unmatched = rep;
  for (auto& r : unmatched.ranks)
    for (auto& st : r.steps)
      st.breakdown.exposed_wait_ns.reset();
  const auto u = analysis::summarizeRun(unmatched);
  EXPECT_FALSE(u.exposed_wait_ns_per_step);
  const auto row = [](const std::vector<analysis::ComparisonRow>& rows) {
    return std::find_if(rows.begin(), rows.end(), [](const analysis::ComparisonRow& r) {
      return r.metric.find("waiting for a late rank") != std::string::npos;
    });
  };
  const auto with = analysis::compareSummaries(u, s);
  ASSERT_NE(row(with), with.end());
  EXPECT_EQ(row(with)->a, "n/a");
  EXPECT_EQ(row(with)->b, "25 ns");
  const auto without = analysis::compareSummaries(u, u);
  EXPECT_EQ(row(without), without.end());
}

// A step whose exposed communication runs past its (host) range counts its whole time as
// exposed, no more: pooled DP efficiency never goes below 0 (as the per-step figure does not).
TEST(RunSummary, DpEfficiencyPoolsTheClampedCriticalPath) {
  RunReport rep;
  // step 1: dur 100, exposed 150 (critical 0); step 2: dur 100, exposed 20 (critical 80).
  rep.ranks.push_back(rank(0, {step(1, 100, 150, 0, 100), step(2, 100, 20, 0, 100)}));
  const auto s = analysis::summarizeRun(rep);
  ASSERT_TRUE(s.dp_efficiency);
  EXPECT_DOUBLE_EQ(*s.dp_efficiency, 80.0 / 200.0);  // not 1 − 170/200
}

// One rank with two ranges of the same step number still counts once for that step.
TEST(RunSummary, AStepIsOnEveryRankOnlyWhenEveryRankHasIt) {
  RunReport rep;
  rep.ranks.push_back(rank(0, {step(1, 10, 0, 0, 5), step(1, 10, 0, 0, 5), step(2, 10, 0, 0, 5)}));
  rep.ranks.push_back(rank(1, {step(2, 10, 0, 0, 5)}));
  const auto sel = analysis::selectSteps(rep);
  EXPECT_EQ(sel.used, (std::vector<std::int32_t>{2}));
  EXPECT_EQ(sel.partial, (std::vector<std::int32_t>{1}));
}

TEST(RunSummary, WithoutStepsTheWholeTraceIsSummarisedAndSaidToBe) {
  RunReport rep;
  for (int r = 0; r < 2; ++r) {
    RankReport rr = rank(r, {});
    rr.whole.comm_ns = 100 * (r + 1);  // 100, 200
    rr.whole.overlap_ns = 25 * (r + 1);
    rr.whole.exposed_ns = 75 * (r + 1);  // 75, 150
    rr.whole.idle_ns = 10;
    rr.whole.span_ns = 40;
    rep.ranks.push_back(rr);
  }
  rep.completeness.world_size = 4;
  const auto s = analysis::summarizeRun(rep);
  EXPECT_FALSE(s.hasSteps());
  EXPECT_TRUE(s.selection.whole_trace);
  EXPECT_EQ(s.step_ns, 0);
  EXPECT_DOUBLE_EQ(*s.overlap_pct, 25.0);
  EXPECT_EQ(s.exposed_ns_per_step, 112);  // (75 + 150) / 2 ranks, whole trace
  EXPECT_FALSE(s.dp_efficiency);
  EXPECT_DOUBLE_EQ(*s.gpu_idle_pct, 25.0);
  const auto t = analysis::runFigureText(s);
  EXPECT_EQ(t.ranks, "2 of 4 ranks");
  EXPECT_EQ(t.step, "n/a");
  EXPECT_EQ(t.exposed, "112 ns/rank");  // the mean per rank, not "/step"
  EXPECT_EQ(t.dp_efficiency, "n/a");
}

// The steps a report draws on their own: the median by the slowest rank's time, and the slowest
// when it is more than 5 % above it. Worked out by hand: a warm-up step 0, then steps 1-5 whose
// slowest-rank times are 12, 30, 20, 10 and 20 ms (rank 1 is the slower in steps 2 and 5).
TEST(RunSummary, TheMedianStepAndAClearlySlowerOneAreShown) {
  const analysis::TimeNs ms = 1'000'000;
  RunReport rep;
  rep.ranks.push_back(
      rank(0, {step(0, 50 * ms, 0, 0, 5), step(1, 12 * ms, 0, 0, 5), step(2, 25 * ms, 0, 0, 5),
               step(3, 20 * ms, 0, 0, 5), step(4, 10 * ms, 0, 0, 5), step(5, 19 * ms, 0, 0, 5)}));
  rep.ranks.push_back(
      rank(1, {step(0, 50 * ms, 0, 0, 5), step(1, 11 * ms, 0, 0, 5), step(2, 30 * ms, 0, 0, 5),
               step(3, 20 * ms, 0, 0, 5), step(4, 9 * ms, 0, 0, 5), step(5, 20 * ms, 0, 0, 5)}));
  auto shown = analysis::stepsToShow(rep, analysis::selectSteps(rep));
  // Sorted: 10 (4), 12 (1), 20 (3), 20 (5), 30 (2): the middle is 20 ms, step 3 before step 5.
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown[0].step, 3);
  EXPECT_EQ(shown[0].step_ns, 20 * ms);
  EXPECT_FALSE(shown[0].slowest);
  EXPECT_EQ(shown[0].caption, "Step 3, the median of the 5 steps covered (20.0 ms)");
  EXPECT_EQ(shown[1].step, 2);
  EXPECT_TRUE(shown[1].slowest);
  EXPECT_EQ(shown[1].caption,
            "Step 2, the slowest of the 5 steps covered (30.0 ms, 1.50× the median)");

  // The slowest at 5 % above the median is not shown; just above it, it is.
  rep.ranks[0].steps[2].dur_ns = 20 * ms;
  rep.ranks[1].steps[2].dur_ns = 21 * ms;
  EXPECT_EQ(analysis::stepsToShow(rep, analysis::selectSteps(rep)).size(), 1u);
  rep.ranks[1].steps[2].dur_ns = 21 * ms + 1;
  EXPECT_EQ(analysis::stepsToShow(rep, analysis::selectSteps(rep)).size(), 2u);

  // Two slowest steps of equal time: the earlier is drawn (steps 2 and 4 at 30 ms).
  rep.ranks[0].steps[2].dur_ns = 30 * ms;
  rep.ranks[1].steps[4].dur_ns = 30 * ms;
  shown = analysis::stepsToShow(rep, analysis::selectSteps(rep));
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown[1].step, 2);

  // Two steps: the faster and, if clearly slower, the other. One step: that one.
  rep.ranks[0].steps.resize(2);
  rep.ranks[1].steps.resize(2);
  shown = analysis::stepsToShow(rep, analysis::selectSteps(rep));
  ASSERT_EQ(shown.size(), 2u);
  EXPECT_EQ(shown[0].caption, "Step 1, the faster of the 2 steps covered (12.0 ms)");
  EXPECT_EQ(shown[1].caption,
            "Step 0, the slower of the 2 steps covered (50.0 ms, 4.17× the faster)");
  rep.ranks[0].steps.resize(1);
  rep.ranks[1].steps.resize(1);
  shown = analysis::stepsToShow(rep, analysis::selectSteps(rep));
  ASSERT_EQ(shown.size(), 1u);
  EXPECT_EQ(shown[0].caption, "Step 0, the one step covered (50.0 ms)");
  // No step markers: nothing to draw.
  rep.ranks[0].steps.clear();
  rep.ranks[1].steps.clear();
  EXPECT_TRUE(analysis::stepsToShow(rep, analysis::selectSteps(rep)).empty());
}

// A step's window spans its ranges on every rank: rank 1's step 5 ends last, rank 0's starts
// first.
TEST(RunSummary, AStepsWindowSpansItsRangesOnEveryRank) {
  trace::Run run;
  run.ranks.resize(2);
  run.ranks[0].steps = {{4, 100, 200}, {5, 200, 260}, {5, 300, 350}, {6, 350, 400}};
  run.ranks[1].steps = {{4, 105, 210}, {5, 210, 380}};
  using Window = std::pair<analysis::TimeNs, analysis::TimeNs>;
  EXPECT_EQ(analysis::stepWindow(run, 5), (Window{200, 380}));
  EXPECT_EQ(analysis::stepWindow(run, 4), (Window{100, 210}));
  EXPECT_EQ(analysis::stepWindow(run, 6), (Window{350, 400}));  // on rank 0 only
  EXPECT_FALSE(analysis::stepWindow(run, 7));
}

// Step times side by side: a decimal more until different values read differently.
TEST(RunSummary, DurationsSideBySideNeverReadTheSameWhenTheyDiffer) {
  EXPECT_EQ(analysis::distinctDurations({11'412'000, 11'449'000, 12'000'000}),
            (std::vector<std::string>{"11.41 ms", "11.45 ms", "12.00 ms"}));
  EXPECT_EQ(analysis::distinctDurations({11'412'000, 11'412'000, 12'000'000}),
            (std::vector<std::string>{"11.4 ms", "11.4 ms", "12.0 ms"}));  // equal stays equal
  EXPECT_EQ(analysis::distinctDurations({144'000, 145'000}),
            (std::vector<std::string>{"144 µs", "145 µs"}));
  EXPECT_EQ(analysis::distinctDurations({144'100, 144'400}),
            (std::vector<std::string>{"144.1 µs", "144.4 µs"}));
  EXPECT_EQ(analysis::formatDuration(999, 2), "999 ns");
}
