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

struct WhatIfRecommendation {
  std::size_t prediction = 0;  // index in WhatIfResult::predictions (its `best`)
  double bucket_mb = 0;        // 0: one allreduce per tensor
  double step_us = 0;          // predicted
  double recorded_step_us = 0;
  // What the saving is measured against: the recorded step time, or, when the predictions change
  // the scenario (world size, scales, no overlap, first bucket), the recorded bucket size's
  // prediction in that scenario when there is one.
  double baseline_step_us = 0;
  // (baseline − predicted) / baseline, in %: positive when the prediction is faster.
  double saving_pct = 0;
  // Half the width of the prediction's band, in % of its step time: the larger of the distances
  // from the predicted step time to its low and its high.
  double band_pct = 0;
  // The saving exceeds both the band and 0.5 % of the step: worth changing the configuration.
  bool clear_saving = false;
  std::string text;  // one sentence, every figure labelled as predicted
};

// The recommendation of `result`: none when nothing was predicted (the model is unusable or no
// configuration could be replayed: the result's notes say why) or the recorded step is unknown.
std::optional<WhatIfRecommendation> recommendWhatIf(const WhatIfResult& result);

// Why a prediction's band has no width (under a nanosecond), or none when it has one: the host's
// own time sets the step (host-bound) or communication is never exposed, so neither the fit's
// residual nor the slowdown's spread moves the predicted step ("host-bound: ...").
std::optional<std::string> noBandReason(const Prediction& p);

// "25 MiB" or "one allreduce per tensor" (0).
std::string bucketSizeText(double bucket_mb);

}  // namespace ddpscope::analysis
