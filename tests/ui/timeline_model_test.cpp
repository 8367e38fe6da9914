// The timeline's lanes for real and built traces: lanes per rank and stream, labels, and the
// hidden/exposed split that the overlap strip and the comm lanes draw.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "app/analysis/analysis.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/session.h"
#include "app/ui/timeline_model.h"
#include "tests/common/trace_builder.h"
#include "tracer/format/run_loader.h"

using namespace ddpscope;
using namespace ddpscope::ui;

namespace {
TimeNs lengthOfStyle(const Lane& lane, std::uint8_t style) {
  TimeNs sum = 0;
  for (std::size_t i = 0; i < lane.events.size(); ++i)
    if (lane.events.style(i) == style) sum += lane.events.end(i) - lane.events.start(i);
  return sum;
}
}  // namespace

TEST(UiTimelineModel, Resnet50LanesAndOverlap) {
  const auto run = prepareRun(
      trace::loadRun({std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz"}), {});
  const auto& m = run->timeline;
  const auto streams = m.lanesOf(LaneKind::Stream, 0);
  ASSERT_EQ(streams.size(), 2u);
  EXPECT_EQ(streams[0]->stream, 7);
  EXPECT_EQ(streams[0]->role, analysis::StreamRole::Compute);
  EXPECT_EQ(streams[0]->label, "compute · stream 7");
  EXPECT_EQ(streams[1]->stream, 40);
  EXPECT_EQ(streams[1]->role, analysis::StreamRole::Communication);
  EXPECT_EQ(streams[1]->label, "comm · stream 40");
  ASSERT_EQ(m.lanesOf(LaneKind::Steps, 0).size(), 1u);
  EXPECT_EQ(m.lanesOf(LaneKind::Steps, 0).front()->events.size(), 3u);  // steps 4, 5, 6
  EXPECT_FALSE(m.lanesOf(LaneKind::Buckets, 0).empty());
  EXPECT_EQ(m.lanesOf(LaneKind::Buckets, 0).front()->label, "buckets (inferred)");

  // The overlap strip shows exactly the analysis's hidden and exposed communication.
  const auto& whole = run->report.ranks.front().whole;
  const Lane& strip = *m.lanesOf(LaneKind::Overlap, 0).front();
  const TimeNs hidden = lengthOfStyle(strip, kStyleCommHidden);
  const TimeNs exposed = lengthOfStyle(strip, kStyleCommExposed);
  EXPECT_EQ(hidden, whole.overlap_ns);
  EXPECT_EQ(exposed, whole.exposed_ns);
  EXPECT_NEAR(100.0 * static_cast<double>(hidden) / static_cast<double>(hidden + exposed), 15.61,
              0.005);
  // The comm stream lane splits each collective the same way (one comm stream here), in the
  // colour of its collective.
  TimeNs lane_hidden = 0, lane_exposed = 0;
  for (std::size_t i = 0; i < streams[1]->events.size(); ++i) {
    const auto st = streams[1]->events.style(i);
    ASSERT_TRUE(isCommKindStyle(st)) << i;
    const TimeNs len = streams[1]->events.end(i) - streams[1]->events.start(i);
    (isHiddenCommStyle(st) ? lane_hidden : lane_exposed) += len;
  }
  EXPECT_EQ(lane_hidden, whole.overlap_ns);
  EXPECT_EQ(lane_exposed, whole.exposed_ns);
  using analysis::CollectiveKind;
  EXPECT_GT(lengthOfStyle(*streams[1], commKindStyle(CollectiveKind::AllReduce, true)), 0);
  ASSERT_FALSE(m.kinds_present.empty());
  EXPECT_EQ(m.kinds_present.front(), CollectiveKind::AllReduce);

  // The run's headline figures cover steps 5–6 (4 is warm-up): from the reference's per-step
  // figures, (1760.420 + 3731.346) / (12300.029 + 22587.443) µs hidden of communication.
  const auto& h = run->summary;
  EXPECT_EQ(h.selection.used, (std::vector<std::int32_t>{5, 6}));
  ASSERT_TRUE(h.overlap_pct.has_value());
  EXPECT_DOUBLE_EQ(*h.overlap_pct, 100.0 * 5'491'766 / 34'887'472);
}

TEST(UiTimelineModel, ContextWideSyncsAreOnStreamNoneAsTheCliSaysIt) {
  // AlexNet's Kineto trace has cudaDeviceSynchronize records on CUPTI's invalid stream id.
  const auto run = prepareRun(
      trace::loadRun({std::string(DDPSCOPE_TEST_DATA) + "/alexnet_sync_events.json.gz"}), {});
  bool none = false;
  for (const Lane* lane : run->timeline.lanesOf(LaneKind::Stream, 0)) {
    EXPECT_EQ(lane->label.find("4294967295"), std::string::npos) << lane->label;
    none = none || lane->label.ends_with("stream none");
  }
  EXPECT_TRUE(none);
}

TEST(UiTimelineModel, CommSplitIntoHiddenAndExposedPieces) {
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 0, 100).kernel("gemm", 300, 100).comm(50, 300);  // comm [50,350)
  trace::Run run;
  run.ranks.push_back(b.build());
  const auto loaded = prepareRun(std::move(run), {});
  const Lane* comm = nullptr;
  for (const Lane* l : loaded->timeline.lanesOf(LaneKind::Stream, 0))
    if (l->stream == 40) comm = l;
  ASSERT_NE(comm, nullptr);
  ASSERT_EQ(comm->events.size(), 3u);
  EXPECT_EQ(comm->events.start(0), 50);
  EXPECT_EQ(comm->events.end(0), 100);
  EXPECT_TRUE(isHiddenCommStyle(comm->events.style(0)));
  EXPECT_EQ(comm->events.end(1), 300);
  EXPECT_TRUE(isExposedCommStyle(comm->events.style(1)));
  EXPECT_TRUE(isHiddenCommStyle(comm->events.style(2)));
  EXPECT_TRUE(isCommKindStyle(comm->events.style(1)));
  EXPECT_EQ(comm->events.source(1), comm->events.source(0));  // all pieces point at one kernel
}

TEST(UiTimelineModel, RanksGetTheirOwnLaneGroups) {
  trace::Run run;
  for (int r = 0; r < 3; ++r) {
    ddpscope::testing::TraceBuilder b;
    b.kernel("gemm", 0, 100)
        .comm(50, 100)
        .add({"Memcpy DtoH", 200, 10, 9, 0, trace::EventKind::Memcpy});
    auto t = b.build();
    t.rank = r;
    t.world_size = 3;
    run.ranks.push_back(std::move(t));
  }
  const auto loaded = prepareRun(std::move(run), {});
  for (int r = 0; r < 3; ++r) {
    const auto streams = loaded->timeline.lanesOf(LaneKind::Stream, r);
    ASSERT_EQ(streams.size(), 3u) << r;
    EXPECT_EQ(streams[0]->label, "compute · stream 7");
    EXPECT_EQ(streams[1]->label, "copy · stream 9");
    EXPECT_EQ(streams[2]->label, "comm · stream 40");
    EXPECT_EQ(loaded->timeline.lanesOf(LaneKind::Steps, r).front()->label,
              "rank " + std::to_string(r) + " · steps");
  }
}

namespace {
// What a loaded run keeps per rank answers as the rank's full activity does: the selection's
// overlap %, and the details panel's "hidden under compute" and "communication alongside".
void expectOverlapAsActivity(const trace::RankTrace& rank, const RankOverlap& overlap,
                             std::mt19937_64& rng) {
  const auto act = analysis::rankActivity(rank);
  EXPECT_EQ(overlap.comm, act.comm);
  std::size_t comm_kernels = 0, compute_kernels = 0;
  TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  for (const auto& t : rank.tracks) {
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      lo = std::min(lo, t.start[i]);
      hi = std::max(hi, t.end(i));
      const auto c = analysis::classify(t.kind_of[i], rank.names[t.name[i]]);
      if (c == analysis::ActivityClass::Communication) {
        ++comm_kernels;
        EXPECT_EQ(overlap.computeWithinComm(t.start[i], t.end(i)),
                  analysis::lengthWithin(act.compute, t.start[i], t.end(i)));
      } else if (c == analysis::ActivityClass::Computation) {
        ++compute_kernels;
        EXPECT_EQ(overlap.commWithin(t.start[i], t.end(i)),
                  analysis::lengthWithin(act.comm, t.start[i], t.end(i)));
      }
    }
  }
  EXPECT_GT(comm_kernels, 0u);
  EXPECT_GT(compute_kernels, 0u);
  const auto span = static_cast<std::uint64_t>(hi - lo) + 1;
  for (int k = 0; k < 2000; ++k) {
    TimeNs a = lo - 10 + static_cast<TimeNs>(rng() % (span + 20));
    TimeNs b = k % 10 == 0 ? a : a + static_cast<TimeNs>(rng() % (span / (1 + rng() % 1000) + 1));
    EXPECT_EQ(overlap.pctWithin(a, b), analysis::overlapPctWithin(act, a, b))
        << "[" << a << ", " << b << ")";
  }
  EXPECT_EQ(overlap.pctWithin(lo, hi + 1), analysis::overlapPctWithin(act, lo, hi + 1));
}
}  // namespace

TEST(UiTimelineModel, KeptOverlapAnswersAsTheRankActivity) {
  std::mt19937_64 rng(3);
  const auto resnet = prepareRun(
      trace::loadRun({std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz"}), {});
  ASSERT_EQ(resnet->overlap.size(), 1u);
  expectOverlapAsActivity(resnet->run.ranks.front(), resnet->overlap.front(), rng);

  // Random streams: compute on two streams, comm on two, copies and syncs, overlapping freely.
  trace::Run run;
  for (int r = 0; r < 2; ++r) {
    ddpscope::testing::TraceBuilder b;
    for (int i = 0; i < 3000; ++i) {
      const TimeNs start = static_cast<TimeNs>(rng() % 10'000'000);
      const TimeNs dur = static_cast<TimeNs>(rng() % (i % 7 == 0 ? 200'000 : 5'000));
      switch (rng() % 6) {
        case 0:
          b.comm(start, dur, 40);
          break;
        case 1:
          b.comm(start, dur, 41);
          break;
        case 2:
          b.kernel("gemm", start, dur, 8);
          break;
        case 3:
          b.add({"Memcpy DtoD", start, dur, 9, 0, trace::EventKind::Memcpy});
          break;
        case 4:
          b.add({"cudaStreamSynchronize", start, dur, 9, 0, trace::EventKind::Sync});
          break;
        default:
          b.kernel("conv", start, dur, 7);
      }
    }
    run.ranks.push_back(b.build());
    run.ranks.back().rank = r;
  }
  const auto loaded = prepareRun(std::move(run), {});
  ASSERT_EQ(loaded->overlap.size(), 2u);
  for (std::size_t r = 0; r < 2; ++r)
    expectOverlapAsActivity(loaded->run.ranks[r], loaded->overlap[r], rng);
}

TEST(UiTimeAxis, LabelsKeepOneUnitAndEnoughDecimals) {
  EXPECT_EQ(TimeTicker::formatTick(0, 1e8, 6.6e8), "0 ms");
  EXPECT_EQ(TimeTicker::formatTick(6e8, 1e8, 6.6e8), "600 ms");
  EXPECT_EQ(TimeTicker::formatTick(1.225e8, 2.5e6, 1.3e8), "122.5 ms");
  EXPECT_EQ(TimeTicker::formatTick(125'000'010, 10, 125'000'100), "125.00001 ms");
  EXPECT_EQ(TimeTicker::formatTick(3e10, 5e9, 3.2e10), "30 s");
  EXPECT_EQ(TimeTicker::formatTick(750, 250, 900), "750 ns");
  EXPECT_EQ(TimeTicker::formatTick(2500, 500, 9000), "2.5 µs");
}

TEST(UiTimelineModel, AnIncompleteRankShowsWhereItsUnfinishedStepWasCut) {
  for (const bool incomplete : {false, true}) {
    auto b = ddpscope::testing::twoBuckets();   // step 0: 0 .. 10 µs
    b.kernel("gemm_fwd_step1", 10'500, 2'000);  // step 1 began, its range never closed
    // The host waited in a synchronize until a watchdog fired: not part of the mark.
    b.add({"cudaDeviceSynchronize", 12'600, 5'000'000, 1, 0, trace::EventKind::Runtime});
    b.trace().ddpscope.present = true;
    b.trace().ddpscope.incomplete = incomplete;
    trace::Run run;
    run.ranks.push_back(b.build());
    const auto prepared = prepareRun(std::move(run), {});
    const Lane& steps = *prepared->timeline.lanesOf(LaneKind::Steps, 0).front();
    SCOPED_TRACE(incomplete);
    EXPECT_EQ(lengthOfStyle(steps, kStyleStep), 10'000);
    // From the end of the last step to the end of the last GPU work recorded.
    EXPECT_EQ(lengthOfStyle(steps, kStyleCutShort), incomplete ? 2'500 : 0);
  }
}

TEST(UiTimelineModel, AnIncompleteRankWithoutStepsGetsNoCutMark) {
  ddpscope::testing::TraceBuilder b;  // e.g. a program stopped by SIGTERM, no ProfilerStep#
  b.kernel("gemm", 50'000, 2'000);
  b.trace().ddpscope.present = true;
  b.trace().ddpscope.incomplete = true;
  trace::Run run;
  run.ranks.push_back(b.build());
  const auto prepared = prepareRun(std::move(run), {});
  EXPECT_EQ(prepared->timeline.lanesOf(LaneKind::Steps, 0).front()->events.size(), 0u);
}
