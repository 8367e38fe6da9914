#include "agent/cuda/launch_labels.h"

#include <gtest/gtest.h>

#include "app/analysis/analysis.h"
#include "tests/common/trace_builder.h"

using namespace ddpscope;
using ddpscope::testing::TraceBuilder;
using trace::EventKind;

namespace {
constexpr std::int64_t kBase = 5'000'000;  // CUPTI time of the trace's time 0

// A CUPTI-like trace: host launches with correlation ids and the kernels they started.
TraceBuilder cuptiLike() {
  TraceBuilder b;
  b.trace().base_time_ns = 1'700'000'000'000'000'000;
  b.trace().ddpscope.clock = {
      {"cupti_to_epoch_ns", std::to_string(1'700'000'000'000'000'000 - kBase)}};
  // Launch 1: a weight-gradient GEMM (two kernels: cuBLAS split-K), launch 2: the allreduce.
  b.add({"cudaLaunchKernel", 100, 10, 1, 0, EventKind::Runtime, -1, -1, 11});
  b.add({"cudaLaunchKernel", 112, 5, 1, 0, EventKind::Runtime, -1, -1, 12});
  b.add({"sm90_xmma_gemm_splitk", 200, 50, 7, 0, EventKind::Kernel, -1, -1, 11});
  b.add({"splitKreduce_kernel", 250, 5, 7, 0, EventKind::Kernel, -1, -1, 12});
  b.add({"cuLaunchKernelEx", 300, 5, 1, 0, EventKind::Driver, -1, -1, 13});
  b.add(
      {"ncclDevKernel_AllReduce_Sum_f32_RING_LL", 400, 100, 13, 0, EventKind::Kernel, -1, -1, 13});
  b.add({"cudaMemcpy", 900, 5, 1, 0, EventKind::Runtime, -1, -1, 14});  // outside every window
  b.add({"Memcpy HtoD", 910, 5, 7, 0, EventKind::Memcpy, -1, -1, 14});
  return b;
}
}  // namespace

TEST(LaunchLabels, ApiRecordsInsideAWindowLabelTheirKernels) {
  auto b = cuptiLike();
  auto t = b.build();
  ASSERT_EQ(agent::cuda::cuptiBaseNs(t), kBase);
  const std::vector<agent::cuda::LaunchWindow> windows = {
      {kBase + 95, kBase + 120, 3, {2, -1}},     // the GEMM: both API calls inside
      {kBase + 290, kBase + 310, 3, {2, 4096}},  // the allreduce
  };
  const auto stats = agent::cuda::labelLaunches(t, windows, kBase);
  EXPECT_EQ(stats.launches_matched, 3);
  EXPECT_EQ(stats.events_labelled, 3);
  std::map<std::string, std::tuple<int, int, long>> got;
  for (const auto& tr : t.tracks) {
    if (tr.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < tr.size(); ++i) {
      got[t.names[tr.name[i]]] = {tr.step[i], tr.bucket[i], static_cast<long>(tr.bytes[i])};
    }
  }
  EXPECT_EQ(got["sm90_xmma_gemm_splitk"], std::make_tuple(3, 2, -1L));
  EXPECT_EQ(got["splitKreduce_kernel"], std::make_tuple(3, 2, -1L));
  EXPECT_EQ(got["ncclDevKernel_AllReduce_Sum_f32_RING_LL"], std::make_tuple(3, 2, 4096L));
  EXPECT_EQ(got["Memcpy HtoD"], std::make_tuple(-1, -1, -1L));
}

TEST(LaunchLabels, LabelledTraceGivesBucketsToTheAnalysis) {
  auto b = cuptiLike();
  b.trace().ddpscope.present = true;
  b.trace().ddpscope.source = "cuda";
  b.trace().ddpscope.buckets = {{2, 4096, "f32", {{"fc.weight", 4096}}}};
  b.step(3, 0, 1000);
  auto t = b.build();
  const std::vector<agent::cuda::LaunchWindow> windows = {{kBase + 95, kBase + 120, 3, {2, -1}},
                                                          {kBase + 290, kBase + 310, 3, {2, 4096}}};
  agent::cuda::labelLaunches(t, windows, agent::cuda::cuptiBaseNs(t));
  const auto r = analysis::analyzeRank(t);
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_EQ(r.buckets[0].step, 3);
  EXPECT_EQ(r.buckets[0].ready_ns, 255);  // the split-K reduce ends the gradient
  EXPECT_EQ(r.buckets[0].start_ns, 400);
  EXPECT_EQ(r.buckets[0].wait_ns, 145);
  EXPECT_TRUE(r.violations.empty());
}

TEST(LaunchLabels, MissingClockEntryIsAClearError) {
  trace::RankTrace t;
  EXPECT_THROW(agent::cuda::cuptiBaseNs(t), std::runtime_error);
}
