// Collectives matched across ranks (app/analysis/collectives.h) on hand-made ranks whose skew,
// waits, transfers and exposed split are worked out in the comments.
#include "app/analysis/collectives.h"

#include <gtest/gtest.h>

#include <array>

#include "app/analysis/report_json.h"
#include "app/analysis/stragglers.h"
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
// `gemm`: each rank's gemm end (0: none), the example above by default.
trace::Run threeRanks(std::array<trace::TimeNs, 3> gemm = {150, 0, 300}) {
  trace::Run run;
  const trace::TimeNs starts[] = {100, 200, 300};
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

namespace {

// A communication kernel with the collective arguments PyTorch's profiler writes on it.
void collective(ddpscope::testing::TraceBuilder& b, const std::string& name, trace::TimeNs start,
                trace::TimeNs dur, std::int64_t stream, std::int64_t correlation,
                const std::string& group, std::int64_t seq, std::int32_t group_size = -1,
                std::int64_t bytes = 1024) {
  b.add({name, start, dur, stream, 0, trace::EventKind::Kernel, trace::kNoBucket, trace::kNoStep,
         correlation, bytes});
  trace::CollectiveArgs a;
  a.correlation = correlation;
  a.group = group;
  a.seq = seq;
  a.group_size = group_size;
  b.trace().collective_args.push_back(a);
}

}  // namespace

// By sequence number: rank 1's trace starts after its first allreduce (seq 0), so by order its
// first kernel would be matched with rank 0's first; by number, seq 1 meets seq 1. A second
// group holds ranks 0 and 1 only: rank 2 takes no part in its collective.
TEST(MatchedCollectives, BySequenceNumberWithinTheProcessGroup) {
  trace::Run run;
  const char* ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  const char* ag = "ncclDevKernel_AllGather_RING_LL";
  for (int r = 0; r < 3; ++r) {
    ddpscope::testing::TraceBuilder b;
    if (r != 1) collective(b, ar, 100, 100, 40, 1, "0", 0);
    collective(b, ar, 1000 + 10 * r, 100 - 10 * r, 40, 2, "0", 1);
    if (r != 2) collective(b, ag, 2000 + 50 * r, 200 - 50 * r, 41, 3, "tp", 0);
    run.ranks.push_back(b.build());
    run.ranks.back().rank = r;
    run.ranks.back().world_size = 3;
  }
  const auto report = analysis::analyzeRun(run);
  EXPECT_EQ(report.matched_by, "process group and sequence number");
  ASSERT_EQ(report.matched.size(), 2u);
  const auto& m = report.matched[0];  // the allreduce of seq 1
  EXPECT_EQ(m.kind, CollectiveKind::AllReduce);
  EXPECT_EQ(m.group, "0");
  EXPECT_EQ(m.seq, 1);
  EXPECT_EQ(m.last_rank, 2);
  EXPECT_EQ(m.skew_ns, 20);
  EXPECT_EQ(m.wait_ns, (std::vector<analysis::TimeNs>{20, 10, 0}));
  EXPECT_EQ(m.transfer_ns, (std::vector<analysis::TimeNs>{80, 80, 80}));
  const auto& g = report.matched[1];  // the all-gather of group "tp": ranks 0 and 1
  EXPECT_EQ(g.kind, CollectiveKind::AllGather);
  EXPECT_EQ(g.group, "tp");
  EXPECT_TRUE(g.involves(0));
  EXPECT_TRUE(g.involves(1));
  EXPECT_FALSE(g.involves(2));
  EXPECT_EQ(g.last_rank, 1);
  EXPECT_EQ(g.wait_ns, (std::vector<analysis::TimeNs>{50, 0, 0}));
  EXPECT_EQ(g.transfer_ns, (std::vector<analysis::TimeNs>{150, 150, 0}));
  // The kernel of each rank is named, so a view can show the collective on every rank.
  const auto& t1 = run.ranks[1].tracks[static_cast<std::size_t>(g.events[1].track)];
  EXPECT_EQ(run.ranks[1].names[t1.name[static_cast<std::size_t>(g.events[1].row)]], ag);
  // Seq 0 of the allreduce is missing on rank 1: said, not matched.
  bool said = false;
  for (const auto& w : report.warnings)
    said =
        said || w.find("1 allreduce of process group 0 sequence numbers are not on every rank") !=
                    std::string::npos;
  EXPECT_TRUE(said);
}

namespace {

// One rank (times in us): an all-gather on stream 20 [100, 300) and a reduce-scatter on stream
// 21 starting at `rs_start`, launched by a host call ending at `rs_launched`, of process group
// `rs_group`.
trace::RankTrace fsdpRank(const std::string& rs_group, trace::TimeNs rs_launched,
                          trace::TimeNs rs_start) {
  constexpr trace::TimeNs us = 1000;
  ddpscope::testing::TraceBuilder b;
  collective(b, "ncclDevKernel_AllGather_RING_LL", 100 * us, 200 * us, 20, 1, "0", 0);
  collective(b, "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL", rs_start * us, 100 * us, 21, 2,
             rs_group, rs_group == "0" ? 1 : 0);
  b.add({"cudaLaunchKernel", 40 * us, 10 * us, 1, 0, trace::EventKind::Runtime, trace::kNoBucket,
         trace::kNoStep, 1});
  b.add({"cudaLaunchKernel", (rs_launched - 5) * us, 5 * us, 1, 0, trace::EventKind::Runtime,
         trace::kNoBucket, trace::kNoStep, 2});
  return b.build();
}

trace::Run oneRank(trace::RankTrace rank) {
  trace::Run run;
  run.ranks.push_back(std::move(rank));
  return run;
}

}  // namespace

// The reduce-scatter was launched at 60 us on a free stream, yet began 2 us after the all-gather
// of its communicator ended: it waited 302 − max(60, 100) = 202 us for it.
TEST(SerializedCollectives, ACollectiveThatWaitedForAnotherOfItsGroupIsFlagged) {
  const auto r = analysis::analyzeRun(oneRank(fsdpRank("0", 60, 302)));
  const auto& rank = r.ranks[0];
  EXPECT_TRUE(rank.serialization_checked);
  ASSERT_EQ(rank.serialized.size(), 1u);
  const auto& s = rank.serialized[0];
  EXPECT_EQ(s.kind, CollectiveKind::ReduceScatter);
  EXPECT_EQ(s.stream, 21);
  EXPECT_EQ(s.group, "0");
  EXPECT_EQ(s.start_ns, 302'000);
  EXPECT_EQ(s.waited_ns, 202'000);
  EXPECT_EQ(s.behind_kind, CollectiveKind::AllGather);
  EXPECT_EQ(s.behind_stream, 20);
  const auto json = analysis::reportToJson(r);
  EXPECT_NE(json.find("\"serialized_collectives\": [{\"kind\": \"reduce_scatter\", \"stream\": 21, "
                      "\"group\": \"0\", \"start_us\": 302, \"waited_us\": 202, "
                      "\"behind_kind\": \"all_gather\", \"behind_stream\": 20}]"),
            std::string::npos)
      << json;
}

TEST(SerializedCollectives, OtherGroupsLateLaunchesAndUnknownGroupsAreNotFlagged) {
  // Another communicator: no reason to wait for it.
  EXPECT_TRUE(analysis::analyzeRun(oneRank(fsdpRank("1", 60, 302))).ranks[0].serialized.empty());
  // Launched at 298 us, just before the all-gather ended: it waited for its launch.
  EXPECT_TRUE(analysis::analyzeRun(oneRank(fsdpRank("0", 298, 302))).ranks[0].serialized.empty());
  // Began 20 us after it: not behind it.
  EXPECT_TRUE(analysis::analyzeRun(oneRank(fsdpRank("0", 60, 320))).ranks[0].serialized.empty());
  // Without process groups the check is not made (and says so: null in the JSON).
  const auto plain = analysis::analyzeRun(threeRanks());
  EXPECT_FALSE(plain.ranks[0].serialization_checked);
  EXPECT_NE(analysis::reportToJson(plain).find("\"serialized_collectives\": null"),
            std::string::npos);
}

// The hidden split: the overlap counts a wait under compute as hidden; the transfers' own overlap
// leaves the waits out. threeRanks with longer gemms, rank 0 [0, 250) and rank 2 [0, 350):
//   rank 0: comm [100, 400) = 300, wait [100, 300) = 200; hidden [100, 250) = 150, all in the
//           wait; transfer [300, 400) = 100, none hidden.
//   rank 1: comm [200, 400) = 200, wait 100, nothing hidden; transfer 100.
//   rank 2: comm [300, 400) = 100, no wait; hidden [300, 350) = 50, all transfer.
// Overlap Σ hidden / Σ comm = 200 / 600 = 33.33 %; transfers alone 50 / 300 = 16.67 %;
// hidden waiting 150.
TEST(MatchedCollectives, HiddenSplitLeavesTheWaitsOutOfTheTransfersOverlap) {
  const auto report = analysis::analyzeRun(threeRanks({250, 0, 350}));
  const analysis::TimeNs comm_wait[] = {200, 100, 0}, hidden_wait[] = {150, 0, 0},
                         hidden_transfer[] = {0, 0, 50};
  for (int r = 0; r < 3; ++r) {
    const auto& rr = report.ranks[static_cast<std::size_t>(r)];
    ASSERT_TRUE(rr.comm_wait_ns) << r;
    EXPECT_EQ(*rr.comm_wait_ns, comm_wait[r]) << r;
    const auto h = analysis::hiddenSplit(rr);
    ASSERT_TRUE(h) << r;
    EXPECT_EQ(h->hidden_wait_ns, hidden_wait[r]) << r;
    EXPECT_EQ(h->hidden_transfer_ns, hidden_transfer[r]) << r;
    EXPECT_EQ(h->transfer_ns, 100) << r;
  }
  const auto st = analysis::summarizeStragglers(report);
  ASSERT_TRUE(st.hidden_wait_ns && st.transfer_overlap_pct);
  EXPECT_EQ(*st.hidden_wait_ns, 150);
  EXPECT_NEAR(*st.transfer_overlap_pct, 100.0 / 6.0, 1e-9);
  ASSERT_TRUE(st.whole_overlap_pct);
  EXPECT_NEAR(*st.whole_overlap_pct, 100.0 / 3.0, 1e-9);
  const auto text = analysis::reportToText(report);
  EXPECT_NE(text.find("  hidden split    waiting for a late rank 150 ns, transfer 0 ns; transfers "
                      "alone 0.00 % overlapped\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("transfers alone (whole trace, waits for a late rank left out): 16.67 % "
                      "overlapped, against 33.33 % with the waits over the same traces; 150 ns "
                      "of waiting (summed over the ranks) ran under compute"),
            std::string::npos)
      << text;
}

// busbw over the ranks of the collective's process group ("Group size" on the kernel), not the
// world's. One rank of a world of 8 (times in ns, 1 MiB each): an allreduce of a data-parallel
// group of 4 ranks [0, 1000) and one of the whole world [2000, 3000). algbw 1048576 B / 1000 ns =
// 1048.576 GB/s each; busbw 1048.576 · 2·3/4 = 1572.864 and 1048.576 · 2·7/8 = 1835.008. The
// kind's: Σ bytes / Σ time = 1048.576, busbw Σ (bytes · factor) / Σ time = 1048576 · (1.5 +
// 1.75) / 2000 = 1703.936, over groups of different sizes.
TEST(CollectiveBandwidth, BusBandwidthIsOverTheProcessGroupsRanks) {
  const char* ar = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
  ddpscope::testing::TraceBuilder b;
  collective(b, ar, 0, 1000, 40, 1, "dp", 0, 4, 1 << 20);
  collective(b, ar, 2000, 1000, 40, 2, "0", 0, 8, 1 << 20);
  b.trace().world_size = 8;
  const auto report = analysis::analyzeRun(oneRank(b.build()));
  const auto& rr = report.ranks[0];
  ASSERT_EQ(rr.buckets.size(), 2u);
  EXPECT_NEAR(*rr.buckets[0].busbw_gbps, 1572.864, 1e-9);
  EXPECT_EQ(rr.buckets[0].bw_ranks, 4);
  EXPECT_NEAR(*rr.buckets[1].busbw_gbps, 1835.008, 1e-9);
  EXPECT_EQ(rr.buckets[1].bw_ranks, 8);
  ASSERT_EQ(rr.collectives.size(), 1u);
  const auto& c = rr.collectives[0];
  EXPECT_NEAR(*c.algbw_gbps, 1048.576, 1e-9);
  EXPECT_NEAR(*c.busbw_gbps, 1703.936, 1e-9);
  EXPECT_EQ(c.bw_ranks, -1);
  const auto json = analysis::reportToJson(report);
  EXPECT_NE(json.find("\"busbw_gbps\": 1703.936, \"busbw_ranks\": null"), std::string::npos)
      << json;
  EXPECT_NE(json.find("\"busbw_gbps\": 1572.864, \"busbw_ranks\": 4"), std::string::npos);
  EXPECT_NE(analysis::reportToText(report).find("busbw 1703.9 GB/s (kernel time, waits included; "
                                                "process groups of different sizes)"),
            std::string::npos);
  // One group size for every kernel: the kind's p is it, and the text names it.
  ddpscope::testing::TraceBuilder one;
  collective(one, ar, 0, 1000, 40, 1, "dp", 0, 4, 1 << 20);
  one.trace().world_size = 8;
  const auto single = analysis::analyzeRun(oneRank(one.build()));
  EXPECT_EQ(single.ranks[0].collectives[0].bw_ranks, 4);
  EXPECT_NE(analysis::reportToText(single).find("busbw 1572.9 GB/s (kernel time, waits included; "
                                                "a process group of 4 ranks)"),
            std::string::npos);
  // Without "Group size": the world's.
  ddpscope::testing::TraceBuilder world;
  collective(world, ar, 0, 1000, 40, 1, "dp", 0, -1, 1 << 20);
  world.trace().world_size = 8;
  EXPECT_NEAR(*analysis::analyzeRun(oneRank(world.build())).ranks[0].collectives[0].busbw_gbps,
              1835.008, 1e-9);
}

// Over the transfer, too: ranks 0 and 1 of a world of 3 run an all-gather of their group of 2
// (1024 B); rank 1 arrives at 2050, both end at 2200: transfer 150 ns, algbw 1024 / 150, busbw
// that · (2−1)/2 (over the world's 3 ranks it would be · 2/3).
TEST(CollectiveBandwidth, TransferBusBandwidthIsOverTheProcessGroupsRanks) {
  trace::Run run;
  for (int r = 0; r < 3; ++r) {
    ddpscope::testing::TraceBuilder b;
    collective(b, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1000 + 10 * r, 100 - 10 * r, 40, 2,
               "0", 1, 3);
    if (r != 2)
      collective(b, "ncclDevKernel_AllGather_RING_LL", 2000 + 50 * r, 200 - 50 * r, 41, 3, "tp", 0,
                 2);
    run.ranks.push_back(b.build());
    run.ranks.back().rank = r;
    run.ranks.back().world_size = 3;
  }
  const auto report = analysis::analyzeRun(run);
  for (int r = 0; r < 2; ++r) {
    const analysis::CollectiveStats* ag = nullptr;
    for (const auto& c : report.ranks[static_cast<std::size_t>(r)].collectives)
      if (c.kind == CollectiveKind::AllGather) ag = &c;
    ASSERT_NE(ag, nullptr) << r;
    EXPECT_EQ(ag->bw_basis, analysis::BandwidthBasis::Transfer) << r;
    EXPECT_NEAR(*ag->busbw_gbps, 1024.0 / 150 / 2, 1e-12) << r;
    EXPECT_EQ(ag->bw_ranks, 2) << r;
  }
}

// The rank that went quiet first, in absolute time (times in ns). Three ranks, each a kernel from
// 0; rank 1's trace is cut short. Ends: rank 0 at 10 ms, rank 1 at 7 ms, rank 2 at 9.5 ms, all
// with base time 0: rank 1 ends 2.5 ms before any other. With rank 1's base time 2 ms later its
// end is 9 ms absolute, 0.5 ms before rank 2's: under the 1 ms lead, no rank is named. Without a
// trace cut short, none either (profilers stop at different times).
TEST(Completeness, TheRankThatWentQuietFirstIsNamedInAbsoluteTime) {
  const auto make = [](trace::TimeNs base1, bool cut, bool hta = false) {
    trace::Run run;
    const trace::TimeNs ends[] = {10'000'000, 7'000'000, 9'500'000};
    for (int r = 0; r < 3; ++r) {
      ddpscope::testing::TraceBuilder b;
      b.kernel("gemm", 0, ends[r], 7);
      run.ranks.push_back(b.build());
      run.ranks.back().rank = r;
      run.ranks.back().world_size = 3;
      run.ranks.back().ddpscope.present = true;
      run.ranks.back().ddpscope.incomplete = cut && r == 1;
    }
    run.ranks[1].base_time_ns = base1;
    analysis::AnalysisOptions options;
    options.hta_compat = hta;
    return analysis::analyzeRun(run, options);
  };
  const auto named = make(0, true);
  EXPECT_EQ(named.completeness.first_quiet_rank, 1);
  EXPECT_EQ(named.completeness.first_quiet_ahead_ns, 2'500'000);
  bool said = false;
  for (const auto& w : named.warnings)
    said = said || w.starts_with(
                       "rank 1 went quiet first: its GPU work ends 2.50 ms before any "
                       "other rank's");
  EXPECT_TRUE(said);
  EXPECT_EQ(analysis::summarizeRun(named).first_quiet_rank, 1);
  EXPECT_EQ(make(2'000'000, true).completeness.first_quiet_rank, -1);
  EXPECT_EQ(make(0, false).completeness.first_quiet_rank, -1);
  // In HTA's window, which ends each trace at its last step: not looked for.
  EXPECT_EQ(make(0, true, true).completeness.first_quiet_rank, -1);
}

// A rank of the world without a trace beside traces cut short may have died first: the missing
// ranks' warning says so (and only then).
TEST(Completeness, AMissingRankBesideTracesCutShortMayHaveDied) {
  const auto make = [](bool cut) {
    trace::Run run;
    for (int r : {0, 2}) {
      ddpscope::testing::TraceBuilder b;
      b.kernel("gemm", 0, 1000, 7);
      run.ranks.push_back(b.build());
      run.ranks.back().rank = r;
      run.ranks.back().world_size = 3;
      run.ranks.back().ddpscope.present = true;
      run.ranks.back().ddpscope.incomplete = cut;
    }
    return analysis::analyzeRun(run);
  };
  const auto said = [](const analysis::RunReport& report) {
    for (const auto& w : report.warnings)
      if (w.starts_with("only 2 of 3 ranks have a trace (missing: rank 1)"))
        return w.find("may have died") != std::string::npos;
    ADD_FAILURE() << "no missing-rank warning";
    return false;
  };
  EXPECT_TRUE(said(make(true)));
  EXPECT_FALSE(said(make(false)));
}
