#pragma once
// The buckets of the steps the run summary covers, as every view of buckets shows them (the
// app's Buckets tab and its chart, the design report): which buckets, their ready time from their
// step's start, and the mean allreduce per bucket (docs/METRICS.md "Per bucket", "In the views").
// No Qt.

#include <cstdint>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"

namespace ddpscope::analysis {

// Whether a bucket or event of step `step` is in the selection: one of its steps, or any step
// (also none) when the selection is the whole trace.
bool inSelection(const StepSelection& selection, std::int32_t step);

// The bucket's ready time from the start of its step on its rank; for a bucket outside any step,
// from the rank's first GPU activity.
TimeNs readyFromStepStart(const RankReport& rank, const BucketReport& bucket);

// Per bucket id, over the loaded ranks and the selected steps: the mean allreduce, split into
// its part hidden under compute and its exposed part.
struct BucketMean {
  std::int32_t id = 0;
  std::int32_t samples = 0;  // buckets (ranks × steps) the means are over
  double hidden_ns = 0;      // mean of allreduce duration − exposed
  double exposed_ns = 0;     // mean exposed
  double wait_ns = 0;        // mean wait (allreduce start − ready)
  double ready_ns = 0;       // mean ready time from the start of its step (readyFromStepStart)
  // The bucket's size when every sample has the same known size; -1 otherwise (unknown, or an
  // inferred bucket whose id holds different allreduces in different steps).
  std::int64_t bytes = -1;
  // Its tensors when every sample has the same count from the trace's bucket list; -1 otherwise
  // (an inferred bucket has no count).
  std::int32_t tensors = -1;
};
std::vector<BucketMean> bucketMeans(const RunReport& report, const StepSelection& selection);

}  // namespace ddpscope::analysis
