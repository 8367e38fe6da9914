// The step breakdown (app/analysis/step_breakdown.h, docs/METRICS.md "Step breakdown") on
// hand-made traces whose parts are worked out in the comments, and on the ResNet-50 reference.
#include "app/analysis/step_breakdown.h"

#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"
#include "tests/common/kineto_reference.h"
#include "tests/common/trace_builder.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;
using analysis::TimeNs;
using ddpscope::testing::TraceBuilder;
using trace::EventKind;

namespace {

TimeNs partsSum(const analysis::StepBreakdown& b) {
  return b.compute_ns + b.hidden_comm_ns + b.exposed_comm_ns + b.memory_ns + b.other_ns + b.idle_ns;
}

// A launch on the host thread: a runtime call with a correlation id.
void launch(TraceBuilder& b, TimeNs at, std::int64_t correlation) {
  b.add({"cudaLaunchKernel", at, 10, 1, 0, EventKind::Runtime, trace::kNoBucket, trace::kNoStep,
         correlation});
}

// Step 0 = [0, 10000). GPU work, each launched at the time given:
//   gemm     [1000, 3000) compute  (launched at 0)     -> compute only [1000, 2000) = 1000
//   allreduce [2000, 5000) comm     (launched at 1500)  -> hidden [2000, 3000) = 1000,
//                                                          exposed [3000, 5000) = 2000
//   memset   [2500, 2700) memory under the gemm (launched at 2400): in no part of its own
//   memcpy   [5000, 6000) memory   (launched at 4000)  -> memory 1000
//   Stream Wait Event [6000, 6500) an other-class kernel (no launch) -> other 500
//   a cuda_sync record [9200, 9600): the host waiting, not GPU work -> still idle
// Busy 5500, so idle = 10000 − 5500 = 4500: [0, 1000) and [6500, 10000).
// Pending launches: [0, 1000) (the gemm's), [1500, 2000), [2400, 2500), [4000, 5000).
// Data loader ranges: [0, 800) (inside the pending gemm launch: counted as pending) and
// [7000, 9000). So the idle splits into pending 1000, data loader 2000, host-bound 1500.
trace::RankTrace oneStep() {
  TraceBuilder b;
  b.step(0, 0, 10'000);
  b.add({"gemm", 1'000, 2'000, 7, 0, EventKind::Kernel, trace::kNoBucket, trace::kNoStep, 1});
  b.add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 2'000, 3'000, 40, 0, EventKind::Kernel,
         trace::kNoBucket, trace::kNoStep, 2});
  b.add({"Memset (Device)", 2'500, 200, 8, 0, EventKind::Memset, trace::kNoBucket, trace::kNoStep,
         3});
  b.add(
      {"Memcpy HtoD", 5'000, 1'000, 8, 0, EventKind::Memcpy, trace::kNoBucket, trace::kNoStep, 4});
  b.add({"Stream Wait Event", 6'000, 500, 9, 0, EventKind::Kernel});
  b.add({"Context Sync", 9'200, 400, 9, 0, EventKind::Sync});
  launch(b, 0, 1);
  launch(b, 1'500, 2);
  launch(b, 2'400, 3);
  launch(b, 4'000, 4);
  b.add({"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 800, 1, 0,
         EventKind::UserAnnotation});
  b.add({"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 7'000, 2'000, 1, 0,
         EventKind::UserAnnotation});
  return b.build();
}

}  // namespace

TEST(StepBreakdown, PartsOfAHandMadeStep) {
  const auto r = analysis::analyzeRank(oneStep());
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& st = r.steps[0];
  const auto& b = st.breakdown;
  EXPECT_EQ(b.compute_ns, 1'000);
  EXPECT_EQ(b.hidden_comm_ns, 1'000);
  EXPECT_EQ(b.exposed_comm_ns, 2'000);
  EXPECT_EQ(b.memory_ns, 1'000);
  EXPECT_EQ(b.other_ns, 500);
  EXPECT_EQ(b.idle_ns, 4'500);
  EXPECT_EQ(b.outside_ns, 0);
  EXPECT_EQ(partsSum(b), st.dur_ns);
  // The parts agree with the step's own figures.
  EXPECT_EQ(b.hidden_comm_ns, st.metrics.overlap_ns);
  EXPECT_EQ(b.exposed_comm_ns, st.metrics.exposed_ns);
  EXPECT_EQ(b.idle_ns, analysis::stepIdleNs(st));
  ASSERT_TRUE(b.idle_launch_pending_ns && b.idle_data_loader_ns && b.idle_host_bound_ns);
  EXPECT_EQ(*b.idle_launch_pending_ns, 1'000);
  EXPECT_EQ(*b.idle_data_loader_ns, 2'000);
  EXPECT_EQ(*b.idle_host_bound_ns, 1'500);
  // One rank: nothing matched, so no exposed split.
  EXPECT_FALSE(b.exposed_wait_ns);
  EXPECT_FALSE(b.exposed_transfer_ns);
}

TEST(StepBreakdown, WithoutHostLaunchesTheIdleIsNotSplit) {
  TraceBuilder b;
  b.step(2, 0, 1'000);
  b.add({"gemm", 100, 300, 7, 0, EventKind::Kernel, trace::kNoBucket, 2});
  const auto r = analysis::analyzeRank(b.build());
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& p = r.steps[0].breakdown;
  EXPECT_EQ(p.compute_ns, 300);
  EXPECT_EQ(p.idle_ns, 700);
  EXPECT_FALSE(p.idle_launch_pending_ns);
  EXPECT_FALSE(p.idle_data_loader_ns);
  EXPECT_FALSE(p.idle_host_bound_ns);
}

// Step 0 = [0, 1000), step 1 = [1000, 2000). A gemm launched at 500 (step 0) runs [800, 1300):
// step 0 keeps [800, 1000) = 200 of it, 300 ran outside its range; step 1 owns no GPU work, so
// all of its 1000 is idle (the gemm is step 0's work), the gemm's pending launch [500, 800)
// falls in step 0's idle, and the rest of step 1 is host-bound.
TEST(StepBreakdown, WorkRunningPastItsStepIsClippedAndCounted) {
  TraceBuilder b;
  b.step(0, 0, 1'000).step(1, 1'000, 1'000);
  b.add({"gemm", 800, 500, 7, 0, EventKind::Kernel, trace::kNoBucket, trace::kNoStep, 10});
  launch(b, 500, 10);
  const auto r = analysis::analyzeRank(b.build());
  ASSERT_EQ(r.steps.size(), 2u);
  const auto& s0 = r.steps[0].breakdown;
  EXPECT_EQ(s0.compute_ns, 200);
  EXPECT_EQ(s0.outside_ns, 300);
  EXPECT_EQ(s0.idle_ns, 800);
  EXPECT_EQ(*s0.idle_launch_pending_ns, 300);
  EXPECT_EQ(*s0.idle_host_bound_ns, 500);
  EXPECT_EQ(partsSum(s0), 1'000);
  const auto& s1 = r.steps[1].breakdown;
  EXPECT_EQ(s1.compute_ns, 0);
  EXPECT_EQ(s1.idle_ns, 1'000);
  EXPECT_EQ(*s1.idle_host_bound_ns, 1'000);
  EXPECT_EQ(partsSum(s1), 1'000);
}

// Three ranks, step 3 = [0, 1000) on each, one allreduce each on stream 40, rank 2 last:
//   rank 0: allreduce [100, 400), gemm [0, 150): exposed [150, 400) = 250, its wait for rank 2
//           is [100, 300), so 150 of the exposed part waited and 100 transferred;
//   rank 1: allreduce [200, 400), no compute: exposed 200, wait [200, 300) = 100, transfer 100;
//   rank 2: allreduce [300, 400), gemm [0, 300): exposed 100, no wait, transfer 100.
TEST(StepBreakdown, ExposedSplitsIntoWaitingAndTransferWhenMatched) {
  trace::Run run;
  const TimeNs starts[] = {100, 200, 300};
  const TimeNs gemm[] = {150, 0, 300};
  for (int r = 0; r < 3; ++r) {
    TraceBuilder b;
    b.step(3, 0, 1'000);
    b.add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", starts[r], 400 - starts[r], 40, 0,
           EventKind::Kernel, trace::kNoBucket, 3, trace::kNoCorrelation, 4096});
    if (gemm[r] > 0) b.add({"gemm", 0, gemm[r], 7, 0, EventKind::Kernel, trace::kNoBucket, 3});
    run.ranks.push_back(b.build());
    run.ranks.back().rank = r;
    run.ranks.back().world_size = 3;
  }
  std::vector<analysis::RankActivity> activities;
  const auto report = analysis::analyzeRun(run, {}, &activities);
  // The steps' unions served the split only: analyzeRun frees them; analyzeRank keeps them for
  // a caller that splits itself.
  ASSERT_EQ(activities.size(), 3u);
  for (const auto& a : activities) {
    EXPECT_TRUE(a.steps.empty());
    EXPECT_EQ(a.steps.capacity(), 0u);
  }
  analysis::RankActivity one;
  analysis::analyzeRank(run.ranks[0], {}, &one);
  EXPECT_EQ(one.steps.size(), 1u);
  const TimeNs exposed[] = {250, 200, 100}, wait[] = {150, 100, 0};
  for (std::size_t r = 0; r < 3; ++r) {
    ASSERT_EQ(report.ranks[r].steps.size(), 1u);
    const auto& b = report.ranks[r].steps[0].breakdown;
    EXPECT_EQ(b.exposed_comm_ns, exposed[r]) << r;
    ASSERT_TRUE(b.exposed_wait_ns && b.exposed_transfer_ns) << r;
    EXPECT_EQ(*b.exposed_wait_ns, wait[r]) << r;
    EXPECT_EQ(*b.exposed_transfer_ns, exposed[r] - wait[r]) << r;
    EXPECT_EQ(partsSum(b), 1'000) << r;
  }
  // The Steps tab's rows: the mean over the ranks ((250 + 200 + 100) / 3 = 183 ns exposed, of
  // it (150 + 100 + 0) / 3 = 83 ns waiting), or one rank's own.
  const auto rows = analysis::stepBreakdownRows(report);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].step, 3);
  EXPECT_EQ(rows[0].ranks, 3);
  EXPECT_EQ(rows[0].step_ns, 1'000);
  EXPECT_EQ(rows[0].parts.exposed_comm_ns, 183);
  EXPECT_EQ(*rows[0].parts.exposed_wait_ns, 83);
  const auto rank1 = analysis::stepBreakdownRows(report, 1);
  ASSERT_EQ(rank1.size(), 1u);
  EXPECT_EQ(rank1[0].ranks, 1);
  EXPECT_EQ(rank1[0].parts.exposed_comm_ns, 200);
  EXPECT_EQ(*rank1[0].parts.exposed_wait_ns, 100);
  const auto json = analysis::reportToJson(report);
  EXPECT_NE(json.find("\"breakdown\": {\"compute_us\": 0.1, \"hidden_comm_us\": 0.05, "
                      "\"exposed_comm_us\": 0.25, \"exposed_wait_us\": 0.15, "
                      "\"exposed_transfer_us\": 0.1"),
            std::string::npos)
      << json;
}

TEST(StepBreakdown, DataLoaderRangeIsTheEnumerateRange) {
  EXPECT_TRUE(analysis::isDataLoaderRange("enumerate(DataLoader)"));
  EXPECT_TRUE(
      analysis::isDataLoaderRange("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"));
  EXPECT_FALSE(analysis::isDataLoaderRange("_SingleProcessDataLoaderIter.__next__"));
  EXPECT_FALSE(analysis::isDataLoaderRange("DataLoader"));
  EXPECT_FALSE(analysis::isDataLoaderRange("build_dataloader"));
  EXPECT_FALSE(analysis::isDataLoaderRange("x enumerate(DataLoader)"));
  EXPECT_FALSE(analysis::isDataLoaderRange(""));
  // Step [0, 1000): a gemm [0, 100) launched at 0 (nothing pending), then idle 900 ns; a loader
  // iterator range [200, 300) is not a data loader range, enumerate(DataLoader) [500, 700) is.
  // So the idle splits into data loader 200 and host-bound 700.
  TraceBuilder b;
  b.step(1, 0, 1'000);
  b.add({"gemm", 0, 100, 7, 0, EventKind::Kernel, trace::kNoBucket, trace::kNoStep, 5});
  launch(b, 0, 5);
  b.add({"_SingleProcessDataLoaderIter.__next__", 200, 100, 1, 0, EventKind::UserAnnotation});
  b.add({"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 500, 200, 1, 0,
         EventKind::UserAnnotation});
  const auto r = analysis::analyzeRank(b.build());
  ASSERT_EQ(r.steps.size(), 1u);
  const auto& p = r.steps[0].breakdown;
  EXPECT_EQ(p.idle_ns, 900);
  ASSERT_TRUE(p.idle_launch_pending_ns && p.idle_data_loader_ns && p.idle_host_bound_ns);
  EXPECT_EQ(*p.idle_launch_pending_ns, 0);
  EXPECT_EQ(*p.idle_data_loader_ns, 200);
  EXPECT_EQ(*p.idle_host_bound_ns, 700);
}

// Two ranks with host launches: step 1 = [0, 10000), a gemm [0, 1000) launched at 0; the
// rest of each step is idle with no launch pending (host-bound): 90 % idle, all host-bound.
// Below 20 % idle there is no reading.
TEST(StepBreakdown, IdleReadingNamesWhatMostOfTheIdleTimeWas) {
  const auto runWith = [](TimeNs step_ns) {
    trace::Run run;
    for (int r = 0; r < 2; ++r) {
      TraceBuilder b;
      b.step(1, 0, step_ns);
      b.add({"gemm", 0, 1'000, 7, 0, EventKind::Kernel, trace::kNoBucket, trace::kNoStep, 5});
      launch(b, 0, 5);
      run.ranks.push_back(b.build());
      run.ranks.back().rank = r;
      run.ranks.back().world_size = 2;
    }
    return analysis::analyzeRun(run);
  };
  const auto idle = runWith(10'000);
  const auto summary = analysis::summarizeRun(idle);
  const auto totals = analysis::breakdownTotals(idle, summary.selection);
  EXPECT_EQ(totals.steps, 2);
  EXPECT_EQ(totals.step_ns, 20'000);
  EXPECT_EQ(totals.parts.idle_ns, 18'000);
  EXPECT_EQ(*totals.parts.idle_host_bound_ns, 18'000);
  EXPECT_EQ(analysis::idleReading(idle, summary),
            "GPU idle 90.0 %: mostly host-bound (no launch pending)");
  const auto busy = runWith(1'100);  // idle 100 of 1100: 9.1 %
  EXPECT_EQ(analysis::idleReading(busy, analysis::summarizeRun(busy)), "");
}

namespace {
// The ResNet-50 reference figures a report must give (the test below).
void checkResnet50Breakdown(const analysis::RankReport& r) {
  namespace ref = ddpscope::testing::kineto_reference;
  // Idle time and its part with a launch pending, per step, computed from the file's text with
  // exact decimal arithmetic by a separate script (step ranges, launches by correlation, the
  // union of [launch start, GPU start)), not by ddpscope.
  constexpr TimeNs kIdle[] = {173003270, 169997979, 166604076};
  constexpr TimeNs kPending[] = {10553622, 10437689, 10175058};
  ASSERT_EQ(r.steps.size(), std::size(ref::kSteps));
  for (std::size_t i = 0; i < r.steps.size(); ++i) {
    const auto& st = r.steps[i];
    const auto& b = st.breakdown;
    EXPECT_EQ(st.dur_ns, ref::kSteps[i].dur_ns);
    EXPECT_EQ(partsSum(b), ref::kSteps[i].dur_ns) << st.step;
    EXPECT_EQ(b.outside_ns, 0) << st.step;  // every kernel ends inside the step it was launched in
    EXPECT_EQ(b.idle_ns, analysis::stepIdleNs(st)) << st.step;
    EXPECT_EQ(b.hidden_comm_ns, ref::kSteps[i].overlap_ns) << st.step;
    EXPECT_EQ(b.exposed_comm_ns, ref::kSteps[i].exposed_ns) << st.step;
    ASSERT_TRUE(b.idle_launch_pending_ns && b.idle_data_loader_ns && b.idle_host_bound_ns);
    EXPECT_EQ(*b.idle_data_loader_ns, 0);  // the trace has no data-loader ranges
    EXPECT_EQ(b.idle_ns, kIdle[i]) << st.step;
    EXPECT_EQ(*b.idle_launch_pending_ns, kPending[i]) << st.step;
    EXPECT_EQ(*b.idle_launch_pending_ns + *b.idle_data_loader_ns + *b.idle_host_bound_ns,
              b.idle_ns);
  }
}
}  // namespace

// The ResNet-50 reference: per step the parts sum to the step time, the idle part is the step's
// GPU idle time, and the communication parts are the reference's hidden and exposed figures.
// On one thread, and with the host side worked out on a second one beside the GPU unions.
TEST(StepBreakdown, Resnet50PartsSumToTheStepTime) {
  const auto t =
      trace::readTraceFile(std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz");
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(threads) + " thread(s)");
    analysis::AnalysisOptions options;
    options.threads = threads;
    checkResnet50Breakdown(analysis::analyzeRank(t, options));
  }
}

// Launch times against a map filled in track order (the first call carrying an id is its launch),
// looked up in increasing order with a hint, in decreasing order, and without.
TEST(LaunchTimes, FirstCallInTrackOrderBeforeTheCut) {
  std::mt19937 rng(5);
  for (int round = 0; round < 50; ++round) {
    trace::RankTrace rank;
    std::uniform_int_distribution<std::int64_t> id(0, 60), start(0, 1000);
    for (std::int64_t tid : {1, 2, 3}) {
      const auto ti = rank.trackIndex(trace::TrackKind::Host, 100, tid);
      const int n = round % 7 == 0 ? 0 : 30;
      for (int k = 0; k < n; ++k) {
        // Thread 1 launches in increasing id order (sorted input), the others at random.
        const std::int64_t c = tid == 1 ? k * 2 : id(rng);
        const auto kind = k % 5 == 0 ? trace::EventKind::CpuOp
                          : k % 2    ? trace::EventKind::Runtime
                                     : trace::EventKind::Driver;
        rank.tracks[static_cast<std::size_t>(ti)].push(
            {start(rng), 5, rank.names.intern("call"), rank.names.intern("cuda_runtime"), kind,
             k % 11 == 0 ? trace::kNoCorrelation : c, trace::kNoBucket, trace::kNoStep,
             trace::kNoBytes});
      }
    }
    const trace::TimeNs cut = round % 2 ? 600 : std::numeric_limits<trace::TimeNs>::max();
    std::map<std::int64_t, trace::TimeNs> expected;
    for (const auto& t : rank.tracks) {
      for (std::size_t i = 0; i < t.size(); ++i) {
        const bool launch =
            t.kind_of[i] == trace::EventKind::Runtime || t.kind_of[i] == trace::EventKind::Driver;
        if (launch && t.correlation[i] != trace::kNoCorrelation && t.start[i] < cut)
          expected.emplace(t.correlation[i], t.start[i]);
      }
    }
    const analysis::LaunchTimes times(rank, cut);
    EXPECT_EQ(times.size(), expected.size());
    EXPECT_EQ(times.empty(), expected.empty());
    std::size_t up = 0, down = 0;
    for (std::int64_t c = -2; c <= 130; ++c) {
      const auto it = expected.find(c);
      const trace::TimeNs* found = times.find(c, &up);
      const trace::TimeNs* plain = times.find(c);
      const trace::TimeNs* back = times.find(128 - c, &down);
      const auto back_it = expected.find(128 - c);
      ASSERT_EQ(found != nullptr, it != expected.end()) << "id " << c;
      ASSERT_EQ(plain != nullptr, it != expected.end()) << "id " << c;
      ASSERT_EQ(back != nullptr, back_it != expected.end()) << "id " << 128 - c;
      if (found) {
        EXPECT_EQ(*found, it->second);
        EXPECT_EQ(*plain, it->second);
      }
      if (back) {
        EXPECT_EQ(*back, back_it->second);
      }
    }
  }
}
