// Whole simulated runs: the dependency check, the trends a user relies on, determinism.
#include <gtest/gtest.h>

#include <algorithm>

#include "agent/run_agent.h"
#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "tracer/format/trace_writer.h"

namespace ddpscope::agent {
namespace {

// The default transformer preset (GPT-2 small shapes, 4096 tokens per rank) on 8 ranks.
AgentOptions preset(double bucket_mb, std::int32_t steps = 3) {
  AgentOptions o;
  o.world_size = 8;
  o.bucket_mb = bucket_mb;
  o.first_bucket_mb = std::min(1.0, bucket_mb);
  o.steps = steps;
  o.out_dir = "unused";
  return o;
}

std::int32_t totalViolations(const SimRunResult& r) {
  std::int32_t n = 0;
  for (const auto& t : r.ranks)
    n += static_cast<std::int32_t>(analysis::analyzeRank(t).violations.size());
  return n;
}

// Mean over steps after the first (warm-up) of rank 0's step time and overlap.
struct Summary {
  double step_ms = 0, overlap_pct = 0;
  std::int32_t allreduces_per_step = 0;
};
Summary summarize(const SimRunResult& r) {
  const auto report = analysis::analyzeRank(r.ranks.front());
  Summary s;
  int n = 0;
  for (const auto& st : report.steps) {
    if (st.step == 0) continue;
    s.step_ms += static_cast<double>(st.dur_ns) * 1e-6;
    s.overlap_pct += st.metrics.overlap_pct.value_or(0);
    s.allreduces_per_step = st.allreduces;
    ++n;
  }
  s.step_ms /= n;
  s.overlap_pct /= n;
  return s;
}

TEST(SimRun, EveryConfigurationPassesTheDependencyCheck) {
  for (double mb : {0.0, 25.0}) {
    for (bool overlap : {true, false}) {
      for (Fusion f : {Fusion::View, Fusion::Copy}) {
        auto o = preset(mb, 2);
        o.overlap = overlap;
        o.fusion = f;
        o.cost.jitter = 0.2;
        o.cost.straggler_rank = 3;
        o.cost.straggler_slowdown = 1.3;
        const auto r = runSimulation(o);
        ASSERT_EQ(r.ranks.size(), 8u);
        EXPECT_EQ(totalViolations(r), 0) << "bucket " << mb << " overlap " << overlap;
      }
    }
  }
}

TEST(SimRun, MissingCommunicationWaitIsCaught) {
  const auto r =
      runSimulation(preset(25), nullptr, [](TrainerOptions& t) { t.skip_comm_wait = true; });
  const auto report = analysis::analyzeRank(r.ranks.front());
  ASSERT_FALSE(report.violations.empty());
  EXPECT_TRUE(std::any_of(report.violations.begin(), report.violations.end(), [](const auto& v) {
    return v.kind == analysis::Violation::Kind::AllreduceBeforeReady;
  }));
}

TEST(SimRun, MissingUpdateWaitIsCaught) {
  const auto r =
      runSimulation(preset(25), nullptr, [](TrainerOptions& t) { t.skip_update_wait = true; });
  const auto report = analysis::analyzeRank(r.ranks.front());
  ASSERT_FALSE(report.violations.empty());
  EXPECT_TRUE(std::any_of(report.violations.begin(), report.violations.end(), [](const auto& v) {
    return v.kind == analysis::Violation::Kind::UpdateBeforeAllreduce;
  }));
}

TEST(SimRun, TracesFollowTheConventions) {
  const auto r = runSimulation(preset(25, 2));
  const auto& t = r.ranks[2];
  EXPECT_EQ(t.rank, 2);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.source(), "sim");
  EXPECT_EQ(t.ddpscope.configValue("fusion"), "\"view\"");
  EXPECT_EQ(t.ddpscope.configValue("overlap"), "true");
  EXPECT_EQ(t.ddpscope.configValue("world_size"), "8");
  EXPECT_EQ(t.ddpscope.buckets.size(), static_cast<std::size_t>(r.buckets));
  ASSERT_EQ(t.steps.size(), 2u);
  std::int64_t bucket_bytes = 0;
  for (const auto& b : t.ddpscope.buckets)
    bucket_bytes += b.bytes;
  // GPT-2 small with a 50304-token embedding and an H x H head: 124.4M parameters.
  EXPECT_EQ(bucket_bytes / 4, 50304 * 768 + 12 * (12 * 768 * 768 + 13 * 768) + 768 * 768 + 3 * 768);
  for (const auto& track : t.tracks) {
    if (track.kind != trace::TrackKind::Gpu) continue;
    EXPECT_EQ(track.pid, 2);
    for (std::size_t i = 0; i < track.size(); ++i)
      ASSERT_NE(track.step[i], trace::kNoStep);
  }
}

TEST(SimRun, BucketSizeSetsTheNumberOfAllreduces) {
  const auto per_tensor = summarize(runSimulation(preset(0)));
  const auto medium = summarize(runSimulation(preset(25)));
  const auto large = summarize(runSimulation(preset(200)));
  EXPECT_EQ(per_tensor.allreduces_per_step, 12 * 12 + 5);  // every parameter tensor
  EXPECT_LT(medium.allreduces_per_step, per_tensor.allreduces_per_step);
  EXPECT_LT(large.allreduces_per_step, medium.allreduces_per_step);
}

TEST(SimRun, NoOverlapHidesLessAndTakesLonger) {
  auto o = preset(25);
  const auto overlap = summarize(runSimulation(o));
  o.overlap = false;
  const auto serial = summarize(runSimulation(o));
  EXPECT_LT(serial.overlap_pct + 30, overlap.overlap_pct);
  EXPECT_GT(serial.step_ms, overlap.step_ms * 1.05);
}

TEST(SimRun, BucketSweepHasItsMinimumInside) {
  const std::vector<double> sizes = {0, 0.25, 2, 5, 25, 100, 1000};
  std::vector<double> ms;
  for (double mb : sizes)
    ms.push_back(summarize(runSimulation(preset(mb))).step_ms);
  const auto best = std::min_element(ms.begin(), ms.end()) - ms.begin();
  EXPECT_GT(best, 0);
  EXPECT_LT(best, static_cast<long>(sizes.size()) - 1);
  EXPECT_LT(ms[best], ms.front());
  EXPECT_LT(ms[best], ms.back());
}

TEST(SimRun, SameSeedGivesIdenticalBytes) {
  auto o = preset(25, 2);
  o.cost.jitter = 0.3;
  const auto a = runSimulation(o);
  const auto b = runSimulation(o);
  for (std::size_t r = 0; r < a.ranks.size(); ++r)
    EXPECT_EQ(trace::serializeTrace(a.ranks[r]), trace::serializeTrace(b.ranks[r]));
  o.model.seed = 2;
  const auto c = runSimulation(o);
  EXPECT_NE(trace::serializeTrace(a.ranks[0]), trace::serializeTrace(c.ranks[0]));
}

TEST(SimRun, StragglerRankIsReportedLast) {
  auto o = preset(25, 2);
  o.cost.straggler_rank = 5;
  o.cost.straggler_slowdown = 1.5;
  const auto r = runSimulation(o);
  trace::Run run;
  run.ranks = r.ranks;
  const auto report = analysis::analyzeRun(run);
  ASSERT_FALSE(report.stragglers.empty());
  for (const auto& s : report.stragglers)
    EXPECT_EQ(s.last_rank, 5);
}

// A late rank, as a user sees it: the other ranks' kernels start before its own, their exposed
// communication is mostly waiting for it, and it is named; without a straggler, the exposed
// communication is transfer. The simulator writes process groups and sequence numbers, so the
// collectives are matched by them.
TEST(SimRun, ALateRanksCostIsWaitingAndWithoutOneItIsTransfer) {
  for (bool late : {true, false}) {
    auto o = preset(25, 2);
    o.world_size = 4;
    if (late) {
      o.cost.straggler_rank = 2;
      o.cost.straggler_slowdown = 1.5;
    }
    const auto r = runSimulation(o);
    trace::Run run;
    run.ranks = r.ranks;
    const auto report = analysis::analyzeRun(run);
    EXPECT_EQ(report.matched_by, "process group and sequence number");
    ASSERT_FALSE(report.matched.empty());
    std::size_t named_late = 0;
    for (const auto& m : report.matched) {
      ASSERT_EQ(m.wait_ns.size(), 4u);
      if (late && m.last_rank == 2) {
        ++named_late;
        for (std::size_t k = 0; k < 4; ++k) {
          if (k != 2) {
            EXPECT_GT(m.wait_ns[k], 0) << "rank " << k << " started before rank 2";
          }
        }
      }
    }
    if (late) {
      EXPECT_EQ(named_late, report.matched.size());
    }
    for (const auto& rank : report.ranks) {
      ASSERT_TRUE(rank.exposed_wait_ns && rank.exposed_transfer_ns);
      if (late && rank.rank != 2) {
        EXPECT_GT(*rank.exposed_wait_ns, *rank.exposed_transfer_ns) << "rank " << rank.rank;
      } else {
        EXPECT_LT(*rank.exposed_wait_ns, *rank.exposed_transfer_ns) << "rank " << rank.rank;
      }
    }
    // The summary's run block names the late rank (before the per-rank sections), only when
    // there is one.
    const std::string text = analysis::reportToText(report);
    const auto late_line = text.find("  late rank 2: the last to start ");
    const auto first_rank = text.find("rank 0 of 4");
    ASSERT_NE(first_rank, std::string::npos);
    EXPECT_EQ(late_line != std::string::npos, late) << text.substr(0, 400);
    if (late) {
      EXPECT_LT(late_line, first_rank);
    }
    // And the JSON's matched collectives say it.
    EXPECT_NE(analysis::reportToJson(report).find(late ? "\"late_rank\": 2, \"late_rank_last_in\": "
                                                       : "\"late_rank\": null, "),
              std::string::npos);
  }
}

}  // namespace
}  // namespace ddpscope::agent
