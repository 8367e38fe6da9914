#pragma once
// The run summary: every run-level figure ddpscope states (the app's headline, an exported
// figure's title, Compare, Sweep, the design report, `ddpscope-cli summary --json`'s `run`),
// computed here and nowhere else, over a step selection that is stated with the figures.
// Definitions: docs/METRICS.md, "Run summary". No Qt.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "app/analysis/analysis.h"

namespace ddpscope::analysis {

// Which steps the run-level figures cover, and why.
struct StepSelection {
  std::vector<std::int32_t> used;     // ascending step numbers
  std::vector<std::int32_t> warm_up;  // on every rank but left out as warm-up (the first)
  std::vector<std::int32_t> partial;  // on some ranks only: left out
  // On every rank, but some rank's last step and under half that rank's median step: the trace
  // ends inside it (a profiler stopped, a crash). Left out, with the ranks (cut_short_ranks).
  std::vector<std::int32_t> cut_short;
  std::vector<std::int32_t> cut_short_ranks;
  // No whole step on every rank (none, or each common one cut short): the whole trace is
  // summarised.
  bool whole_trace = false;
  std::string rule;  // in words, e.g. "steps 5–6 (step 4 left out as warm-up)"
};
// Steps on every rank of the report, but a step cut short by the end of a rank's trace; the first
// of three or more is left out as warm-up (it pays allocator warm-up, communicator set-up and
// DDP's bucket rebuild).
StepSelection selectSteps(const RunReport& report);

// One rank's figures over the run's step selection (the same definitions as the run's, over
// that rank's steps alone): what the per-rank table shows beside the whole-trace figures.
// The GPU idle time of a step: its time with no GPU activity, max(0, step time − |∪ GPU
// activity in the step|) (docs/METRICS.md, "Run summary").
TimeNs stepIdleNs(const StepReport& step);

// A producer setting as a person reads it: its raw JSON value without the quotes of a string
// ("\"mlp\"" -> mlp; 25 stays 25).
std::string unquoted(std::string_view raw);

struct RankFigures {
  std::int32_t rank = 0;
  TimeNs step_ns = 0;              // mean step time over the selected steps; 0 without steps
  TimeNs exposed_ns_per_step = 0;  // whole trace: the rank's exposed communication
  std::optional<double> overlap_pct;
  std::optional<double> dp_efficiency;  // a fraction
  std::optional<double> gpu_idle_pct;
};

// Per step across ranks: the mean step time and the mean exposed communication (every step on
// any rank, warm-up included, in step order), as the per-step chart draws them.
struct StepMean {
  std::int32_t step = 0;
  std::int32_t ranks = 0;  // ranks that have the step
  TimeNs step_ns = 0;
  TimeNs exposed_ns = 0;
};
std::vector<StepMean> stepMeans(const RunReport& report);

// Per selected step, in step order, the step time as the run summary's step_ns averages it: the
// slowest rank's. `per_rank_steps` gives each rank's (step, duration) pairs.
std::vector<TimeNs> selectedStepTimes(
    const std::vector<std::vector<std::pair<std::int32_t, TimeNs>>>& per_rank_steps,
    const StepSelection& selection);
std::vector<TimeNs> selectedStepTimes(const RunReport& report, const StepSelection& selection);
// The step-to-step spread of a run's step time: the standard deviation of those step times
// (n − 1 in the denominator); none with fewer than two steps.
std::optional<TimeNs> stepTimeSpread(const std::vector<TimeNs>& step_times);

// A step a design report draws on its own (docs/METRICS.md, "Steps drawn one by one"): the
// median of the selected steps by step time (the slowest rank's, as step_ns averages it; of two
// middle steps the faster, of equal times the earlier), and the slowest of them (of equal times
// the earlier) when it is more than kSlowStepShownAbove times the median's. None without selected
// steps (a whole-trace run).
struct ShownStep {
  std::int32_t step = 0;
  TimeNs step_ns = 0;
  bool slowest = false;  // false: the median step
  std::string caption;   // e.g. "Step 31, the median of the 59 steps covered (9.20 ms)"
};
inline constexpr double kSlowStepShownAbove = 1.05;
std::vector<ShownStep> stepsToShow(const RunReport& report, const StepSelection& selection);

// The time window of step `number`: from the earliest start to the latest end of its ranges on
// every rank that has it (a step may be marked by several ranges; the slowest rank's tail is in
// it); none when no rank has such a step.
std::optional<std::pair<TimeNs, TimeNs>> stepWindow(const trace::Run& run, std::int32_t number);

struct RunSummary {
  std::int32_t ranks = 0;       // ranks with a trace
  std::int32_t world_size = 0;  // the world the traces declare (0 when no rank)
  std::vector<std::int32_t> missing_ranks;
  // Completeness::first_quiet_*: the rank that went quiet first in a run cut short (-1: none).
  std::int32_t first_quiet_rank = -1;
  TimeNs first_quiet_ahead_ns = 0;
  StepSelection selection;
  std::int32_t steps_used = 0;  // selection.used.size()

  // Mean over the selected steps of the slowest rank's step time; 0 without steps.
  TimeNs step_ns = 0;
  // Σ hidden / Σ communication over ranks × selected steps (whole trace: over whole files).
  std::optional<double> overlap_pct;
  // Σ exposed / (ranks × selected steps). Whole trace: the mean per rank of the whole trace's
  // exposed communication (then it is not "per step": see selection.whole_trace).
  TimeNs exposed_ns_per_step = 0;
  // Of it, the part inside waits for a late rank (the steps' exposed_wait_ns, matched collectives):
  // Σ / (ranks × selected steps), a step without the figure counting 0; none without steps or
  // when no collective was matched across ranks (one rank loaded, no communication).
  std::optional<TimeNs> exposed_wait_ns_per_step;
  // Σ compute-only critical path / Σ step time over ranks × selected steps (a fraction: 1 − Σ
  // exposed / Σ step time, each step's exposed counted up to its step time); none without steps
  // or without GPU work in them.
  std::optional<double> dp_efficiency;
  // Σ max(0, step time − GPU busy) / Σ step time over ranks × selected steps; whole trace:
  // Σ idle / Σ span of the temporal breakdown. A percentage; none without GPU work.
  std::optional<double> gpu_idle_pct;
  double allreduces_per_step = 0;     // mean over ranks × selected steps
  std::int32_t buckets_per_step = 0;  // the first rank loaded, first selected step
  TimeNs mean_bucket_wait_ns = 0;     // the first rank's buckets in the selected steps

  std::vector<RankFigures> per_rank;  // in the report's rank order
  // The first rank's recorded bucket settings (RankReport::bucket_setting, overlap_setting).
  std::string bucket_setting;
  std::optional<bool> overlap_setting;

  bool hasSteps() const { return steps_used > 0; }
};
RunSummary summarizeRun(const RunReport& report);

// Why the run's overlap is low, when the summary alone says why: "" or, for a run recorded
// without overlap (every allreduce launched after backward), that only the work after backward
// can hide communication; with one or two gradient buckets per step (DDP's small first one, then
// the rest) and overlap under kLowOverlapPct, that they are reduced only when the backward pass
// has finished (docs/METRICS.md, "The overlap reading").
inline constexpr double kLowOverlapPct = 5.0;
std::string overlapReading(const RunSummary& s);

// The run summary's figures as every outlet prints them (the app's headline, a figure's title,
// the design report, the CLI's text): formatted once, so that they never differ in a digit.
struct RunFigureText {
  std::string ranks;          // "8 ranks", "1 of 2 ranks"
  std::string scope;          // the step rule (StepSelection::rule)
  std::string step;           // "222 ms", or "n/a" without steps
  std::string overlap;        // "15.74 %", or "n/a" without communication
  std::string exposed;        // "11.8 ms/step", or "23.4 ms" for a whole-trace summary
  std::string dp_efficiency;  // "94.7 %", or "n/a"
  std::string gpu_idle;       // "76.1 %", or "n/a"
  // "14" (a whole number when every step has as many), "13.5" (a mean with a fraction), or
  // "n/a (no steps)".
  std::string allreduces;
};
RunFigureText runFigureText(const RunSummary& summary);
// A percentage as the figures print it: `decimals` digits and " %", or "n/a".
std::string percentText(const std::optional<double>& pct, int decimals);
// A signed difference with its unit: "+1.2 %", "-0.4 pts"; no sign when it rounds to zero from
// either side ("0.0 %", never "-0.0 %").
std::string signedText(double v, int decimals, std::string_view unit = " %");
// A size in MiB as every outlet prints it, the number alone: shortest form and never an
// exponent ("0.5", "25", "1000000").
std::string mibNumberText(double mib);

// What a run is, in one line, for every section of a report or a comparison that must say
// which run it covers: source, model, backend, world size and bucket configuration, from the
// first rank's `ddpscope` block (or distributedInfo for imported traces), e.g. "simulated ·
// transformer, 12 layers, hidden 768 · backend sim · 8 ranks · buckets 25 MiB (first 1 MiB),
// overlapped"; "1 of 2 ranks" when fewer ranks are loaded than the world has. Settings the trace
// does not say are left out ("bucket size not recorded").
std::string runConfigurationText(const trace::Run& run, bool with_buckets = true);
// What it says of the producer after the source: " · mlp, 4 layers, hidden 1024 · backend nccl"
// (the model's pieces the block records; the block's backend, else the trace's distributed
// backend); "" when neither is recorded. A run digest's line says the same (digestProducer).
std::string producerText(const trace::DdpscopeBlock& block, std::string_view distributed_backend);
// A trace's source as the configuration line names it: "simulated", "CUDA (measured)",
// "predicted (...)", "imported".
std::string sourceText(std::string_view source);
// The bucket cap a trace records: "25 MiB (first 1 MiB)", "per tensor", or "" when it records
// none (imported traces).
std::string bucketSettingText(const trace::DdpscopeBlock& block);
// Whether the trace records allreduces overlapped with backward; none when it does not say.
std::optional<bool> overlapSetting(const trace::DdpscopeBlock& block);
// A numeric setting of the configuration ("bucket_mb"); none when absent or not a number.
std::optional<double> configNumber(const trace::DdpscopeBlock& block, std::string_view key);

// "steps 5–6" / "steps 1, 3 and 4" / "step 2": a sorted list of step numbers in words.
std::string stepListText(const std::vector<std::int32_t>& steps);

}  // namespace ddpscope::analysis
