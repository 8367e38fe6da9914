#pragma once
// The reference figures of resnet50_ddp_rank0.json.gz (tests/data/README.md),
// computed independently of this project; pinned by tests/analysis/kineto_reference_test.cpp
// (the analysis) and tests/cli/summary_json_test.cpp (ddpscope-cli summary --json).
// Times in ns (the README's µs have three decimals); overlap % as an integer count of 1e-4 %
// (the README's four decimals).

#include <cstdint>

namespace ddpscope::testing::kineto_reference {

// Whole file. The README's ∪comm, ∪compute and overlap come from a float computation and
// differ from exact decimal arithmetic on the file's text by a few ns (see
// KinetoReference.Resnet50WholeFile): compare them within kWholeFileToleranceNs.
inline constexpr std::int64_t kCommunicationKernels = 21, kComputationKernels = 2679,
                              kMemoryEvents = 1074;
inline constexpr std::int64_t kCommNs = 46876492, kComputeNs = 115655843, kOverlapNs = 7317026;
inline constexpr double kOverlapPct = 15.61;  // to the 2 decimals shown
inline constexpr std::int64_t kWholeFileToleranceNs = 5;

// The --hta-compat window (HTA's default: work launched at or after the last step's start is
// dropped).
namespace hta {
inline constexpr std::int64_t kCommunicationKernels = 14, kComputationKernels = 1786,
                              kMemoryEvents = 716;
inline constexpr std::int64_t kCommNs = 24289050, kOverlapNs = 3585678;
inline constexpr double kOverlapPct = 14.76, kIdlePct = 77.23, kComputePct = 17.66;  // 2 decimals
}  // namespace hta

// Per step: step time (the ProfilerStep# range), ∪comm, overlap, overlap %, exposed.
struct StepFigures {
  std::int32_t step;
  std::int64_t dur_ns, comm_ns, overlap_ns, overlap_pct_e4, exposed_ns;
};
inline constexpr StepFigures kSteps[] = {
    {4, 222442191, 11989021, 1825259, 152244, 10163762},
    {5, 219726905, 12300029, 1760420, 143123, 10539609},
    {6, 224936243, 22587443, 3731346, 165196, 18856097},
};

// Per bucket, in the order of the file (ids 0..4 within each step): bytes, allreduce duration,
// wait (allreduce start − ready).
struct BucketFigures {
  std::int32_t step;
  std::int64_t bytes, allreduce_ns, wait_ns;
};
inline constexpr BucketFigures kBuckets[] = {
    {4, 8196000, 3306963, 195710},  {4, 31502336, 2424415, 176606}, {4, 26255360, 2368513, 147902},
    {4, 26550272, 2160803, 23776},  {4, 9724160, 1689577, 1216},    {5, 8196000, 2520607, 167293},
    {5, 31502336, 2673916, 161374}, {5, 26255360, 2621533, 146781}, {5, 26550272, 2417184, 68639},
    {5, 9724160, 2028293, 4800},    {6, 8196000, 5993392, 211197},  {6, 31502336, 5983024, 180093},
    {6, 26255360, 5807890, 126655}, {6, 26550272, 2636669, 86879},  {6, 9724160, 2129380, 1184},
};

}  // namespace ddpscope::testing::kineto_reference
