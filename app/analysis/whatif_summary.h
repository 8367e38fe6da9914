#pragma once
// What a what-if sweep recommends (docs/METRICS.md "What-if replay"): the predicted fastest
// bucket size, its saving against the recorded step time and the band, in one sentence. The CLI
// (`ddpscope-cli predict`) and the app's Sweep tab both state it from here. No Qt.

#include <optional>
#include <string>
#include <vector>

#include "app/analysis/whatif.h"

namespace ddpscope::analysis {

// One configuration per bucket size: `base` with its bucket_mb replaced, in the order given.
std::vector<WhatIfConfig> whatIfSweepConfigs(const std::vector<double>& sizes,
                                             const WhatIfConfig& base = {});

// The predictor's own error on a saving, in points of the step time: the most by which the
// predicted saving of one bucket size over the recorded one differed from the real saving in the
// validation against the simulator (docs/WHATIF.md, "Validation"), rounded up: 1.74 in the recorded
// scenario, 2.70 when the predictions change it (no overlap, overlap from a run without, another
// world size). A band is the fits' uncertainty only; this is the model's, so sizes predicted closer
// than it are not ranked, whatever their bands. A real GPU can differ more: a floor, not a bound.
inline constexpr double kWhatIfModelErrorPct = 2.0;
inline constexpr double kWhatIfScenarioModelErrorPct = 3.0;

struct WhatIfRecommendation {
  std::size_t prediction = 0;  // index in WhatIfResult::predictions (its `best`)
  double bucket_mb = 0;        // 0: one allreduce per tensor
  double step_us = 0;          // predicted
  double recorded_step_us = 0;
  // What the saving is measured against: the recorded step time, or, when the predictions change
  // the scenario (world size, scales, overlap other than recorded, first bucket), the recorded
  // bucket size's prediction in that scenario when there is one.
  double baseline_step_us = 0;
  // (baseline − predicted) / baseline, in %: positive when the prediction is faster.
  double saving_pct = 0;
  // Half the width of the prediction's band, in % of its step time: the larger of the distances
  // from the predicted step time to its low and its high.
  double band_pct = 0;
  // The model's own error on a saving: kWhatIfModelErrorPct, or kWhatIfScenarioModelErrorPct
  // when the predictions change the scenario (world size, scales, overlap, first bucket).
  double model_error_pct = kWhatIfModelErrorPct;
  // The saving exceeds both the band and the model's error, and the recorded size is not among
  // close_mb: worth changing the configuration.
  bool clear_saving = false;
  // The other sizes predicted within the model's error of the best (their step at most
  // model_error_pct % of the best's above it), in the order predicted, but for those host-bound
  // like the best: the prediction cannot tell them from the best, so they are worth measuring
  // before choosing.
  std::vector<double> close_mb;
  // The other sizes as close whose steps are host-bound like the best's: the host's own time sets
  // both, so they are as fast and need no measuring; counted, not listed in close_mb.
  std::size_t host_bound_alike = 0;
  // The predictions of close_mb and of the host-bound alike (indices in WhatIfResult::predictions):
  // the sizes the prediction does not rank against the best.
  std::vector<std::size_t> tied;
  // The best is the recorded size (in the recorded scenario, or in the changed one).
  bool best_is_recorded = false;
  // The saving is against the recorded size predicted in a changed scenario (baseline_step_us),
  // not against the recorded run.
  bool baseline_in_scenario = false;
  // Ranks not loaded were late by more than kWhatIfLatePeerPct of the step (WhatIfModel's virtual
  // peer): a straggler whose own work after the last allreduce this trace does not show, so no
  // saving is called clear.
  bool unloaded_ranks_late = false;
  std::string text;  // one sentence, every figure labelled as predicted
};

// The mark of prediction i where the predicted sizes are listed or drawn: the CLI's table, the
// Sweep chart's point, the design report's table (one definition). "predicted best" for the
// fastest size when the prediction ranks it first; "predicted fastest, tied" when other sizes
// are predicted within the model's error of it, and "tied with the fastest" for those;
// "predicted fastest, ranks late" when ranks not loaded were late (their own time is not in the
// trace); "predicted fastest, not clearly faster than recorded" when it is another size than the
// recorded one and its saving over the recorded configuration is within the band or the model's
// error; "" for every other size, and for all when there is no recommendation.
std::string predictionMark(const std::optional<WhatIfRecommendation>& r, std::size_t i);

// A lag of the ranks not loaded above this share of the recorded step marks them as late.
inline constexpr double kWhatIfLatePeerPct = 0.5;

// The recommendation of `result`: none when nothing was predicted (the model is unusable or no
// configuration could be replayed: the result's notes say why) or the recorded step is unknown.
std::optional<WhatIfRecommendation> recommendWhatIf(const WhatIfResult& result);

// Why a prediction's band has no width (under a nanosecond), or none when it has one: the host's
// own time sets the step (host-bound) or communication is never exposed, so neither the fit's
// residual nor the slowdown's spread moves the predicted step ("host-bound: ...").
std::optional<std::string> noBandReason(const Prediction& p);
// The noBandReason of the result's predictions, each reason once, in order of first appearance
// (what the CLI and the report state once after their tables).
std::vector<std::string> noBandReasons(const WhatIfResult& result);
// Why a host-bound size can show exposed communication that does not lengthen its step, when a
// prediction is host-bound with communication exposed (the CLI's table and the design report
// state it once after the table); none otherwise.
std::optional<std::string> hostBoundNote(const WhatIfResult& result);

// "25 MiB" or "one allreduce per tensor" (0).
std::string bucketSizeText(double bucket_mb);

// What a prediction's configuration changes of the recorded run besides the bucket size ("8 ranks
// (recorded 2), without overlap (recorded with it)"); "" when nothing (changesScenario is false).
std::string scenarioText(const WhatIfConfig& c, const WhatIfModel& m);

}  // namespace ddpscope::analysis
