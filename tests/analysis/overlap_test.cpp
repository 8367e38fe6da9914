// Hand-built traces for each rule of docs/METRICS.md, and properties that must hold.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "app/analysis/analysis.h"
#include "tests/common/trace_builder.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;
using ddpscope::testing::TraceBuilder;
using trace::EventKind;

TEST(Classify, ByNameAsDesignDefines) {
  using analysis::ActivityClass;
  using analysis::classify;
  EXPECT_EQ(classify(EventKind::Kernel, "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)"),
            ActivityClass::Communication);
  EXPECT_EQ(classify(EventKind::Kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL"),
            ActivityClass::Communication);
  EXPECT_EQ(classify(EventKind::Kernel, "ncclSymkAllReduce"), ActivityClass::Communication);
  EXPECT_EQ(classify(EventKind::Kernel, "void foo<ncclKernel_x>()"), ActivityClass::Communication);
  EXPECT_EQ(classify(EventKind::Kernel, "hcclAllReduce"), ActivityClass::Communication);
  EXPECT_EQ(classify(EventKind::Kernel, "sm90_xmma_gemm_bf16bf16"), ActivityClass::Computation);
  EXPECT_EQ(classify(EventKind::Kernel, "Memcpy DtoD"), ActivityClass::Memory);
  EXPECT_EQ(classify(EventKind::Kernel, "dma_copy"), ActivityClass::Memory);
  EXPECT_EQ(classify(EventKind::Memset, "anything"), ActivityClass::Memory);
  EXPECT_EQ(classify(EventKind::Sync, "Stream Sync"), ActivityClass::Other);
  EXPECT_EQ(classify(EventKind::Kernel, "Stream Wait Event"), ActivityClass::Other);
  EXPECT_EQ(classify(EventKind::GpuAnnotation, "nccl:all_reduce"), ActivityClass::None);
  EXPECT_EQ(classify(EventKind::CpuOp, "ncclKernel"), ActivityClass::None);
}

namespace {
analysis::RankReport analyze(TraceBuilder& b) {
  const auto t = b.build();
  return analysis::analyzeRank(t);
}
}  // namespace

TEST(Overlap, FullyHidden) {
  TraceBuilder b;
  b.kernel("gemm", 0, 1000).comm(100, 500);
  const auto r = analyze(b);
  EXPECT_EQ(r.whole.comm_ns, 500);
  EXPECT_EQ(r.whole.overlap_ns, 500);
  EXPECT_EQ(r.whole.exposed_ns, 0);
  EXPECT_DOUBLE_EQ(*r.whole.overlap_pct, 100.0);
}

TEST(Overlap, FullyExposed) {
  TraceBuilder b;
  b.kernel("gemm", 0, 1000).comm(1000, 500);
  const auto r = analyze(b);
  EXPECT_DOUBLE_EQ(*r.whole.overlap_pct, 0.0);
  EXPECT_EQ(r.whole.exposed_ns, 500);
  EXPECT_EQ(r.whole.span_ns, 1500);
  EXPECT_EQ(r.whole.idle_ns, 0);
}

TEST(Overlap, Partial) {
  TraceBuilder b;
  b.kernel("gemm", 0, 1000).comm(800, 400);  // 200 hidden, 200 exposed
  const auto r = analyze(b);
  EXPECT_EQ(r.whole.overlap_ns, 200);
  EXPECT_DOUBLE_EQ(*r.whole.overlap_pct, 50.0);
  EXPECT_EQ(r.whole.exposed_ns, 200);
}

TEST(Overlap, CommOnTwoStreamsOverlappingEachOtherCountsOnce) {
  TraceBuilder b;
  b.kernel("gemm", 0, 300).comm(100, 400, 40).comm(200, 400, 41);  // ∪comm = [100,600)
  const auto r = analyze(b);
  EXPECT_EQ(r.whole.comm_ns, 500);
  EXPECT_EQ(r.whole.overlap_ns, 200);
  EXPECT_DOUBLE_EQ(*r.whole.overlap_pct, 40.0);
  EXPECT_EQ(r.counts[0], 2);
  EXPECT_EQ(r.streams.size(), 3u);
}

TEST(Overlap, NestedAndZeroLengthKernels) {
  TraceBuilder b;
  b.kernel("outer", 0, 1000)
      .kernel("inner", 100, 100)
      .kernel("zero", 500, 0)
      .comm(900, 200)
      .comm(950, 0);
  const auto r = analyze(b);
  EXPECT_EQ(r.whole.compute_ns, 1000);
  EXPECT_EQ(r.whole.comm_ns, 200);
  EXPECT_EQ(r.whole.overlap_ns, 100);
  EXPECT_EQ(r.counts[1], 3);  // zero-length kernels are counted but cover nothing
  EXPECT_EQ(r.counts[0], 2);
}

TEST(Overlap, MemoryAndSyncAreInNeitherTerm) {
  TraceBuilder b;
  b.comm(0, 1000)
      .add({"Memcpy DtoD (Device -> Device)", 0, 1000, 7, 0, EventKind::Memcpy})
      .add({"Stream Sync", 0, 1000, 7, 0, EventKind::Sync})
      .add({"Memset (Device)", 0, 1000, 8, 0, EventKind::Memset});
  const auto r = analyze(b);
  EXPECT_DOUBLE_EQ(*r.whole.overlap_pct, 0.0);
  EXPECT_EQ(r.counts[2], 2);
  EXPECT_EQ(r.counts[3], 1);
  EXPECT_EQ(r.whole.compute_pct.value(), 0.0);
  EXPECT_DOUBLE_EQ(r.whole.non_compute_pct.value(), 100.0);
}

// Percentages of an empty span are undefined, not 0: no GPU work at all, or only zero-length
// work, leaves them empty (null in JSON), as the whole run's GPU idle share is.
TEST(Overlap, BreakdownOfAnEmptySpanIsUndefined) {
  TraceBuilder none;
  const auto a = analyze(none);
  EXPECT_EQ(a.whole.span_ns, 0);
  EXPECT_FALSE(a.whole.idle_pct);
  EXPECT_FALSE(a.whole.compute_pct);
  EXPECT_FALSE(a.whole.non_compute_pct);
  TraceBuilder instant;
  instant.kernel("gemm", 500, 0);
  const auto b = analyze(instant);
  EXPECT_EQ(b.whole.span_ns, 0);
  EXPECT_FALSE(b.whole.idle_pct);
  TraceBuilder one;
  one.kernel("gemm", 500, 10);
  EXPECT_EQ(analyze(one).whole.idle_pct, 0.0);
  EXPECT_EQ(analyze(one).whole.compute_pct, 100.0);
}

// A cuda_sync record is the host waiting on the GPU, not work the GPU runs: a GPU with nothing
// but a 4000 ns sync between two 1000 ns kernels is idle for those 4000 ns (span 6000, busy
// 2000: idle 4000 / 6000), and the sync's own stream is busy 0 ns while the sync is counted.
TEST(Overlap, SyncRecordsAreNotGpuBusyTime) {
  TraceBuilder b;
  b.kernel("gemm", 0, 1000)
      .add({"Context Sync", 1000, 4000, 9, 0, EventKind::Sync})
      .kernel("gemm", 5000, 1000);
  const auto r = analyze(b);
  EXPECT_EQ(r.whole.span_ns, 6000);
  EXPECT_EQ(r.whole.busy_ns, 2000);
  EXPECT_DOUBLE_EQ(r.whole.idle_pct.value(), 100.0 * 4000 / 6000);
  EXPECT_EQ(r.counts[3], 1);
  bool seen = false;
  for (const auto& s : r.streams) {
    if (s.stream != 9) continue;
    seen = true;
    EXPECT_EQ(s.busy_ns, 0);
    EXPECT_EQ(s.counts[3], 1);
  }
  EXPECT_TRUE(seen);
}

// A sync before the first or after the last kernel does not stretch the span.
TEST(Overlap, SyncRecordsDoNotStretchTheSpan) {
  TraceBuilder b;
  b.add({"Context Sync", 0, 500, 9, 0, EventKind::Sync})
      .kernel("gemm", 1000, 1000)
      .add({"Stream Sync", 1500, 3000, 9, 0, EventKind::Sync});
  const auto r = analyze(b);
  EXPECT_EQ(r.whole.first_ns, 1000);
  EXPECT_EQ(r.whole.span_ns, 1000);
  EXPECT_DOUBLE_EQ(r.whole.idle_pct.value(), 0.0);
}

TEST(Overlap, NoCommunicationIsUndefinedNotZero) {
  TraceBuilder b;
  b.kernel("gemm", 0, 1000);
  EXPECT_FALSE(analyze(b).whole.overlap_pct.has_value());
}

TEST(Overlap, TemporalBreakdown) {
  TraceBuilder b;
  b.kernel("gemm", 0, 100).comm(300, 100).add({"Memcpy HtoD", 500, 100, 9, 0, EventKind::Memcpy});
  const auto r = analyze(b);  // span 600, busy 300, idle 300, compute 100
  EXPECT_EQ(r.whole.span_ns, 600);
  EXPECT_DOUBLE_EQ(r.whole.idle_pct.value(), 50.0);
  EXPECT_NEAR(r.whole.compute_pct.value(), 100.0 / 6, 1e-12);
  EXPECT_NEAR(r.whole.non_compute_pct.value(), 100.0 / 3, 1e-12);
}

TEST(OverlapProperties, ShufflingAndSplittingChangeNothing) {
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<ddpscope::testing::EventSpec> events;
    std::uniform_int_distribution<int> pos(0, 100000), len(0, 5000), stream(0, 3);
    for (int k = 0; k < 60; ++k) {
      const int s = stream(rng);
      ddpscope::testing::EventSpec e;
      e.name = s >= 2 ? "ncclDevKernel_AllReduce" : (k % 5 == 0 ? "Memcpy DtoH" : "gemm");
      e.kind = e.name.starts_with("Memcpy") ? EventKind::Memcpy : EventKind::Kernel;
      e.start = pos(rng);
      e.dur = len(rng);
      e.stream = 7 + s;
      events.push_back(e);
    }
    TraceBuilder ordered;
    for (const auto& e : events)
      ordered.add(e);
    const auto base = analyze(ordered);
    EXPECT_LE(base.whole.overlap_ns, base.whole.comm_ns);
    EXPECT_LE(base.whole.overlap_ns, base.whole.compute_ns);
    EXPECT_EQ(base.whole.overlap_ns + base.whole.exposed_ns, base.whole.comm_ns);

    std::shuffle(events.begin(), events.end(), rng);
    TraceBuilder shuffled;
    for (const auto& e : events)
      shuffled.add(e);
    const auto s = analyze(shuffled);
    EXPECT_EQ(s.whole.comm_ns, base.whole.comm_ns);
    EXPECT_EQ(s.whole.overlap_ns, base.whole.overlap_ns);
    EXPECT_EQ(s.whole.idle_ns, base.whole.idle_ns);

    TraceBuilder split;  // every event cut into two adjacent halves
    for (const auto& e : events) {
      auto a = e, b2 = e;
      a.dur = e.dur / 2;
      b2.start = e.start + a.dur;
      b2.dur = e.dur - a.dur;
      split.add(a).add(b2);
    }
    const auto p = analyze(split);
    EXPECT_EQ(p.whole.comm_ns, base.whole.comm_ns);
    EXPECT_EQ(p.whole.compute_ns, base.whole.compute_ns);
    EXPECT_EQ(p.whole.overlap_ns, base.whole.overlap_ns);
    EXPECT_EQ(p.whole.span_ns, base.whole.span_ns);
  }
}

TEST(Steps, PerStepMetricsAndDpEfficiency) {
  TraceBuilder b;
  b.step(0, 0, 1000).step(1, 1000, 1000);
  b.add({"gemm", 0, 600, 7, 0, EventKind::Kernel, -1, 0});
  b.add({"ncclDevKernel_AllReduce_Sum_f32", 500, 300, 40, 0, EventKind::Kernel, -1,
         0});  // 100 hidden
  b.add({"gemm", 1000, 800, 7, 0, EventKind::Kernel, -1, 1});
  b.add({"ncclDevKernel_AllReduce_Sum_f32", 1100, 200, 40, 0, EventKind::Kernel, -1, 1});  // hidden
  const auto r = analyze(b);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].dur_ns, 1000);
  EXPECT_NEAR(*r.steps[0].metrics.overlap_pct, 100.0 / 3, 1e-9);
  EXPECT_EQ(r.steps[0].metrics.exposed_ns, 200);
  // Free communication would save the 200 exposed: (1000 - 200) / 1000. The idle end of the
  // step is not a cost of data parallelism.
  EXPECT_EQ(r.steps[0].compute_critical_ns, 800);
  EXPECT_DOUBLE_EQ(*r.steps[0].dp_efficiency, 0.8);
  EXPECT_EQ(r.steps[0].allreduces, 1);
  // Tail: backward ends at 600 (last compute before the last allreduce starts), comm ends 800.
  EXPECT_EQ(r.steps[0].exposed_tail_ns, 200);
  EXPECT_DOUBLE_EQ(*r.steps[1].metrics.overlap_pct, 100.0);
  EXPECT_DOUBLE_EQ(*r.steps[1].dp_efficiency, 1.0);  // all communication hidden
}

// Our traces mark backward on the GPU; on CUDA the host range is also projected onto every
// stream that ran a kernel it launched, the communication stream included, where it ends with
// the last allreduce: that copy must not move the end of backward.
TEST(Steps, BackwardMarkerDefinesTheTail) {
  for (const bool projected_onto_comm : {false, true}) {
    TraceBuilder b;
    b.trace().ddpscope.present = true;
    b.step(0, 0, 2000);
    b.add({"backward", 0, 700, 7, 0, EventKind::GpuAnnotation, -1, 0});
    b.add({"gemm", 0, 700, 7, 0, EventKind::Kernel, -1, 0});
    if (projected_onto_comm) b.add({"backward", 650, 300, 40, 0, EventKind::GpuAnnotation, -1, 0});
    b.add({"ncclDevKernel_AllReduce", 650, 300, 40, 0, EventKind::Kernel, -1, 0});
    b.add({"sgd_update", 950, 100, 7, 0, EventKind::Kernel, -1, 0});
    const auto r = analyze(b);
    ASSERT_EQ(r.steps.size(), 1u);
    EXPECT_EQ(r.steps[0].exposed_tail_ns, 950 - 700)
        << "projected onto comm: " << projected_onto_comm;
  }
}

TEST(Steps, EventsAreAssignedByLaunchTime) {
  TraceBuilder b;
  b.step(0, 0, 100).step(1, 100, 100);
  // Launched in step 0 (host time 50), executed at 150 on the GPU.
  b.add({"cudaLaunchKernel", 50, 5, 1, 0, EventKind::Runtime, -1, -1, 77});
  b.add({"gemm", 150, 20, 7, 0, EventKind::Kernel, -1, -1, 77});
  b.add({"gemm", 160, 20, 7, 0, EventKind::Kernel});  // no launch known: by GPU time -> step 1
  const auto r = analyze(b);
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].metrics.compute_ns, 20);
  EXPECT_EQ(r.steps[1].metrics.compute_ns, 20);
}

TEST(SelectionOverlap, InsideARange) {
  TraceBuilder b;
  b.kernel("gemm", 0, 100).comm(50, 100);
  const auto t = b.build();
  const auto a = analysis::rankActivity(t);
  EXPECT_DOUBLE_EQ(*analysis::overlapPctWithin(a, 0, 100), 100.0);
  EXPECT_DOUBLE_EQ(*analysis::overlapPctWithin(a, 0, 150), 50.0);
  EXPECT_FALSE(analysis::overlapPctWithin(a, 0, 40).has_value());
}

// A trace with no events at all says so, instead of asking for CUDA activities; one with host
// events only asks for them.
TEST(Overlap, EmptyTraceIsToldApartFromOneWithoutGpuActivity) {
  const auto has = [](const analysis::RankReport& r, const std::string& words) {
    return std::any_of(r.warnings.begin(), r.warnings.end(),
                       [&](const std::string& w) { return w.find(words) != std::string::npos; });
  };
  for (const char* empty : {R"({"traceEvents":[]})", "[]"}) {
    const auto r = analysis::analyzeRank(trace::parseTraceText(empty));
    EXPECT_TRUE(has(r, "holds no events at all")) << empty;
    EXPECT_FALSE(has(r, "ProfilerActivity.CUDA")) << empty;
  }
  const auto host_only = analysis::analyzeRank(trace::parseTraceText(
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":0,"dur":5}]})"));
  EXPECT_FALSE(has(host_only, "holds no events at all"));
  EXPECT_TRUE(has(host_only, "ProfilerActivity.CUDA"));
}
