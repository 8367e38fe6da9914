// Collectives matched across ranks (app/analysis/collectives.h) on hand-made ranks whose skew,
// waits, transfers and exposed split are worked out in the comments.
#include "app/analysis/collectives.h"

#include <gtest/gtest.h>

#include "app/analysis/report_json.h"
#include "tests/common/trace_builder.h"

using namespace ddpscope;
using analysis::CollectiveKind;

namespace {

// Three ranks, one allreduce each on stream 40, rank 2 arriving last:
//   rank 0: allreduce [100, 400), gemm [0, 150)
//   rank 1: allreduce [200, 400), no compute
//   rank 2: allreduce [300, 400), gemm [0, 300)
// Last start 300 (rank 2), skew 200. Waits 200, 100, 0; transfers 100 each.
// Exposed: rank 0 [150, 400) = 250, of it inside its wait [100, 300): [150, 300) = 150;
// rank 1 [200, 400) = 200, wait 100; rank 2 [300, 400) = 100, wait 0.
trace::Run threeRanks() {
  trace::Run run;
  const trace::TimeNs starts[] = {100, 200, 300};
  const trace::TimeNs gemm[] = {150, 0, 300};
  for (int r = 0; r < 3; ++r) {
    ddpscope::testing::TraceBuilder b;
    b.add({"ncclDevKernel_AllReduce_Sum_f32_RING_LL", starts[r], 400 - starts[r], 40, 0,
           trace::EventKind::Kernel, trace::kNoBucket, 3, trace::kNoCorrelation, 4096});
    if (gemm[r] > 0) b.kernel("gemm", 0, gemm[r], 7);
    run.ranks.push_back(b.build());
    run.ranks.back().rank = r;
    run.ranks.back().world_size = 3;
  }
  return run;
}

}  // namespace

TEST(MatchedCollectives, SkewWaitAndTransferPerRank) {
  const auto report = analysis::analyzeRun(threeRanks());
  ASSERT_EQ(report.matched.size(), 1u);
  const auto& m = report.matched.front();
  EXPECT_EQ(m.kind, CollectiveKind::AllReduce);
  EXPECT_EQ(m.last_rank, 2);
  EXPECT_EQ(m.skew_ns, 200);
  EXPECT_EQ(m.step, 3);
  EXPECT_EQ(m.bytes, 4096);
  EXPECT_EQ(m.wait_ns, (std::vector<analysis::TimeNs>{200, 100, 0}));
  EXPECT_EQ(m.transfer_ns, (std::vector<analysis::TimeNs>{100, 100, 100}));
  EXPECT_FALSE(report.matched_by.empty());
  const analysis::TimeNs exposed[] = {250, 200, 100}, wait[] = {150, 100, 0};
  for (int r = 0; r < 3; ++r) {
    const auto& rr = report.ranks[static_cast<std::size_t>(r)];
    EXPECT_EQ(rr.whole.exposed_ns, exposed[r]) << r;
    ASSERT_TRUE(rr.exposed_wait_ns) << r;
    EXPECT_EQ(*rr.exposed_wait_ns, wait[r]) << r;
    EXPECT_EQ(*rr.exposed_transfer_ns, exposed[r] - wait[r]) << r;
  }
  const auto json = analysis::reportToJson(report);
  EXPECT_NE(json.find("\"exposed_wait_us\": 0.15, \"exposed_transfer_us\": 0.1"),
            std::string::npos);
  EXPECT_NE(json.find("\"last_rank\": 2, \"start_us\": 0.1, \"skew_us\": 0.2, \"wait_us\": "
                      "[0.2, 0.1, 0], \"transfer_us\": [0.1, 0.1, 0.1]"),
            std::string::npos)
      << json;
}

TEST(MatchedCollectives, UnequalCountsAreMatchedByOrderAndSaid) {
  auto run = threeRanks();
  // Rank 1 ran an extra all-gather the others did not: nothing to match it with.
  ddpscope::testing::TraceBuilder extra;
  run.ranks[1].tracks[0].push({500, 50, run.ranks[1].names.intern("ncclDevKernel_AllGather_RING"),
                               run.ranks[1].names.intern("kernel"), trace::EventKind::Kernel,
                               trace::kNoCorrelation, trace::kNoBucket, trace::kNoStep,
                               trace::kNoBytes});
  const auto report = analysis::analyzeRun(run);
  EXPECT_EQ(report.matched.size(), 1u);  // the allreduce only
  bool said = false;
  for (const auto& w : report.warnings)
    said = said || w.find("different numbers of all_gather kernels (0 to 1)") != std::string::npos;
  EXPECT_TRUE(said);
  // One rank alone: nothing to match, the split is unknown (null), not zero.
  trace::Run one;
  one.ranks.push_back(threeRanks().ranks[0]);
  const auto single = analysis::analyzeRun(one);
  EXPECT_TRUE(single.matched.empty());
  EXPECT_FALSE(single.ranks[0].exposed_wait_ns);
  EXPECT_NE(analysis::reportToJson(single).find("\"exposed_wait_us\": null"), std::string::npos);
}
