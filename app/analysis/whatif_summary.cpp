#include "app/analysis/whatif_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"

namespace ddpscope::analysis {

namespace {
std::string durationText(double us) {
  return formatDuration(static_cast<TimeNs>(std::llround(us * 1e3)));
}
std::string pctText(double v, int decimals = 1) {
  char b[32];
  std::snprintf(b, sizeof b, "%.*f %%", decimals, v);
  return b;
}
// "one allreduce per tensor, 1, 2 and 5 MiB".
std::string sizeListText(std::vector<double> sizes) {
  std::sort(sizes.begin(), sizes.end());  // per tensor (0) first, the MiB after it
  std::vector<std::string> items;
  bool any_mib = false;
  for (double mb : sizes) {
    if (mb == 0) {
      items.push_back(bucketSizeText(0));
      continue;
    }
    items.push_back(mibNumberText(mb));
    any_mib = true;
  }
  std::string t;
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0) t += i + 1 == items.size() ? " and " : ", ";
    t += items[i];
  }
  if (any_mib) t += " MiB";
  return t;
}
}  // namespace

std::vector<WhatIfConfig> whatIfSweepConfigs(const std::vector<double>& sizes,
                                             const WhatIfConfig& base) {
  std::vector<WhatIfConfig> out;
  out.reserve(sizes.size());
  for (double s : sizes) {
    WhatIfConfig c = base;
    c.bucket_mb = s;
    out.push_back(c);
  }
  return out;
}

std::string bucketSizeText(double bucket_mb) {
  if (bucket_mb == 0) return "one allreduce per tensor";
  return mibNumberText(bucket_mb) + " MiB";
}

std::string scenarioText(const WhatIfConfig& c, const WhatIfModel& m) {
  if (!changesScenario(c, m)) return "";
  std::vector<std::string> parts;
  if (c.world_size != 0 && c.world_size != m.world_size)
    parts.push_back(std::to_string(c.world_size) + " ranks (recorded " +
                    std::to_string(m.world_size) + ")");
  if (c.overlap != m.recorded_overlap)
    parts.push_back(c.overlap ? "with overlap (recorded without)"
                              : "without overlap (recorded with it)");
  const auto scale = [](double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%g", x);
    return std::string(b);
  };
  if (c.network_scale != 1)
    parts.push_back("collectives taking " + scale(c.network_scale) + "× as long");
  if (c.compute_scale != 1)
    parts.push_back("compute taking " + scale(c.compute_scale) + "× as long");
  if (c.first_bucket_mb) parts.push_back("first bucket " + bucketSizeText(*c.first_bucket_mb));
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : ", ") + p;
  return out;
}

std::optional<std::string> noBandReason(const Prediction& p) {
  // Zero to the nanosecond (the base replay's error may widen it by a rounding error).
  if (p.step_us_high - p.step_us_low >= 1e-3) return std::nullopt;
  if (p.host_bound)
    return "host-bound: the host's own time sets the step, so neither the communication cost "
           "nor its fit's uncertainty moves it; no band";
  if (p.exposed_comm_us <= 0)
    return "communication is never exposed, so the fit's uncertainty does not move the step; no "
           "band";
  return std::nullopt;
}

std::optional<std::string> hostBoundNote(const WhatIfResult& result) {
  for (const auto& p : result.predictions)
    if (p.host_bound && p.exposed_comm_us > 0)
      return std::string(
          "the host's own time sets the step, and the GPU waits for its next "
          "launches; the exposed communication of such a size runs in that wait, so it does not "
          "add to the step (the bucket size changes the step little there)");
  return std::nullopt;
}

std::vector<std::string> noBandReasons(const WhatIfResult& result) {
  std::vector<std::string> out;
  for (const auto& p : result.predictions)
    if (const auto why = noBandReason(p);
        why && std::find(out.begin(), out.end(), *why) == out.end())
      out.push_back(*why);
  return out;
}

std::string predictionMark(const std::optional<WhatIfRecommendation>& r, std::size_t i) {
  if (!r) return {};
  if (i == r->prediction) {
    if (!r->tied.empty()) return "predicted fastest, tied";
    if (r->unloaded_ranks_late) return "predicted fastest, ranks late";
    // Faster than the recorded configuration by less than the band or the model's error.
    if (!r->clear_saving && !r->best_is_recorded)
      return "predicted fastest, not clearly faster than recorded";
    return "predicted best";
  }
  return std::find(r->tied.begin(), r->tied.end(), i) != r->tied.end() ? "tied with the fastest"
                                                                       : std::string();
}

std::optional<WhatIfRecommendation> recommendWhatIf(const WhatIfResult& result) {
  if (!result.model.usable || !result.best || *result.best >= result.predictions.size() ||
      !(result.base_step_us > 0))
    return std::nullopt;
  const Prediction& p = result.predictions[*result.best];
  if (!(p.step_us > 0)) return std::nullopt;
  WhatIfRecommendation r;
  r.prediction = *result.best;
  r.bucket_mb = p.config.bucket_mb;
  r.step_us = p.step_us;
  r.recorded_step_us = result.base_step_us;
  const WhatIfConfig& c = p.config;
  // Another scenario than the recorded one (world size, network, compute, overlap, first bucket):
  // sizes compare with the recorded size in that scenario, when it was predicted, not with the
  // recorded run (which had none of those changes).
  // Overlap counts against the recorded setting: a run recorded without it, predicted with it,
  // is another scenario too.
  const bool scenario_changed = changesScenario(c, result.model);
  const Prediction* base_in_scenario = nullptr;
  if (scenario_changed && result.base_bucket_mb) {
    for (const auto& q : result.predictions)
      if (q.config.bucket_mb == *result.base_bucket_mb && q.step_us > 0) base_in_scenario = &q;
  }
  if (scenario_changed) r.model_error_pct = kWhatIfScenarioModelErrorPct;
  const double base = base_in_scenario ? base_in_scenario->step_us : result.base_step_us;
  r.baseline_step_us = base;
  r.baseline_in_scenario = base_in_scenario != nullptr;
  r.saving_pct = 100.0 * (base - p.step_us) / base;
  r.band_pct = 100.0 * std::max(p.step_us - p.step_us_low, p.step_us_high - p.step_us) / p.step_us;
  r.clear_saving = r.saving_pct > std::max(r.band_pct, r.model_error_pct);
  for (std::size_t i = 0; i < result.predictions.size(); ++i) {
    const Prediction& q = result.predictions[i];
    if (i == r.prediction || !(q.step_us > 0) ||
        100.0 * (q.step_us - p.step_us) / p.step_us > r.model_error_pct)
      continue;
    // Both host-bound: the host's own time sets both steps, not the model of the GPU's work.
    if (p.host_bound && q.host_bound)
      ++r.host_bound_alike;
    else
      r.close_mb.push_back(q.config.bucket_mb);
    r.tied.push_back(i);
  }
  // The recorded size predicted within the model's error of the best is no clear saving either,
  // whatever the saving against the measured step says (the sentence would contradict itself).
  if (result.base_bucket_mb &&
      std::find(r.close_mb.begin(), r.close_mb.end(), *result.base_bucket_mb) != r.close_mb.end())
    r.clear_saving = false;
  // Ranks not loaded that were late: their own time after the last allreduce is not in the trace.
  const double most_lag_us = result.model.peer_lag_max_us.value_or(0);
  r.unloaded_ranks_late = most_lag_us > kWhatIfLatePeerPct / 100.0 * result.base_step_us;
  const bool within_error = !r.clear_saving;  // before the late ranks' say
  if (r.unloaded_ranks_late) r.clear_saving = false;
  // The fastest size may be the one recorded (in the recorded scenario, or in the changed one):
  // no change of size to advise.
  const bool recorded = result.base_bucket_mb && c.bucket_mb == *result.base_bucket_mb &&
                        (!scenario_changed || base_in_scenario);
  r.best_is_recorded = recorded;
  std::string t = "Predicted";
  if (c.overlap != result.model.recorded_overlap)
    t += c.overlap ? " with overlap (the run was recorded without)"
                   : " without overlap (the run was recorded with it)";
  t += ": ";
  t += c.bucket_mb == 0 ? "one allreduce per tensor" : bucketSizeText(c.bucket_mb) + " buckets";
  if (recorded) t += " (the recorded size)";
  const auto why = noBandReason(p);
  // A saving that rounds to nothing (under 0.05 %): "the same", and "a difference".
  const bool same = pctText(std::abs(r.saving_pct)) == pctText(0);
  // A saving that reads as its limit ("2.0 % less ... within the model's own error (2.0 %)")
  // is given a digit more, so that the sentence shows which side of the limit it is on.
  const int digits =
      !same && pctText(std::abs(r.saving_pct)) == pctText(std::max(r.band_pct, r.model_error_pct))
          ? 2
          : 1;
  // The band, or why there is none (a "±0.0 %" would read as a prediction exact to the digit).
  const std::string band =
      " (" +
      (why                                 ? *why
       : pctText(r.band_pct) == pctText(0) ? std::string("a band under ±0.05 %")
                                           : "±" + pctText(r.band_pct, digits)) +
      ")";
  if (recorded && base_in_scenario) {  // compared with itself: only its own figure
    t += " would take " + durationText(p.step_us) + " per step" + band;
  } else {
    t += " would take " + durationText(p.step_us) + " per step, ";
    const std::string against =
        base_in_scenario ? "the recorded size (" + bucketSizeText(*result.base_bucket_mb) +
                               ") in the same scenario, predicted " + durationText(base)
                         : "the recorded " + durationText(result.base_step_us);
    // A difference that rounds to nothing reads as "the same", not "0.0 % less".
    if (same)
      t += "the same as " + against + " to within 0.05 %";
    else
      t += pctText(std::abs(r.saving_pct), digits) + (r.saving_pct >= 0 ? " less" : " more") +
           " than " + against;
    t += band;
  }
  if (recorded) {
    r.clear_saving = false;
    // "Predicted", never "tried": nothing was run at the other sizes.
    const bool alone = result.predictions.size() == 1;
    t +=
        base_in_scenario
            ? (alone ? ": the only size predicted in this scenario"
                     : ": the recorded size is the fastest of the sizes predicted in this scenario")
            : (alone ? ": the only size predicted (the difference is the replay's own error)"
                     : ": the recorded size is the fastest of the sizes predicted (the "
                       "difference is the replay's own error)");
  } else if (r.saving_pct <= 0) {
    t += ": no size predicted is faster than the recorded configuration";
  } else if (p.host_bound && within_error && why) {
    // What settles it, said in the parenthesis: the host's own time sets the step there, so
    // nothing the model is unsure of moves it.
    t += ": no clear saving";
  } else if (r.unloaded_ranks_late) {
    t += ": no clear saving";  // why: the next sentence
  } else if (!r.clear_saving) {
    t += std::string(": a ") + (same ? "difference" : "saving") +
         " within the band or the model's own error (" + pctText(r.model_error_pct, digits) +
         "), so no size predicted is clearly faster than the recorded configuration";
  }
  t += ".";
  // Whatever the sentence concluded: the straggler's own time is missing from every prediction.
  if (r.unloaded_ranks_late)
    t += " The ranks not loaded were late (up to " + durationText(most_lag_us) +
         " behind this rank): a straggler's own work after the last allreduce is not in this "
         "trace, and it may set the step; load every rank's file to rank the sizes.";
  if (!r.close_mb.empty()) {
    t +=
        " The prediction cannot rank sizes closer than its own error against the simulator (" +
        pctText(r.model_error_pct, digits) + "): " + sizeListText(r.close_mb) +
        (r.close_mb.size() == 1 ? " is" : " are") + " predicted within it of " +
        bucketSizeText(c.bucket_mb) + "; measure " +
        (r.close_mb.size() == 1 ? std::string("both") : "them and " + bucketSizeText(c.bucket_mb)) +
        " to choose among them.";
  }
  if (r.host_bound_alike > 0)
    t += " At " + std::to_string(r.host_bound_alike) + " other size" +
         (r.host_bound_alike == 1 ? "" : "s") +
         " the step is host-bound as well: the host's own time sets it there, so the bucket size "
         "changes it little.";
  r.text = std::move(t);
  return r;
}

}  // namespace ddpscope::analysis
