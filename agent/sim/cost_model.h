#pragma once
// The simulated device's cost model. Defaults describe one node of 8 H200 GPUs on NVLink running
// fp32 training with TF32 tensor-core GEMMs; every number can be changed from the command line.

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ddpscope::agent::sim {

struct CostModel {
  double gemm_tflops = 400.0;         // sustained TF32 GEMM rate (H200 dense TF32 peak: 494)
  double memory_gbps = 4000.0;        // sustained HBM3e bandwidth (H200 peak: 4800 GB/s)
  double kernel_min_us = 2.0;         // shortest kernel on the GPU (fixed start/finish cost)
  double launch_us = 4.0;             // host time of one cudaLaunchKernel / ncclAllReduce call
  double event_api_us = 1.0;          // host time of cudaEventRecord / cudaStreamWaitEvent / NVTX
  double allreduce_alpha_us = 1.5;    // α: latency of one ring step
  double allreduce_busbw_gbps = 370;  // B: ring bus bandwidth (NVLink 4, 8 GPUs)
  double comm_slowdown = 0.10;        // compute kernels run this much slower under NCCL kernels
  double jitter = 0.0;                // each compute kernel takes up to this fraction longer
  std::int32_t straggler_rank = -1;   // this rank's compute kernels take straggler_slowdown x
  double straggler_slowdown = 1.0;

  // Durations in ns (before jitter, straggler and communication slowdown).
  double gemmNs(std::int64_t m, std::int64_t n, std::int64_t k) const;
  double memoryNs(std::int64_t bytes) const;
  // Ring allreduce: 2(p-1)α + 2(p-1)/p · bytes/B.
  double allreduceNs(std::int64_t bytes, std::int32_t world_size) const;

  // The parameters as (key, raw JSON number) pairs for the trace's config block.
  std::vector<std::pair<std::string, std::string>> configEntries() const;
};

}  // namespace ddpscope::agent::sim
