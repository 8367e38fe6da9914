// Buckets from our metadata: ready, wait, exposed part, bandwidths, and the dependency check.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "app/analysis/analysis.h"
#include "app/analysis/bucket_steps.h"
#include "app/analysis/design_report.h"
#include "app/analysis/report_json.h"
#include "tests/common/trace_builder.h"

using namespace ddpscope;
using ddpscope::testing::TraceBuilder;
using ddpscope::testing::twoBuckets;
using trace::EventKind;

namespace {
// twoBuckets on ranks 0 and 1 of a world of 2.
trace::Run twoRanksOfTwoBuckets() {
  trace::Run run;
  for (int rank = 0; rank < 2; ++rank) {
    auto b = twoBuckets();
    b.trace().rank = rank;
    b.trace().world_size = 2;
    run.ranks.push_back(b.build());
  }
  return run;
}
}  // namespace

TEST(Buckets, FromOurMetadata) {
  auto b = twoBuckets();
  const auto t = b.build();
  const auto r = analysis::analyzeRank(t);
  EXPECT_FALSE(r.buckets_inferred);
  ASSERT_EQ(r.buckets.size(), 2u);
  const auto& b0 = r.buckets[0];
  EXPECT_EQ(b0.id, 0);
  EXPECT_EQ(b0.step, 0);
  EXPECT_EQ(b0.bytes, 4'000'000);
  EXPECT_EQ(b0.tensors, 2);
  EXPECT_EQ(b0.ready_ns, 1'000);
  EXPECT_EQ(b0.wait_ns, 0);
  EXPECT_EQ(b0.exposed_ns, 1'000);           // 2000..3000 not covered by compute
  EXPECT_DOUBLE_EQ(*b0.algbw_gbps, 2000.0);  // 4e6 B / 2000 ns = 2000 B/ns = 2000 GB/s
  EXPECT_DOUBLE_EQ(*b0.busbw_gbps, 2000.0 * 2 * 3 / 4);
  const auto& b1 = r.buckets[1];
  EXPECT_EQ(b1.ready_ns, 2'000);
  EXPECT_EQ(b1.wait_ns, 1'000);
  EXPECT_EQ(b1.exposed_ns, 1'000 - 100);  // sgd_update of bucket 0 runs 3000..3100
  EXPECT_TRUE(r.violations.empty());
}

TEST(Buckets, MissingCommWaitIsFlagged) {
  auto b = twoBuckets(/*comm_waits=*/false, true);
  const auto t = b.build();
  const auto r = analysis::analyzeRank(t);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].kind, analysis::Violation::Kind::AllreduceBeforeReady);
  EXPECT_EQ(r.violations[0].bucket, 0);
  EXPECT_EQ(r.violations[0].at_ns, 500);
  EXPECT_EQ(r.violations[0].needed_ns, 1'000);
}

TEST(Buckets, MissingComputeWaitIsFlagged) {
  auto b = twoBuckets(true, /*compute_waits=*/false);
  const auto t = b.build();
  const auto r = analysis::analyzeRank(t);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].kind, analysis::Violation::Kind::UpdateBeforeAllreduce);
  EXPECT_EQ(r.violations[0].at_ns, 2'500);
  EXPECT_EQ(r.violations[0].needed_ns, 3'000);
}

TEST(Buckets, NextStepOverwritingTheBucketIsFlagged) {
  auto b = twoBuckets();
  b.step(1, 10'000, 10'000);
  // Step 1's backward writes bucket 1 at 3500, while step 0's allreduce of it runs until 4000.
  b.add({"gemm_bwd_fc1", 3'500, 100, 8, 0, EventKind::Kernel, 1, 1});
  b.add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 12'000, 1'000, 40, 0, EventKind::Kernel, 1, 1});
  const auto t = b.build();
  const auto r = analysis::analyzeRank(t);
  ASSERT_EQ(r.violations.size(), 1u);
  EXPECT_EQ(r.violations[0].kind, analysis::Violation::Kind::OverwriteBeforeAllreduce);
  EXPECT_EQ(r.violations[0].step, 1);
}

TEST(Stragglers, LastRankToReachEachAllreduce) {
  trace::Run run;
  for (int rank = 0; rank < 3; ++rank) {
    auto b = twoBuckets();
    b.trace().rank = rank;
    // Rank 2's backward is 700 ns slower on bucket 0.
    if (rank == 2) b.add({"gemm_bwd_fc2_extra", 1'000, 700, 9, 0, EventKind::Kernel, 0, 0});
    run.ranks.push_back(b.build());
  }
  const auto rep = analysis::analyzeRun(run);
  ASSERT_FALSE(rep.stragglers.empty());
  const auto& s = rep.stragglers[0];
  EXPECT_EQ(s.step, 0);
  EXPECT_EQ(s.bucket, 0);
  EXPECT_EQ(s.last_rank, 2);
  EXPECT_EQ(s.spread_ns, 700);
  EXPECT_EQ(s.margin_ns, 700);
  ASSERT_EQ(rep.step_spread.size(), 1u);
  EXPECT_EQ(rep.step_spread[0].min_ns, 10'000);
  // The step markers are the same on every rank: no rank is the slowest by step time, and the
  // text names the straggler from the allreduces instead.
  EXPECT_EQ(rep.step_spread[0].slowest_rank, -1);
  const auto text = analysis::reportToText(rep);
  EXPECT_NE(text.find("rank 2: 1 times, ready 700 ns after the next rank"), std::string::npos)
      << text;
  EXPECT_NE(text.find("step 0 across ranks: 10.0 µs on every rank"), std::string::npos) << text;
  EXPECT_NE(analysis::reportToJson(rep).find("\"slowest_rank\": null"), std::string::npos);
}

// A run's files are checked as a run: ranks of the declared world with no trace, and traces
// that disagree on the world size, are said in the report, its JSON and its text.
TEST(RunReport, MissingRanksAndMismatchedWorldSizesAreSaid) {
  trace::Run run;
  for (int rank : {0, 1, 3, 7}) {
    auto b = twoBuckets();
    b.trace().rank = rank;
    b.trace().world_size = 8;
    run.ranks.push_back(b.build());
  }
  auto rep = analysis::analyzeRun(run);
  EXPECT_EQ(rep.completeness.missing_ranks, (std::vector<std::int32_t>{2, 4, 5, 6}));
  ASSERT_EQ(rep.warnings.size(), 2u);
  EXPECT_EQ(rep.warnings[0],
            "only 4 of 8 ranks have a trace (missing: ranks 2, 4-6); the numbers cover only the "
            "ranks loaded");
  // A missing rank may be the late one: waiting is not told from transfer, and says so.
  EXPECT_EQ(rep.warnings[1].rfind("waiting for a late rank is not told from transfer: 4 ranks", 0),
            0u)
      << rep.warnings[1];
  for (const auto& r : rep.ranks) {
    EXPECT_FALSE(r.exposed_wait_ns.has_value());
    EXPECT_FALSE(r.exposed_transfer_ns.has_value());
  }
  EXPECT_EQ(analysis::reportToText(rep).rfind("warning: only 4 of 8 ranks", 0), 0u);
  EXPECT_NE(analysis::reportToJson(rep).find("\"missing_ranks\": [2, 4, 5, 6]"), std::string::npos);

  run.ranks[1].world_size = 2;  // a file of another run
  rep = analysis::analyzeRun(run);
  ASSERT_EQ(rep.warnings.size(), 3u);  // and the missing ranks, and the split not told
  EXPECT_NE(rep.warnings[0].find("disagree on the world size (2, 8)"), std::string::npos);
  // A size the trace did not say (read as 1, or guessed) is no disagreement.
  run.ranks[1].world_size = 1;
  run.ranks[1].world_size_declared = false;
  for (const auto& w : analysis::analyzeRun(run).warnings)
    EXPECT_EQ(w.find("disagree"), std::string::npos) << w;

  trace::Run whole;  // every rank there, one world size: nothing to say
  for (int rank : {0, 1}) {
    auto b = twoBuckets();
    b.trace().rank = rank;
    b.trace().world_size = 2;
    whole.ranks.push_back(b.build());
  }
  EXPECT_TRUE(analysis::analyzeRun(whole).warnings.empty());
  EXPECT_TRUE(analysis::analyzeRun(whole).completeness.missing_ranks.empty());
}

// Nothing to measure is said, not shown as zeros; an unknown size is n/a (null), not -1.
TEST(RunReport, NoGpuActivityAndUnknownSizesAreSaid) {
  TraceBuilder b;
  b.add({"cpu_op", 0, 100, 1, 0, EventKind::Runtime});
  const auto r = analysis::analyzeRank(b.build());
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_NE(r.warnings.back().find("no GPU activity"), std::string::npos);

  analysis::RunReport rep;
  rep.ranks.push_back(r);
  analysis::BucketReport unknown;
  unknown.bytes = -1;
  rep.ranks[0].buckets.push_back(unknown);
  rep.ranks[0].buckets_inferred = true;
  EXPECT_NE(analysis::reportToJson(rep).find("\"bytes\": null"), std::string::npos);
  const auto text = analysis::reportToText(rep);
  EXPECT_EQ(text.find("-1.000"), std::string::npos) << text;
  EXPECT_NE(text.find("n/a"), std::string::npos) << text;
}

// A stream's role: communication when it runs collectives (mixed when computation runs there
// too), else what runs there most often (a compute stream with one long copy stays compute; by
// busy time it read "copy").
TEST(RunReport, StreamRoleFollowsWhatRunsThereMostOften) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i)
    b.add({"gemm", i * 100, 50, 7, 0, EventKind::Kernel});
  b.add({"Memcpy HtoD (Pageable -> Device)", 400, 10'000, 7, 0, EventKind::Memcpy});
  b.add({"Memcpy DtoH (Device -> Pinned)", 0, 100, 20, 0, EventKind::Memcpy});
  b.add({"ncclDevKernel_AllReduce_Sum_f32", 0, 10, 40, 0, EventKind::Kernel});
  b.add({"Memcpy DtoD (Device -> Device)", 20, 500, 40, 0, EventKind::Memcpy});
  // One stream for both: ten short collectives and one gemm (a single stream, as in an Nsight
  // capture of a program that issues its NCCL calls on the compute stream).
  for (int i = 0; i < 10; ++i)
    b.add({"ncclDevKernel_AllReduce_Sum_f32", i * 100, 10, 50, 0, EventKind::Kernel});
  b.add({"gemm", 2'000, 50, 50, 0, EventKind::Kernel});
  const auto r = analysis::analyzeRank(b.build());
  std::map<std::int64_t, std::string> role;
  for (const auto& s : r.streams)
    role[s.stream] = analysis::streamRoleName(s.role);
  EXPECT_EQ(role[7], "compute");
  EXPECT_EQ(role[20], "copy");
  EXPECT_EQ(role[40], "communication");
  EXPECT_EQ(role[50], "mixed");
  EXPECT_EQ(analysis::streamRoleShortName(analysis::StreamRole::Mixed), "mixed");
  EXPECT_EQ(analysis::streamRoleShortName(analysis::StreamRole::Communication), "comm");
}

TEST(Stragglers, TheSlowestRankByStepTimeIsNamedWhicheverRankItIs) {
  // Rank 0 first, last and in the middle of the list: the slowest is named each time.
  for (const int slow : {0, 1, 2}) {
    trace::Run run;
    for (int rank = 0; rank < 3; ++rank) {
      ddpscope::testing::TraceBuilder b;
      b.trace().rank = rank;
      b.step(0, 0, rank == slow ? 12'000 : 10'000 + 100 * rank);
      b.kernel("gemm", 0, 5'000);
      run.ranks.push_back(b.build());
    }
    const auto rep = analysis::analyzeRun(run);
    ASSERT_EQ(rep.step_spread.size(), 1u);
    EXPECT_EQ(rep.step_spread[0].max_ns, 12'000) << slow;
    EXPECT_EQ(rep.step_spread[0].slowest_rank, slow);
    const auto text = analysis::reportToText(rep);
    EXPECT_EQ(text.find("on every rank"), std::string::npos) << text;
    EXPECT_NE(text.find("(rank " + std::to_string(slow) + ")"), std::string::npos) << text;
  }
}

TEST(Buckets, BusBandwidthNeedsPeers) {
  for (const std::int32_t world : {0, 1, 2, 4}) {
    auto b = twoBuckets();
    b.trace().world_size = world;  // 0: not recorded
    const auto r = analysis::analyzeRank(b.build());
    ASSERT_FALSE(r.buckets.empty());
    const auto& b0 = r.buckets[0];
    EXPECT_DOUBLE_EQ(*b0.algbw_gbps, 2000.0) << world;
    if (world < 2) {
      EXPECT_FALSE(b0.busbw_gbps.has_value()) << world;  // not "0 GB/s"
    } else {
      EXPECT_DOUBLE_EQ(*b0.busbw_gbps, 2000.0 * 2 * (world - 1) / world);
    }
  }
}

TEST(RunReport, SkippedFilesOfTheFolderAreSaid) {
  trace::Run run;
  run.ranks.push_back(twoBuckets().build());
  run.skipped_files = {"/data/run/a.json", "/data/run/b.json", "/data/run/c.json",
                       "/data/run/d.json"};
  const auto rep = analysis::analyzeRun(run);
  ASSERT_FALSE(rep.warnings.empty());
  EXPECT_EQ(rep.warnings.back(),
            "4 trace files beside the folder's rank-<r> files were not loaded (a.json, b.json, "
            "c.json and 1 more); open such a file on its own to see it");
}

TEST(RunReport, HtaCompatWithoutStepsSaysWhatItCovers) {
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 0, 5'000);
  const auto t = b.build();
  analysis::AnalysisOptions hta;
  hta.hta_compat = true;
  const auto with = analysis::analyzeRank(t, hta);
  ASSERT_FALSE(with.warnings.empty());
  EXPECT_NE(with.warnings.front().find("--hta-compat: the trace has no ProfilerStep# ranges"),
            std::string::npos);
  EXPECT_TRUE(analysis::analyzeRank(t).warnings.empty());  // only with the option
  auto stepped = twoBuckets();
  for (const auto& w : analysis::analyzeRank(stepped.build(), hta).warnings)
    EXPECT_EQ(w.find("--hta-compat"), std::string::npos) << w;  // it has a step to cut at
}

TEST(RunReport, AStepWithoutGpuWorkHasNoDpEfficiency) {
  ddpscope::testing::TraceBuilder b;
  b.step(0, 0, 10'000);
  b.step(1, 10'000, 10'000);
  b.kernel("gemm", 12'000, 5'000);  // only step 1 has GPU work
  const auto r = analysis::analyzeRank(b.build());
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_FALSE(r.steps[0].dp_efficiency.has_value());  // n/a, not 100 %
  ASSERT_TRUE(r.steps[1].dp_efficiency.has_value());
  EXPECT_DOUBLE_EQ(*r.steps[1].dp_efficiency, 1.0);  // no communication to expose
  // A trace of host events only: no breakdown of a GPU time that does not exist.
  ddpscope::testing::TraceBuilder host;
  host.step(0, 0, 10'000);
  trace::Run run;
  run.ranks.push_back(host.build());
  const auto text = analysis::reportToText(analysis::analyzeRun(run));
  EXPECT_NE(text.find("time breakdown  n/a (no GPU activity)"), std::string::npos) << text;
}

// The text report gives one row per bucket, the mean over the ranks and the run's steps (the
// Buckets tab's figures, analysis::bucketMeans), and each rank's step-by-step rows only when
// asked. Bucket 0 of twoBuckets on two ranks: 4,000,000 B, ready at 1 µs, allreduce 1–3 µs with
// its second half exposed.
TEST(Buckets, TheTextGivesOneMeanRowPerBucketAndEveryStepOnRequest) {
  const auto report = analysis::analyzeRun(twoRanksOfTwoBuckets());
  const std::string text = analysis::reportToText(report);
  EXPECT_NE(text.find("buckets: mean per bucket over the ranks and "), std::string::npos) << text;
  EXPECT_NE(text.find("  id    MiB       samples  queued     allreduce  hidden     exposed\n"
                      "  0     3.815     2        0 ns       2.00 µs    1.00 µs    1.00 µs\n"
                      "  1     "),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("  step  id    MiB"), std::string::npos) << text;
  analysis::TextOptions every;
  every.bucket_steps = true;
  const std::string all = analysis::reportToText(report, every);
  EXPECT_EQ(all.find("buckets: mean per bucket"), std::string::npos);
  EXPECT_NE(all.find("  step  id    MiB       queued     duration   exposed    busbw\n"
                     "  0     0     3.815     0 ns       2.00 µs    1.00 µs    "),
            std::string::npos)
      << all;
}

// The design report's Buckets section is one row per bucket, the means over the ranks and steps
// (a run of one allreduce per tensor gave thousands of step rows there); each step's rows of the
// first rank follow in an appendix. Bucket 0 of twoBuckets on two ranks: 2 tensors, 4,000,000 B,
// ready 1 µs after its step's start, never queued, allreduce 2 µs with its second half exposed.
TEST(Buckets, TheDesignReportGivesOneMeanRowPerBucketAndTheStepsInAnAppendix) {
  const auto report = analysis::analyzeRun(twoRanksOfTwoBuckets());
  const auto means = analysis::bucketMeans(report, analysis::selectSteps(report));
  ASSERT_EQ(means.size(), 2u);
  EXPECT_EQ(means[0].tensors, 2);
  EXPECT_DOUBLE_EQ(means[0].ready_ns, 1'000);
  EXPECT_DOUBLE_EQ(means[1].ready_ns, 2'000);
  analysis::DesignReportInput in;
  in.report = &report;
  const auto md = analysis::designReportMarkdown(in);
  const auto buckets = md.find("## Buckets\n"), appendix = md.find("## Appendix: buckets step by");
  ASSERT_NE(buckets, std::string::npos);
  ASSERT_NE(appendix, std::string::npos);
  EXPECT_LT(buckets, appendix);
  const auto row0 = md.find("| 0 | 2 | 3.81 | 2 | 1.00 µs | 0 ns | 2.00 µs | 1.00 µs | 1.00 µs |");
  EXPECT_GT(row0, buckets) << md;
  EXPECT_LT(row0, appendix) << md;
  // The appendix: step, bucket, tensors, MiB, ready, ... of rank 0 alone (one row per bucket).
  EXPECT_NE(md.find("| 0 | 0 | 2 | 3.81 | 1.00 µs | 0 ns | 2.00 µs | 1.00 µs |", appendix),
            std::string::npos)
      << md.substr(appendix);
  const auto html = analysis::designReportHtml(in);
  EXPECT_NE(html.find("<details><summary>Rank 0, every bucket"), std::string::npos) << html;
}

// Steps whose figures print the same are one row of a rank's step table ("0–2") and one line
// across ranks ("steps 0–2 across ranks"); a step that differs breaks the run and has its own.
TEST(RunReport, IdenticalStepsAreFoldedIntoOneRowAndADifferentOneIsNot) {
  trace::Run run;
  for (int rank = 0; rank < 2; ++rank) {
    ddpscope::testing::TraceBuilder b;
    b.trace().rank = rank;
    b.trace().world_size = 2;
    for (int step = 0; step < 4; ++step) {
      const std::int64_t at = step * 10'000;
      const std::int64_t len = step == 3 ? 12'000 : 10'000;  // step 3 is longer on every rank
      b.step(step, at, len);
      b.kernel("gemm", at + 1'000, 5'000);
    }
    run.ranks.push_back(b.build());
  }
  const std::string text = analysis::reportToText(analysis::analyzeRun(run));
  EXPECT_NE(text.find("\n  0–2       10.0 µs  "), std::string::npos) << text;
  EXPECT_NE(text.find("\n  3         12.0 µs  "), std::string::npos) << text;
  EXPECT_EQ(text.find("\n  1         "), std::string::npos) << text;
  EXPECT_NE(text.find("steps 0–2 across ranks: 10.0 µs on every rank\n"
                      "step 3 across ranks: 12.0 µs on every rank\n"),
            std::string::npos)
      << text;
}

// A step whose time differs across ranks by less than the usual three digits show: its min and
// max get the digits that tell them apart, never "min 10.0 µs, max 10.0 µs".
TEST(RunReport, AStepsMinAndMaxAcrossRanksNeverReadTheSame) {
  trace::Run run;
  for (int rank = 0; rank < 2; ++rank) {
    ddpscope::testing::TraceBuilder b;
    b.trace().rank = rank;
    b.trace().world_size = 2;
    b.step(0, 0, rank == 0 ? 10'000 : 10'020);
    b.kernel("gemm", 1'000, 5'000);
    run.ranks.push_back(b.build());
  }
  const std::string text = analysis::reportToText(analysis::analyzeRun(run));
  EXPECT_NE(text.find("step 0 across ranks: min 10.00 µs, max 10.02 µs (rank 1)\n"),
            std::string::npos)
      << text;
}
