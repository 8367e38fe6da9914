#include "app/cli/predict_command.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>

#include "app/analysis/analysis.h"
#include "app/analysis/collectives.h"
#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/sweep.h"
#include "app/analysis/whatif.h"
#include "app/analysis/whatif_summary.h"
#include "tracer/format/json_text.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::cli {

namespace {

using namespace ddpscope::analysis;

struct BadArgument : std::runtime_error {
  using std::runtime_error::runtime_error;
};

double parseSize(const std::string& text, const std::string& option) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used == 0 || used != text.size() || !std::isfinite(v) || v < 0 || v > 1e6)
    throw BadArgument(option + ": '" + text +
                      "' is not a size in MiB (a number from 0 to 1000000)");
  return v;
}

std::vector<double> parseSizeList(const std::string& text) {
  std::vector<double> out;
  if (text.empty()) throw BadArgument("--bucket-mb: an empty list (give e.g. 0,5,25,100)");
  std::size_t at = 0;
  while (true) {
    const auto comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? comma : comma - at);
    out.push_back(parseSize(item, "--bucket-mb"));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

std::string mb(double v) {
  return mibNumberText(v);
}
std::string us(double v) {
  char b[48];
  if (std::abs(v) >= 1e6)
    std::snprintf(b, sizeof b, "%.3f s", v / 1e6);
  else if (std::abs(v) >= 1e3)
    std::snprintf(b, sizeof b, "%.3f ms", v / 1e3);
  else
    std::snprintf(b, sizeof b, "%.1f µs", v);
  return b;
}

void key(std::string& o, const char* k) {
  trace::appendJsonString(o, k);
  o += ": ";
}
void num(std::string& o, const char* k, double v, int decimals = 3) {
  key(o, k);
  trace::appendDouble(o, v, decimals);
}
void optNum(std::string& o, const char* k, const std::optional<double>& v, int decimals = 3) {
  key(o, k);
  if (v)
    trace::appendDouble(o, *v, decimals);
  else
    o += "null";
}

std::string toJson(const WhatIfResult& r, std::int32_t world_size) {
  const auto& m = r.model;
  std::string o = "{";
  key(o, "predicted");
  o += "true, ";
  key(o, "base");
  o += "{";
  optNum(o, "bucket_mb", r.base_bucket_mb);
  o += ", ";
  // Recorded: null without steps (as the run summary's step time), never 0.
  const bool steps = r.base_step_us > 0;
  optNum(o, "step_us", steps ? std::optional(r.base_step_us) : std::nullopt);
  o += ", ";
  // The replay's figures: null when the model could not replay the run.
  const auto replayed = [&](const std::optional<double>& v) { return m.usable ? v : std::nullopt; };
  optNum(o, "predicted_step_us", replayed(r.base_predicted_step_us));
  o += ", ";
  optNum(o, "replay_error_pct", replayed(replayErrorPct(r.base_predicted_step_us, r.base_step_us)));
  o += ", ";
  optNum(o, "gpu_end_us", steps && m.usable ? std::optional(r.base_gpu_end_us) : std::nullopt);
  o += ", ";
  optNum(o, "predicted_gpu_end_us", replayed(r.base_predicted_gpu_end_us));
  o += ", ";
  optNum(o, "overlap_pct", m.recorded_overlap_pct, 4);
  o += ", ";
  optNum(o, "predicted_overlap_pct", replayed(r.base_predicted_overlap_pct), 4);
  o += ", ";
  num(o, "exposed_comm_us", m.recorded_exposed_us);
  o += ", ";
  optNum(o, "predicted_exposed_comm_us", replayed(r.base_predicted_exposed_us));
  o += ", ";
  key(o, "world_size");
  trace::appendInt(o, m.world_size);
  o += ", ";
  key(o, "step_rule");
  trace::appendJsonString(o, m.selection.rule);
  o += "}, ";
  key(o, "fit");
  o += "{";
  key(o, "gradient_production");
  trace::appendJsonString(o, m.production_source);
  o += ", ";
  // Whether a predicted bucket's `tensors` counts the trace's parameters, or pieces of the
  // recorded buckets' bytes where the trace has no parameter list.
  key(o, "tensors_are_parameters");
  o += m.per_tensor_known ? "true" : "false";
  o += ", ";
  key(o, "communication");
  o += "[";
  for (std::size_t i = 0; i < m.comm.size(); ++i) {
    const auto& f = m.comm[i];
    if (i) o += ", ";
    o += "{";
    key(o, "kind");
    trace::appendJsonString(o, collectiveKindName(f.kind));
    o += ", ";
    key(o, "ranks");
    trace::appendInt(o, f.ranks);
    o += ", ";
    num(o, "alpha_us", f.alpha_us);
    o += ", ";
    num(o, "beta_us_per_mib", f.beta_us_per_mib);
    o += ", ";
    optNum(o, "ring_alpha_us", f.ring_alpha_us);
    o += ", ";
    optNum(o, "busbw_gbps", f.busbw_gbps);
    o += ", ";
    key(o, "samples");
    trace::appendInt(o, f.samples);
    o += ", ";
    num(o, "residual_rms_us", f.residual_rms_us);
    o += ", ";
    num(o, "residual_pct", f.residual_pct);
    o += ", ";
    num(o, "worst_residual_pct", f.worst_residual_pct);
    o += ", ";
    key(o, "method");
    trace::appendJsonString(o, f.method);
    o += "}";
  }
  o += "], ";
  key(o, "compute_slowdown");
  o += "{";
  num(o, "factor", m.slowdown.factor, 4);
  o += ", ";
  num(o, "spread", m.slowdown.spread, 4);
  o += ", ";
  key(o, "fitted");
  o += m.slowdown.fitted ? "true" : "false";
  o += ", ";
  key(o, "kernels_with_comm");
  trace::appendInt(o, m.slowdown.with_comm);
  o += ", ";
  key(o, "kernels_without_comm");
  trace::appendInt(o, m.slowdown.without_comm);
  o += "}";
  if (m.optimizer_per_bucket) {
    o += ", ";
    key(o, "optimizer_update");
    o += "{";
    num(o, "alpha_us", m.update_cost.intercept);
    o += ", ";
    num(o, "beta_us_per_mib", m.update_cost.slope);
    o += ", ";
    num(o, "shortest_kernel_us", m.shortest_kernel_us);
    o += "}";
  }
  o += "}, ";
  key(o, "predictions");
  o += "[";
  const auto marks_from = recommendWhatIf(r);
  for (std::size_t i = 0; i < r.predictions.size(); ++i) {
    const auto& p = r.predictions[i];
    if (i) o += ", ";
    o += "{";
    num(o, "bucket_mb", p.config.bucket_mb);
    o += ", ";
    num(o, "first_bucket_mb",
        p.config.first_bucket_mb ? *p.config.first_bucket_mb : std::min(1.0, p.config.bucket_mb));
    o += ", ";
    key(o, "overlap");
    o += p.config.overlap ? "true" : "false";
    o += ", ";
    key(o, "world_size");
    trace::appendInt(o, world_size > 0 ? world_size : m.world_size);
    o += ", ";
    num(o, "network_scale", p.config.network_scale);
    o += ", ";
    num(o, "compute_scale", p.config.compute_scale);
    o += ", ";
    num(o, "step_us", p.step_us);
    o += ", ";
    num(o, "step_us_low", p.step_us_low);
    o += ", ";
    num(o, "step_us_high", p.step_us_high);
    o += ", ";
    optNum(o, "overlap_pct", p.overlap_pct);
    o += ", ";
    num(o, "exposed_comm_us", p.exposed_comm_us);
    o += ", ";
    key(o, "host_bound");
    o += p.host_bound ? "true" : "false";
    o += ", ";
    key(o, "mark");
    trace::appendJsonString(o, predictionMark(marks_from, i));
    o += ", ";
    key(o, "buckets");
    o += "[";
    for (std::size_t b = 0; b < p.bucket_list.size(); ++b) {
      const auto& x = p.bucket_list[b];
      if (b) o += ", ";
      o += "{";
      key(o, "id");
      trace::appendInt(o, x.id);
      o += ", ";
      key(o, "bytes");
      trace::appendInt(o, x.bytes);
      o += ", ";
      key(o, "tensors");
      trace::appendInt(o, x.tensors);
      o += ", ";
      num(o, "ready_us", x.ready_us);
      o += ", ";
      num(o, "start_us", x.start_us);
      o += ", ";
      num(o, "end_us", x.end_us);
      o += "}";
    }
    o += "]}";
  }
  o += "], ";
  key(o, "best");
  if (r.best) {
    o += "{";
    num(o, "bucket_mb", r.predictions[*r.best].config.bucket_mb);
    o += ", ";
    num(o, "step_us", r.predictions[*r.best].step_us);
    o += "}";
  } else {
    o += "null";
  }
  o += ", ";
  key(o, "recommendation");
  if (const auto rec = recommendWhatIf(r)) {
    o += "{";
    num(o, "bucket_mb", rec->bucket_mb);
    o += ", ";
    num(o, "saving_pct", rec->saving_pct, 4);
    o += ", ";
    num(o, "baseline_step_us", rec->baseline_step_us);
    o += ", ";
    num(o, "band_pct", rec->band_pct, 4);
    o += ", ";
    num(o, "model_error_pct", rec->model_error_pct, 4);
    o += ", ";
    key(o, "clear_saving");
    o += rec->clear_saving ? "true" : "false";
    o += ", ";
    key(o, "close_mb");
    o += "[";
    for (std::size_t i = 0; i < rec->close_mb.size(); ++i) {
      if (i) o += ", ";
      trace::appendDouble(o, rec->close_mb[i]);
    }
    o += "], ";
    key(o, "host_bound_alike");
    trace::appendInt(o, static_cast<std::int64_t>(rec->host_bound_alike));
    o += ", ";
    key(o, "unloaded_ranks_late");
    o += rec->unloaded_ranks_late ? "true" : "false";
    o += ", ";
    key(o, "text");
    trace::appendJsonString(o, rec->text);
    o += "}";
  } else {
    o += "null";
  }
  o += ", ";
  key(o, "notes");
  o += "[";
  for (std::size_t i = 0; i < r.notes.size(); ++i) {
    if (i) o += ", ";
    trace::appendJsonString(o, r.notes[i]);
  }
  o += "]}\n";
  return o;
}

std::string toText(const WhatIfResult& r) {
  const auto& m = r.model;
  std::ostringstream o;
  // Nothing to replay (one rank, no whole step): no line below is a prediction, and the header
  // says so rather than call the recorded figures predicted.
  o << (m.usable ? "what-if (every figure below but the recorded step is predicted)\n"
                 : "what-if: nothing can be predicted for this run (the note says why); the "
                   "figure below is the recording's\n");
  // Another scenario than the recorded run's: said before any predicted figure.
  if (!r.predictions.empty())
    if (const auto s = scenarioText(r.predictions.front().config, m); !s.empty())
      o << "scenario   " << s << ": the predicted sizes below are for it\n";
  o << "recorded   step " << (r.base_step_us > 0 ? us(r.base_step_us) : std::string("n/a")) << " ("
    << m.selection.rule << ")";
  if (r.base_bucket_mb) o << ", buckets " << mb(*r.base_bucket_mb) << " MiB";
  o << "\n";
  if (m.usable) {
    std::string e = "n/a";
    if (const auto err = replayErrorPct(r.base_predicted_step_us, r.base_step_us))
      e = signedText(*err, 2);
    o << "predicted  replay of the recorded configuration " << us(r.base_predicted_step_us) << " ("
      << e << "); the GPU's work ends at " << us(r.base_predicted_gpu_end_us) << " (recorded "
      << us(r.base_gpu_end_us) << "); overlap " << percentText(r.base_predicted_overlap_pct, 2)
      << " (recorded " << percentText(m.recorded_overlap_pct, 2) << "), exposed "
      << us(r.base_predicted_exposed_us) << "/step (recorded " << us(m.recorded_exposed_us)
      << ")\n";
    o << "gradient production: " << m.production_source << "\n";
    for (const auto& f : m.comm) {
      char b[256];
      std::snprintf(b, sizeof b,
                    "fitted %s over %d ranks: α %.2f µs + %.3f µs/MiB (%d samples, residual %.2f "
                    "%% RMS, worst %.2f %%)",
                    std::string(collectiveKindName(f.kind)).c_str(), f.ranks, f.alpha_us,
                    f.beta_us_per_mib, f.samples, f.residual_pct, f.worst_residual_pct);
      o << b;
      if (f.busbw_gbps) {
        std::snprintf(
            b, sizeof b,
            "; ring step %.2f µs, bus bandwidth %.1f GB/s from the per-MiB cost alone%s (the "
            "summary's busbw divides whole transfer or kernel times, latency included)",
            f.ring_alpha_us.value_or(0), *f.busbw_gbps,
            f.includes_waits ? ", waiting included, not the network's (see the notes)" : "");
        o << b;
      }
      o << "\n";
    }
    char b[200];
    if (m.slowdown.fitted)
      std::snprintf(b, sizeof b,
                    "fitted compute slowdown under communication: %.1f %% (±%.1f; %d kernels "
                    "with, %d without)\n",
                    100 * m.slowdown.factor, 100 * m.slowdown.spread, m.slowdown.with_comm,
                    m.slowdown.without_comm);
    else
      std::snprintf(b, sizeof b,
                    "compute slowdown under communication: not determined, none assumed (%d "
                    "kernels with, %d without)\n",
                    m.slowdown.with_comm, m.slowdown.without_comm);
    o << b;
    // Columns counted in characters, not bytes (padded): the band's "–" and "µs".
    const auto rec = recommendWhatIf(r);
    o << "\n  " << padded("bucket MiB", 12) << padded("predicted step", 20) << padded("band", 26)
      << padded("overlap", 10) << padded("exposed/step", 14) << "buckets\n";
    for (std::size_t i = 0; i < r.predictions.size(); ++i) {
      const auto& p = r.predictions[i];
      const std::string band = !noBandReason(p) ? us(p.step_us_low) + " – " + us(p.step_us_high)
                               : p.host_bound   ? std::string("none (host-bound)")
                                                : std::string("none (none exposed)");
      o << "  " << padded(p.config.bucket_mb == 0 ? "0 (tensor)" : mb(p.config.bucket_mb), 12)
        << padded(us(p.step_us), 20) << padded(band, 26)
        << padded(percentText(p.overlap_pct, 1), 10) << padded(us(p.exposed_comm_us), 14) <<
          [&] {
            // The marks in columns of their own, nothing after the last one.
            std::string tail = padded(std::to_string(p.buckets), 8) +
                               padded(p.host_bound ? "(host-bound)" : "", 14) + [&] {
                                 const auto mark = predictionMark(rec, i);
                                 return mark.empty() ? mark : "<- " + mark;
                               }();
            tail.erase(tail.find_last_not_of(' ') + 1);
            return tail;
          }()
        << "\n";
    }
    // For the rows that say "none" (not every host-bound one: a host-bound size can have a band).
    for (const auto& why : noBandReasons(r))
      o << "band \"none\": " << why << "\n";
    if (const auto note = hostBoundNote(r)) o << "(host-bound): " << *note << "\n";
    if (r.best) {
      const auto& p = r.predictions[*r.best];
      const auto mark = predictionMark(rec, *r.best);
      o << "\n"
        << (mark.empty() ? std::string("predicted fastest") : mark) << ": "
        << bucketSizeText(p.config.bucket_mb) << ", predicted step " << us(p.step_us);
      // Against what the sentence below measures the saving by: in another scenario, the
      // recorded size predicted in it (not the recorded run, which had none of the changes).
      if (rec && rec->baseline_in_scenario) {
        if (!rec->best_is_recorded)
          o << " (" << signedText(-rec->saving_pct, 1) << " vs the recorded size in this scenario)";
      } else if (const auto vs = replayErrorPct(p.step_us, r.base_step_us))
        o << " (" << signedText(*vs, 1) << " vs recorded)";
      o << "\n";
    }
    if (rec) o << rec->text << "\n";
  }
  for (const auto& n : r.notes)
    o << "note: " << n << "\n";
  return o.str();
}

}  // namespace

CLI::App* addPredictCommand(CLI::App& app, PredictArgs& a) {
  auto* c = app.add_subcommand(
      "predict", "What-if: predicted step time at other bucket sizes, overlap, world size");
  c->add_flag("--json", a.json, "Print JSON (the fields of docs/CLI.md)");
  c->add_option("--bucket-mb", a.bucket_mb,
                "Comma list of bucket caps in MiB, 0 = one allreduce per tensor (default: "
                "0,1,2,5,10,25,50,100,200,400)");
  c->add_option("--first-bucket-mb", a.first_bucket_mb,
                "Cap of the first bucket in MiB (default: min(1, bucket))");
  c->add_option("--world-size", a.world_size, "Ranks to predict for (default: as recorded)");
  auto* on = c->add_flag("--overlap", a.overlap,
                         "Start each bucket's allreduce when it is ready (default: as recorded)");
  c->add_flag("--no-overlap", a.no_overlap,
              "Start communication after backward (default: as recorded)")
      ->excludes(on);
  c->add_option("--network-scale", a.network_scale,
                "Collective times x K (2: a network half as fast)");
  c->add_option("--compute-scale", a.compute_scale, "Compute times x K (2: compute half as fast)");
  c->add_option("--rules", a.rules_file,
                "Classification rules to apply before the built-in ones (docs/RULES.md)");
  c->add_option("PATH", a.paths, "Trace files or run folders (one run)")->required();
  return c;
}

int runPredict(const PredictArgs& a) {
  std::vector<WhatIfConfig> configs;
  try {
    // Given but empty (--bucket-mb '') is an error, not the default list.
    const auto sizes = a.bucket_mb ? parseSizeList(*a.bucket_mb) : defaultSweepSizes();
    std::optional<double> first;
    if (!a.first_bucket_mb.empty()) first = parseSize(a.first_bucket_mb, "--first-bucket-mb");
    if (a.world_size && (*a.world_size < 2 || *a.world_size > 1 << 20))
      throw BadArgument("--world-size: " + std::to_string(*a.world_size) +
                        (*a.world_size == 1 ? " rank" : " ranks") +
                        (*a.world_size < 2
                             ? " (give 2 to 1048576: one rank has no communication to predict)"
                             : " (give 2 to 1048576, the most the predictor takes)"));
    if (!(a.network_scale > 0) || !std::isfinite(a.network_scale) || a.network_scale > 1e6)
      throw BadArgument("--network-scale: give a factor above 0 and at most 1000000");
    if (!(a.compute_scale > 0) || !std::isfinite(a.compute_scale) || a.compute_scale > 1e6)
      throw BadArgument("--compute-scale: give a factor above 0 and at most 1000000");
    WhatIfConfig base;
    base.first_bucket_mb = first;
    base.overlap = !a.no_overlap;  // --overlap or as recorded: settled once the run is loaded
    base.world_size = a.world_size.value_or(0);
    base.network_scale = a.network_scale;
    base.compute_scale = a.compute_scale;
    configs = whatIfSweepConfigs(sizes, base);
  } catch (const BadArgument& e) {
    std::cerr << "ddpscope-cli predict: " << e.what() << "\n";
    return 2;
  }
  AnalysisOptions options;
  options.rules = ClassRules::forCommandLine(a.rules_file);
  const trace::Run run = trace::loadRun(a.paths);
  if (!a.overlap && !a.no_overlap) {
    for (auto& c : configs)
      c.overlap = analysis::recordedOverlap(run);
  }
  std::vector<RankActivity> activities;
  const auto report = analyzeRun(run, options, &activities);
  const auto result = predictWhatIf(run, report, activities, configs);
  if (!a.json) {
    // What the summary warns about the run (ranks missing, ...) bears on the prediction too.
    for (const auto& w : report.warnings)
      std::cout << "warning: " << w << "\n";
    if (!report.warnings.empty()) std::cout << "\n";
  }
  std::cout << (a.json ? toJson(result, a.world_size.value_or(0)) : toText(result));
  if (!a.json && !result.model.comm.empty())
    std::cout << "communication cost fitted by: " << result.model.comm.front().method << "\n";
  return 0;
}

}  // namespace ddpscope::cli
