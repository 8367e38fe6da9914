#pragma once
// Realistic synthetic runs for benchmarks: N ranks x (compute, communication, copy) streams with
// a GEMM/NCCL/memcpy name mix, host launches with correlation ids, steps and buckets.

#include <cstdint>

#include "tracer/format/trace_model.h"

namespace ddpscope::bench {

struct SyntheticSpec {
  std::int32_t ranks = 1;
  std::int64_t events_per_rank = 1'000'000;  // GPU + host events together
  std::int32_t buckets_per_step = 16;
  std::int32_t gpu_events_per_step = 2'000;
  std::uint32_t seed = 1;
};

// One rank's trace, canonical (as the reader would produce it).
trace::RankTrace syntheticRank(const SyntheticSpec& spec, std::int32_t rank);
trace::Run syntheticRun(const SyntheticSpec& spec);

}  // namespace ddpscope::bench
