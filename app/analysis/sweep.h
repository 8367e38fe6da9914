#pragma once
// From "what happened" to "which bucket size": a sweep's points, the recommendation, and the
// difference between two runs. Qt-free, so the app, the CLI and tests share it.

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"

namespace ddpscope::analysis {

struct SweepPoint {
  double bucket_mb = 0;  // the --bucket-mb of the run (0: one allreduce per tensor)
  RunSummary summary;
  std::string label;          // where it came from (run folder)
  std::string configuration;  // the run's settings but its bucket size (runConfigurationText)
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
// The metric of compareSummaries' first row: the steps each run covers, in words.
inline constexpr std::string_view kStepsCoveredMetric = "steps covered";
// Two run summaries side by side, the steps each covers first: the one definition of the rows
// (a run's summary from its traces, summarizeRun, or from its digest, as written).
std::vector<ComparisonRow> compareSummaries(const RunSummary& a, const RunSummary& b);
// compareSummaries of summarizeRun(a) and summarizeRun(b).
std::vector<ComparisonRow> compareRuns(const RunReport& a, const RunReport& b);

// What two runs must share to compare like for like.
struct RunIdentity {
  std::string source;  // "sim", "cuda", "imported", ...
  // "" when not recorded; none when not known (a digest of version 1 or 2).
  std::optional<std::string> model;
  std::int32_t world_size = 0;
};
RunIdentity runIdentity(const trace::Run& run);
// What two runs do not share of their identity, each in words ("sources differ (sim vs
// imported)"): a different source (simulated vs measured vs imported), model or world size. A
// model not known on either side is not compared. Empty when they share it.
std::vector<std::string> identityDifferences(const RunIdentity& a, const RunIdentity& b);

// A run measured at one bucket size, as a measured sweep sets it beside others (`ddpscope-cli
// sweep`, the Sweep tab's "Sweep open runs"; docs/METRICS.md "A measured sweep").
struct MeasuredRun {
  double bucket_mb = 0;
  std::string label;          // the path given, or the run's name in the app
  std::string configuration;  // runConfigurationText without its buckets: what the runs share
  RunSummary summary;
  std::vector<TimeNs> step_times;  // per selected step (selectedStepTimes)
  RunIdentity identity;
  // The producer's settings compared between runs (sweepSettings); a digest of version 1 or 2
  // keeps none.
  std::vector<std::pair<std::string, std::string>> settings;
  bool settings_known = true;  // false for a run read from a digest of version 1 or 2
  // The bucket size the run itself records (recordedBucketMb, or a digest's bucket setting when
  // it is a size); none when it records none (an imported trace).
  std::optional<double> recorded_bucket_mb;
};
// The settings every rank of a run shares but those a sweep varies or compares on their own (its
// caps, steps, run id, overlap and model): a straggler, jitter, ... as written.
std::vector<std::pair<std::string, std::string>> sweepSettings(const trace::Run& run);
// The same of one block (a run's first rank's; a digest's, digestProducer).
std::vector<std::pair<std::string, std::string>> sweepSettings(const trace::DdpscopeBlock& block);
// A loaded run as a measured sweep's run at `bucket_mb` (recordedBucketMb: the size a run
// records, configNumber of "bucket_mb"; none when it records none).
struct MeasuredRunInput {
  const trace::Run* run = nullptr;
  const RunReport* report = nullptr;
  const RunSummary* summary = nullptr;
  std::string label;
};
std::optional<double> recordedBucketMb(const trace::Run& run);
MeasuredRun measuredRun(const MeasuredRunInput& in, double bucket_mb);

// What runs set side by side do not share but what is varied (`varied`: "bucket size" for a
// sweep, "bucket configuration" for Compare): against the first run, another source, model or
// world size (identityDifferences), other ranks loaded of the same world (a run missing ranks
// the other has) and overlap on one and off on the other; against the first run that records
// settings, each setting either records (sweepSettings; numbers by value), runs recording none (a
// digest of version 1 or 2, an imported trace) left out. "Not like for like: ...; .... Differences
// may come from these (this, for one), not from the <varied>.", ending at "these." when `varied`
// is empty; or "".
std::string likeForLikeWarning(const std::vector<MeasuredRun>& runs, std::string_view varied);
// What Compare's warning says the differences are not from: "bucket configuration", or "" when
// both runs record the same bucket setting and no different overlap (their buckets are not what
// differs; the warning then ends "Differences may come from these.").
std::string comparedVaried(const RunSummary& a, const RunSummary& b);
// How a run read from its digest begins its configuration line (digestConfigurationText).
inline constexpr std::string_view kFromItsDigest = "from its digest · ";
// A configuration line without that beginning: a digest and its traces name the same one.
inline std::string_view withoutDigestPrefix(std::string_view configuration) {
  if (configuration.starts_with(kFromItsDigest)) configuration.remove_prefix(kFromItsDigest.size());
  return configuration;
}
// The configuration every run shares (MeasuredRun::configuration, a digest's "from its digest · "
// left aside: a digest and its traces share theirs), or "" when two differ: a sweep's heading
// names it only when it is every run's.
std::string sharedConfiguration(const std::vector<MeasuredRun>& runs);
// The runs whose settings likeForLikeWarning could not compare (digests of version 1 or 2 keep
// none), said: "Settings not compared for A and B: ...", or "" when every run's settings were
// compared.
std::string settingsNotComparedNote(const std::vector<MeasuredRun>& runs);

// The runs side by side by bucket size: each one's step-time spread (stepTimeSpread), the fastest
// and the runs tied with it (their mean step time within twice the standard error of the
// difference of the two means), the like-for-like warning, the recommendation (recommendBucketSize
// at `current_mb`, -1 for none) and its text with the ties said.
struct MeasuredSweep {
  std::vector<MeasuredRun> runs;   // by bucket size
  std::vector<SweepPoint> points;  // the same order
  std::vector<std::optional<TimeNs>> spread;
  std::size_t best = 0;
  std::vector<std::size_t> tied;
  std::string warning;  // "Not like for like: ...", or ""
  std::string note;     // settingsNotComparedNote, or ""
  SweepRecommendation recommendation;
  std::string text;  // recommendation.text, and the ties
  // "fastest", "fastest, tied", "tied" or "".
  std::string mark(std::size_t i) const;
};
// None, with *error, when a run has no training steps, two runs are at one size, or two runs
// have the same step times without recording two different sizes (one run given twice).
std::optional<MeasuredSweep> measuredSweep(std::vector<MeasuredRun> runs, double current_mb,
                                           std::string* error);

}  // namespace ddpscope::analysis
