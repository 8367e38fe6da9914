#pragma once
// Statistics of a run over the whole trace or a time range (docs/METRICS.md "Statistics"): the
// kernels by total time, each stream's busy share, and a step's GPU idle %. The per-step figures
// (step time, overlap, exposed, tail, DP efficiency) are the analysis's own (StepReport). No Qt.

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/rules.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

// A time range [lo, hi); the default covers everything.
struct TimeWindow {
  TimeNs lo = std::numeric_limits<TimeNs>::min();
  TimeNs hi = std::numeric_limits<TimeNs>::max();
  bool contains(TimeNs t) const { return t >= lo && t < hi; }
};

// The GPU activities (kernels, copies, sets, synchronisations) of one name, pooled over the
// ranks given: those that start inside the window, with their whole durations.
struct KernelStats {
  std::string name;
  ActivityClass cls = ActivityClass::Computation;
  CollectiveKind kind = CollectiveKind::None;  // communication: its collective
  std::int64_t count = 0;
  TimeNs total_ns = 0;  // Σ durations
  TimeNs min_ns = 0, max_ns = 0;
  double mean_ns = 0;  // total / count
  double share = 0;    // total / Σ durations of every GPU activity counted (a fraction)
};

// The kernels of `ranks` (indices into run.ranks; empty: every rank) starting in `window`, by
// total time, longest first (ties: by name). `rules` classifies them, as the analysis did.
std::vector<KernelStats> kernelStatistics(const trace::Run& run,
                                          const std::shared_ptr<const ClassRules>& rules,
                                          const TimeWindow& window = {},
                                          const std::vector<std::size_t>& ranks = {});

// How long a stream is busy inside [lo, hi): |∪ its GPU activity ∩ [lo, hi)|. Over the whole
// trace it is StreamReport::busy_ns.
TimeNs streamBusyWithin(const trace::Track& track, TimeNs lo, TimeNs hi);

// One stream's busy share: busy time / the scope's length, where the scope is the rank's GPU span
// (first → last GPU activity, OverlapMetrics::span_ns) for the whole trace, or the window.
struct StreamStats {
  std::int32_t rank = 0;
  std::int64_t device = 0, stream = 0;
  StreamRole role = StreamRole::Compute;
  TimeNs busy_ns = 0;
  TimeNs scope_ns = 0;
  std::optional<double> busy_share;  // busy / scope (a fraction); none for an empty scope
};
// Every GPU stream of every rank of the report; `window` empty: the whole trace (the report's
// StreamReport::busy_ns over the rank's span), else the window.
std::vector<StreamStats> streamStatistics(const trace::Run& run, const RunReport& report,
                                          const std::optional<TimeWindow>& window = {});

// A step's GPU idle %: max(0, step time − GPU busy time of the step) / step time, the per-step
// term of the run summary's GPU idle % (run_summary.h); none for a step of zero length.
std::optional<double> stepGpuIdlePct(const StepReport& step);

// The headline figures of a window [lo, hi) of the timeline (docs/METRICS.md "A window of the
// timeline"), over the ranks whose activities are given (rankActivity): sums over the ranks of
//   comm = |∪comm ∩ W|, hidden = |∪comm ∩ ∪compute ∩ W|, busy = |∪all ∩ W|,
// overlap % = hidden / comm × 100 (none without communication in W), exposed = (comm − hidden) /
// ranks (a mean rank's), GPU idle % = (ranks × |W| − busy) / (ranks × |W|) × 100 (none for an
// empty window or no rank).
struct WindowFigures {
  TimeNs lo = 0, hi = 0;
  std::size_t ranks = 0;
  TimeNs comm_ns = 0, hidden_ns = 0, busy_ns = 0;
  std::optional<double> overlap_pct;
  TimeNs exposed_ns = 0;
  std::optional<double> gpu_idle_pct;
};
WindowFigures windowFigures(const std::vector<RankActivity>& activities, TimeNs lo, TimeNs hi);
// The same, each rank's activity computed with `options` (the rules the analysis used).
WindowFigures windowFigures(const trace::Run& run, const AnalysisOptions& options, TimeNs lo,
                            TimeNs hi);
// The window and its figures in one line, as every outlet prints them: "window 1.20–1.35 s:
// overlap 15.74 %, exposed 1.97 ms, GPU idle 75.7 %" (times of the window in the unit of its
// end, with the digits its length needs; "exposed … per rank" over several ranks).
std::string windowFigureText(const WindowFigures& f);

// CSV text (RFC 4180): fields quoted when they hold a comma, a quote or a line break.
std::string csvField(const std::string& field);

}  // namespace ddpscope::analysis
