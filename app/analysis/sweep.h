#pragma once
// From "what happened" to "which bucket size": a sweep's points, the recommendation, and the
// difference between two runs. Qt-free, so the app, the CLI and tests share it.

#include <optional>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"

namespace ddpscope::analysis {

// The steady-state figures of one run. Steps: every step but the first when there are at least
// three (the first pays warm-up and the bucket rebuild); step time is the slowest rank's.
struct RunSummary {
  std::int32_t ranks = 0;
  std::int32_t steps_used = 0;
  TimeNs step_ns = 0;                   // mean step time
  std::optional<double> overlap_pct;    // |hidden| / |comm| over ranks and steps used
  TimeNs exposed_ns_per_step = 0;       // mean over ranks and steps
  double allreduces_per_step = 0;       // mean over ranks and steps
  std::optional<double> dp_efficiency;  // mean over ranks and steps
  std::int32_t buckets_per_step = 0;    // rank 0, first step used
  TimeNs mean_bucket_wait_ns = 0;
};
RunSummary summarizeRun(const RunReport& report);

struct SweepPoint {
  double bucket_mb = 0;  // the --bucket-mb of the run (0: one allreduce per tensor)
  RunSummary summary;
  std::string label;  // where it came from (run folder)
};

struct SweepRecommendation {
  std::size_t best = 0;  // index of the fastest point
  double best_mb = 0;
  std::optional<double> gain_vs_current_pct;      // step-time saving of best over the current size
  std::optional<double> gain_vs_ddp_default_pct;  // ... over DDP's default 25 MB, when swept
  bool best_at_edge = false;  // the minimum is the smallest or largest size tried
  std::string text;           // one paragraph for a design review
};

// Points are sorted by bucket size here; throws std::invalid_argument when empty.
SweepRecommendation recommendBucketSize(std::vector<SweepPoint>& points, double current_mb);

// Bucket sizes a sweep tries by default: 0 (per tensor) and a log-spaced ladder up to 400 MB.
std::vector<double> defaultSweepSizes();

struct ComparisonRow {
  std::string metric;
  std::string a, b, delta;  // formatted
  double a_value = 0, b_value = 0;
};
std::vector<ComparisonRow> compareRuns(const RunReport& a, const RunReport& b);

}  // namespace ddpscope::analysis
