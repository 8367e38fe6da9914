// The simulated device: stream order, events, waits, collectives and the cost model.
#include <gtest/gtest.h>

#include <cmath>

#include "agent/sim/sim_device.h"

namespace ddpscope::agent::sim {
namespace {

using trace::TimeNs;

struct Ev {
  std::string name;
  TimeNs start, end;
};

std::vector<Ev> streamEvents(SimDevice& dev, StreamId stream) {
  auto& t = dev.trace();
  std::vector<Ev> out;
  const auto ti = t.findTrack(trace::TrackKind::Gpu, dev.rank(), stream);
  if (ti < 0) return out;
  const auto& track = t.tracks[static_cast<std::size_t>(ti)];
  for (std::size_t i = 0; i < track.size(); ++i)
    if (track.kind_of[i] == trace::EventKind::Kernel)
      out.push_back({t.names[track.name[i]], track.start[i], track.end(i)});
  return out;
}

GemmArgs square(SimDevice& dev, std::int64_t n) {
  const BufferId b = dev.allocate(3 * n * n, DType::F32, "gemm");
  return {
      false, false, n, n, n, 1.0f, 0.0f, {b, 0, n * n}, {b, n * n, n * n}, {b, 2 * n * n, n * n}};
}

TEST(SimDevice, CostModelDefaults) {
  const CostModel c;
  // 2 * 4096^3 flop at 400 TFLOP/s.
  EXPECT_NEAR(c.gemmNs(4096, 4096, 4096), 2.0 * 4096.0 * 4096 * 4096 / 400e3, 1.0);
  EXPECT_DOUBLE_EQ(c.memoryNs(40'000'000), 10000.0);
  EXPECT_DOUBLE_EQ(c.memoryNs(4), 2000.0);  // shortest kernel
  // Ring: 2(p-1)α + 2(p-1)/p · n/B for p = 8, n = 100 MB, α = 1.5 µs, B = 370 GB/s.
  EXPECT_NEAR(c.allreduceNs(100'000'000, 8), 14 * 1500.0 + 1.75 * 100e6 / 370.0, 1e-6);
  EXPECT_DOUBLE_EQ(c.allreduceNs(100'000'000, 1), 2000.0);
}

// As NCCL's kernels do: each rank's kernel starts when its own stream reaches the collective and
// spins until the last rank arrives; the transfer starts then, and every rank's kernel ends
// together.
TEST(SimDevice, CollectiveTransfersWhenTheLastRankArrives) {
  SimOptions o;
  o.world_size = 2;
  SimCluster cluster(o);
  for (std::int32_t r = 0; r < 2; ++r) {
    auto& dev = cluster.device(r);
    dev.beginStep(0);
    dev.gemm(kComputeStream, square(dev, r == 0 ? 4096 : 256), {});
    const auto ready = dev.createEvent();
    dev.recordEvent(ready, kComputeStream);
    dev.waitEvent(kCommStream, ready);
    const BufferId g = dev.allocate(1 << 20, DType::F32, "grads");
    dev.allreduceSum(kCommStream, {g, 0, 1 << 20}, DType::F32, {0, -1});
    const auto done = dev.createEvent();
    dev.recordEvent(done, kCommStream);
    dev.waitEvent(kComputeStream, done);
    dev.gemm(kComputeStream, square(dev, 256), {});
  }
  cluster.device(0).synchronize();
  const auto slow = streamEvents(cluster.device(0), kComputeStream);
  const auto ar0 = streamEvents(cluster.device(0), kCommStream);
  const auto ar1 = streamEvents(cluster.device(1), kCommStream);
  ASSERT_EQ(slow.size(), 2u);
  ASSERT_EQ(ar0.size(), 1u);
  ASSERT_EQ(ar1.size(), 1u);
  EXPECT_EQ(ar0[0].name, "ncclDevKernel_AllReduce_Sum_f32_RING_LL");
  // Rank 0 arrives last, when its slow GEMM ends, and only transfers; rank 1 arrived when its
  // small GEMM ended and waited inside its kernel until then.
  EXPECT_EQ(ar0[0].start, slow[0].end);
  EXPECT_EQ(ar0[0].end - ar0[0].start, std::llround(CostModel{}.allreduceNs(4 << 20, 2)));
  const auto fast = streamEvents(cluster.device(1), kComputeStream);
  EXPECT_GE(ar1[0].start, fast[0].end);  // (or its launch, when later)
  EXPECT_LT(ar1[0].start, ar0[0].start);
  EXPECT_EQ(ar1[0].end, ar0[0].end);
  // The compute stream waited for the allreduce on both ranks.
  EXPECT_GE(slow[1].start, ar0[0].end);
  EXPECT_GE(streamEvents(cluster.device(1), kComputeStream)[1].start, ar1[0].end);
}

TEST(SimDevice, LaunchesCostHostTimeAndKernelsRunInOrder) {
  SimOptions o;
  SimCluster cluster(o);
  auto& dev = cluster.device(0);
  const auto args = square(dev, 64);
  for (int i = 0; i < 3; ++i)
    dev.gemm(kComputeStream, args, {});
  EXPECT_EQ(dev.hostTimeNs(), 3 * 4000);  // 4 µs per launch
  dev.synchronize();
  const auto ev = streamEvents(dev, kComputeStream);
  ASSERT_EQ(ev.size(), 3u);
  // Tiny GEMMs are launch bound: each starts when its launch returns.
  EXPECT_EQ(ev[0].start, 4000);
  EXPECT_EQ(ev[1].start, 8000);
  EXPECT_EQ(ev[2].start, 12000);
  EXPECT_NE(ev[0].name.find("sm90_xmma_gemm"), std::string::npos);
  EXPECT_GE(dev.hostTimeNs(), ev[2].end);
}

TEST(SimDevice, MissingCollectiveOnOneRankIsAnError) {
  SimOptions o;
  o.world_size = 2;
  SimCluster cluster(o);
  auto& dev = cluster.device(0);
  const BufferId g = dev.allocate(16, DType::F32, "g");
  dev.allreduceSum(kCommStream, {g, 0, 16}, DType::F32, {});
  EXPECT_THROW(dev.synchronize(), std::logic_error);
}

TEST(SimDevice, OutOfBoundsViewsAreRejected) {
  SimCluster cluster(SimOptions{});
  auto& dev = cluster.device(0);
  const BufferId b = dev.allocate(10, DType::F32, "b");
  EXPECT_THROW(dev.columnSum(kComputeStream, {b, 0, 10}, {b, 8, 5}, 2, 5, {}), std::out_of_range);
}

TEST(SimDevice, ComputeSlowsDownUnderCommunication) {
  SimOptions o;
  o.world_size = 2;
  o.cost.comm_slowdown = 0.5;
  SimCluster cluster(o);
  for (std::int32_t r = 0; r < 2; ++r) {
    auto& dev = cluster.device(r);
    const BufferId g = dev.allocate(100 << 20, DType::F32, "g");  // 400 MB: a long allreduce
    dev.allreduceSum(kCommStream, {g, 0, 100 << 20}, DType::F32, {});
    dev.gemm(kComputeStream, square(dev, 2048), {});
  }
  cluster.drain();
  const auto gemm = streamEvents(cluster.device(0), kComputeStream);
  ASSERT_EQ(gemm.size(), 1u);
  const double alone = CostModel{}.gemmNs(2048, 2048, 2048);
  EXPECT_NEAR(static_cast<double>(gemm[0].end - gemm[0].start), 1.5 * alone, 1.0);
}

}  // namespace
}  // namespace ddpscope::agent::sim
