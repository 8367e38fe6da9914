#pragma once
// Where each step's time goes (docs/METRICS.md, "Step breakdown"): per rank and step, the
// step's range split into disjoint parts that sum to its step time (StepBreakdown), its idle
// time attributed to what the host was doing, and the run's reading of that idle time. No Qt.

#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/launches.h"
#include "app/analysis/run_summary.h"

namespace ddpscope::analysis {

// Whether a host range is the data loader's (docs/METRICS.md "Step breakdown"): its name starts
// with "enumerate(DataLoader)", the range PyTorch's profiler records around each batch fetch.
inline bool isDataLoaderRange(std::string_view name) {
  return name.starts_with("enumerate(DataLoader)");
}

// What a rank's host was doing, as the idle attribution needs it.
struct HostActivity {
  bool has_launches = false;  // some GPU activity's host launch is in the trace
  IntervalSet pending;        // ∪ [a launch's start, the start of its GPU work)
  IntervalSet data_loader;    // ∪ data loader ranges (isDataLoaderRange)
};
// From the rank's GPU activities that `act` includes, and their launches (runtime or driver
// calls with the same correlation id) on the rank's host tracks. `launches`: the rank's launch
// times when the caller has built them already (else built here).
HostActivity hostActivity(const trace::RankTrace& rank, const RankActivity& act,
                          const LaunchTimes* launches = nullptr);

// The breakdown of the step [start, end) from the unions of the GPU work it owns (by class and
// all of it) and its rank's host activity; without its exposed split (splitStepExposed).
StepBreakdown stepBreakdown(TimeNs start, TimeNs end, const IntervalSet& comm,
                            const IntervalSet& compute, const IntervalSet& memory,
                            const IntervalSet& other, const IntervalSet& all,
                            const HostActivity& host);

// The waits of each rank for a late rank in the matched collectives (report order), and
// whether the rank is in any matched collective.
struct RankWaits {
  bool involved = false;
  IntervalSet waits;
};
std::vector<RankWaits> rankWaits(const RunReport& report);

// Splits each step's exposed communication into waiting for a late rank (inside the rank's
// waits) and the rest, for the ranks in a matched collective; `activities` in report order,
// with their steps' unions (analyzeRank).
void splitStepExposed(RunReport& report, const std::vector<RankActivity>& activities);
// Each step's exposed communication (its communication not under its computation, clipped to
// the step's range): what splitStepExposed intersects with the rank's waits.
std::vector<IntervalSet> stepExposed(const RankReport& rank, const RankActivity& activity);
// splitStepExposed from each rank's stepExposed, in the times of report.matched (the digest's
// ranks, read apart, keep only these).
void splitStepExposed(RunReport& report, const std::vector<std::vector<IntervalSet>>& exposed);

// The sum of each part of the breakdown over every rank and the selected steps (none for a
// whole-trace summary).
struct BreakdownTotals {
  std::int32_t steps = 0;  // rank-steps summed
  TimeNs step_ns = 0;
  StepBreakdown parts;  // the optional parts: summed when every step has them, else none
};
BreakdownTotals breakdownTotals(const RunReport& report, const StepSelection& selection);

// Per step number, in step order (every step of the report, warm-up included): the mean of
// each part over the ranks that have the step, or over one rank (`rank_index` in report order;
// -1: every rank). What the app's Steps tab draws.
struct StepBreakdownRow {
  std::int32_t step = 0;
  std::int32_t ranks = 0;  // ranks averaged over
  TimeNs step_ns = 0;      // mean step time
  TimeNs start_ns = 0;     // the earliest start of the step over those ranks
  StepBreakdown parts;     // mean of each part; an optional one when every rank has it
};
std::vector<StepBreakdownRow> stepBreakdownRows(const RunReport& report, int rank_index = -1);

// The run's reading of its GPU idle time, for the headline: "" when the idle time is under
// kIdleReadingPct of the step time, or not attributed; else e.g. "GPU idle 75.7 %: mostly
// host-bound (no launch pending)" (docs/METRICS.md, "Step breakdown").
inline constexpr double kIdleReadingPct = 20.0;
std::string idleReading(const RunReport& report, const RunSummary& summary);

}  // namespace ddpscope::analysis
