#include "agent/sim/cost_model.h"

#include <algorithm>
#include <cstdio>

#include "tracer/format/json_text.h"

namespace ddpscope::agent::sim {

namespace {
std::string number(double v) {
  return trace::shortestNumber(v);
}
}  // namespace

double CostModel::gemmNs(std::int64_t m, std::int64_t n, std::int64_t k) const {
  const double flops =
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  const double bytes = 4.0 * static_cast<double>(m * k + k * n + m * n);
  const double compute_ns = flops / (gemm_tflops * 1e3);  // TFLOP/s = 1e3 flop/ns
  return std::max({kernel_min_us * 1e3, compute_ns, bytes / memory_gbps});
}

double CostModel::memoryNs(std::int64_t bytes) const {
  return std::max(kernel_min_us * 1e3, static_cast<double>(bytes) / memory_gbps);  // GB/s = B/ns
}

double CostModel::allreduceNs(std::int64_t bytes, std::int32_t world_size) const {
  const double p = static_cast<double>(std::max(1, world_size));
  if (p < 2) return kernel_min_us * 1e3;
  const double latency = 2.0 * (p - 1.0) * allreduce_alpha_us * 1e3;
  const double transfer = 2.0 * (p - 1.0) / p * static_cast<double>(bytes) / allreduce_busbw_gbps;
  return std::max(kernel_min_us * 1e3, latency + transfer);
}

std::vector<std::pair<std::string, std::string>> CostModel::configEntries() const {
  return {{"sim_gemm_tflops", number(gemm_tflops)},
          {"sim_memory_gbps", number(memory_gbps)},
          {"sim_kernel_min_us", number(kernel_min_us)},
          {"sim_launch_us", number(launch_us)},
          {"sim_event_api_us", number(event_api_us)},
          {"sim_allreduce_alpha_us", number(allreduce_alpha_us)},
          {"sim_allreduce_busbw_gbps", number(allreduce_busbw_gbps)},
          {"sim_comm_slowdown", number(comm_slowdown)},
          {"sim_jitter", number(jitter)},
          {"sim_straggler_rank", number(straggler_rank)},
          {"sim_straggler_slowdown", number(straggler_slowdown)}};
}

}  // namespace ddpscope::agent::sim
