#include "app/analysis/design_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "app/analysis/bucket_steps.h"
#include "app/analysis/report_json.h"
#include "app/analysis/stragglers.h"
#include "app/analysis/whatif_summary.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::analysis {

namespace {

// A table as rows of cells; the first row is the header.
using Table = std::vector<std::vector<std::string>>;

std::string mib(std::int64_t bytes) {
  if (bytes < 0) return "?";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", static_cast<double>(bytes) / (1 << 20));
  return b;
}

std::string gbps(const std::optional<double>& v) {
  if (!v) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f GB/s", *v);
  return b;
}

std::string sourceLabel(const std::string& s) {
  if (s == "sim") return "SIMULATED (cost model, not a measurement)";
  if (s == "cuda") return "CUDA (measured with CUPTI)";
  if (s == "predicted") return "PREDICTED (what-if replay of a recorded run, not a measurement)";
  return "IMPORTED";
}

Table headline(const DesignReportInput& in) {
  Table t{{"metric", "value"}};
  const RunSummary s = summarizeRun(*in.report);
  const auto f = runFigureText(s);
  t.push_back({"source", sourceLabel(in.source)});
  t.push_back({"classification rules", in.report->rules});
  t.push_back({"ranks", f.ranks});
  t.push_back({"steps covered", f.scope});
  t.push_back({"step time (mean, slowest rank)", f.step});
  t.push_back({"communication hidden (overlap)", f.overlap});
  t.push_back(
      {s.hasSteps() ? "exposed communication per step" : "exposed communication (whole trace)",
       f.exposed});
  // Over the same steps as the row above (RunSummary::exposed_wait_ns_per_step), as Compare says
  // it; the whole-trace split follows below.
  if (s.exposed_wait_ns_per_step)
    t.push_back({"of which waiting for a late rank, per step",
                 formatDuration(*s.exposed_wait_ns_per_step) + "/step"});
  t.push_back({"DP efficiency", f.dp_efficiency});
  t.push_back({"GPU idle", f.gpu_idle});
  // Per step only when the run has steps (as summary --json says null).
  t.push_back({"allreduces per step", f.allreduces});
  // Exposed communication split by the collectives matched across ranks (whole trace, all ranks).
  const StragglerSummary late = summarizeStragglers(*in.report);
  if (late.exposed_wait_ns && late.exposed_transfer_ns) {
    const auto share = [&](TimeNs part, const std::optional<double>& pct) {
      return formatDuration(part) + (pct ? " (" + percentText(pct, 1) + ")" : std::string());
    };
    t.push_back({"exposed, waiting for a late rank (whole trace, all ranks)",
                 share(*late.exposed_wait_ns, late.wait_pct)});
    t.push_back({"exposed, transfer not hidden (whole trace, all ranks)",
                 share(*late.exposed_transfer_ns, late.transfer_pct)});
    if (late.hidden_wait_ns && *late.hidden_wait_ns > 0 && late.transfer_overlap_pct)
      t.push_back({"transfers alone overlapped (whole trace, all ranks; " +
                       percentText(late.whole_overlap_pct, 2) + " with the waits, of which " +
                       formatDuration(*late.hidden_wait_ns) + " ran under compute)",
                   percentText(late.transfer_overlap_pct, 2)});
    t.push_back({"late rank",
                 late.late_rank ? "rank " + std::to_string(*late.late_rank) + " (last at " +
                                      std::to_string(late.late_count) + " of " +
                                      std::to_string(late.skewed) + " collectives with a skew)"
                 : late.skewed > 0
                     ? "none: no rank was last at more than half of the collectives with a skew"
                     : "none: every matched collective started together"});
  }
  std::size_t violations = 0;
  bool checked = false;  // the check needs the trace's own bucket list (not inferred buckets)
  for (const auto& r : in.report->ranks) {
    violations += r.violations.size();
    checked = checked || (!r.buckets.empty() && !r.buckets_inferred);
  }
  t.push_back({"dependency check", !checked          ? "not checked (the trace has no bucket list)"
                                   : violations == 0 ? "no violations"
                                                     : std::to_string(violations) + " violations"});
  return t;
}

// The bucket table: one row per bucket, the mean over the ranks and the steps the run summary
// covers (bucketMeans, as `summary` and the Buckets tab's chart give them), ready measured from
// the start of the bucket's step. Buckets inferred from allreduce kernels (a trace without the
// bucket list) have no tensor count: the column is left out, as the app's Buckets tab hides it.
Table bucketMeanTable(const DesignReportInput& in) {
  const auto& report = *in.report;
  const bool tensors = !report.ranks.empty() && !report.ranks.front().buckets_inferred;
  std::vector<std::string> head{"bucket"};
  if (tensors) head.push_back("tensors");
  for (const char* h :
       {"MiB", "samples", "ready (from step start)", "queued", "allreduce", "hidden", "exposed"})
    head.push_back(h);
  Table t{head};
  const auto ns = [](double v) { return formatDuration(static_cast<TimeNs>(std::llround(v))); };
  for (const auto& m : bucketMeans(report, selectSteps(report))) {
    std::vector<std::string> row{std::to_string(m.id)};
    if (tensors) row.push_back(m.tensors < 0 ? "varies" : std::to_string(m.tensors));
    for (std::string cell : {m.bytes < 0 ? std::string("varies") : mib(m.bytes),
                             std::to_string(m.samples), ns(m.ready_ns), ns(m.wait_ns),
                             ns(m.hidden_ns + m.exposed_ns), ns(m.hidden_ns), ns(m.exposed_ns)})
      row.push_back(std::move(cell));
    t.push_back(std::move(row));
  }
  return t;
}

// The appendix's bucket table: the first rank's buckets step by step in the steps the run
// summary covers (the rows of the app's Buckets tab for that rank).
Table bucketTable(const DesignReportInput& in) {
  const auto& report = *in.report;
  const bool tensors = !report.ranks.empty() && !report.ranks.front().buckets_inferred;
  std::vector<std::string> head{"step", "bucket"};
  if (tensors) head.push_back("tensors");
  for (const char* h : {"MiB", "ready (from step start)", "queued", "duration", "exposed", "busbw"})
    head.push_back(h);
  Table t{head};
  if (report.ranks.empty()) return t;
  const auto& r = report.ranks.front();
  const StepSelection selection = selectSteps(report);
  for (const auto& b : r.buckets) {
    if (!inSelection(selection, b.step)) continue;
    std::vector<std::string> row{b.step == trace::kNoStep ? "–" : std::to_string(b.step),
                                 std::to_string(b.id)};
    if (tensors) row.push_back(b.inferred ? "?" : std::to_string(b.tensors));
    for (std::string cell :
         {mib(b.bytes), formatDuration(readyFromStepStart(r, b)), formatDuration(b.wait_ns),
          formatDuration(b.end_ns - b.start_ns), formatDuration(b.exposed_ns),
          gbps(b.busbw_gbps) + (b.busbw_gbps && b.bw_basis == BandwidthBasis::Kernel ? " *" : "")})
      row.push_back(std::move(cell));
    t.push_back(std::move(row));
  }
  return t;
}

// The Buckets section of a run without buckets (an export of send/recv, no training step).
constexpr const char* kNoBuckets =
    "No gradient bucket to show: no allreduce of this trace could be assigned to a "
    "gradient bucket (it may hold other collectives, point-to-point transfers or no training "
    "step), so there is no bucket table and no appendix.";

// Why a report of a run without steps draws no single step (none when it has steps).
std::optional<std::string> noStepFigure(const DesignReportInput& in) {
  if (!in.step_figures.empty() || !in.report || summarizeRun(*in.report).hasSteps())
    return std::nullopt;
  return "No step drawn on its own: the trace has no training steps (no ProfilerStep# ranges on "
         "every rank), so its figures cover the whole trace.";
}

// What the single-step figures draw.
std::string stepFiguresCover(const DesignReportInput& in) {
  const bool one = in.step_figures.size() == 1;
  return std::string(one ? "One step drawn on its own" : "Single steps drawn on their own") + ": " +
         in.step_figures_lanes + " from the step's earliest start to its latest end on any rank, " +
         (one ? "titled" : "each titled") +
         " with that window's figures. A step's time is its slowest rank's.";
}

// What the bucket tables cover, in one sentence each.
std::string bucketsCover(const DesignReportInput& in) {
  const auto& report = *in.report;
  return "Mean per bucket over " + std::to_string(report.ranks.size()) +
         (report.ranks.size() == 1 ? " rank" : " ranks") +
         " and the steps covered (samples: ranks × steps). Steps covered: " +
         selectSteps(report).rule +
         ". Ready is measured from the start of the bucket's step; queued is from ready to the "
         "allreduce's start. Each step's rows of rank " +
         std::to_string(report.ranks.empty() ? 0 : report.ranks.front().rank) +
         " are in the appendix.";
}
std::string bucketStepsCover(const DesignReportInput& in) {
  const auto& report = *in.report;
  std::string s =
      "Rank " + std::to_string(report.ranks.empty() ? 0 : report.ranks.front().rank) +
      ", every bucket of every step covered. Steps covered: " + selectSteps(report).rule +
      ". Ready is measured from the start of the bucket's step.";
  if (!report.ranks.empty()) {
    const auto& b = report.ranks.front().buckets;
    const StepSelection selection = selectSteps(report);
    const auto any = [&](BandwidthBasis basis) {
      return std::any_of(b.begin(), b.end(), [&](const BucketReport& x) {
        return inSelection(selection, x.step) && x.busbw_gbps && x.bw_basis == basis;
      });
    };
    if (any(BandwidthBasis::Transfer)) s += " " + std::string(kTransferBandwidthNote) + ".";
    if (any(BandwidthBasis::Kernel)) s += " " + std::string(kKernelTimeBandwidthNote) + ".";
  }
  return s;
}

Table sweepTable(const std::vector<SweepPoint>& points) {
  Table t{{"bucket MiB", "step time", "overlap", "exposed / step", "allreduces / step", "steps"}};
  for (const auto& p : points) {
    const auto f = runFigureText(p.summary);
    t.push_back({mibNumberText(p.bucket_mb), f.step, f.overlap, f.exposed, f.allreduces, f.scope});
  }
  return t;
}

// What the sweep covers, and whether that is the run under review (but its bucket size).
std::string sweepCovers(const DesignReportInput& in) {
  std::vector<std::string> configs;
  for (const auto& p : in.sweep)
    if (std::find(configs.begin(), configs.end(), p.configuration) == configs.end())
      configs.push_back(p.configuration);
  std::string s = "Covers: ";
  for (std::size_t i = 0; i < configs.size(); ++i)
    s += (i ? "; " : "") +
         (configs[i].empty() ? std::string("runs of unknown configuration") : configs[i]);
  s += ", bucket sizes " + mibNumberText(in.sweep.front().bucket_mb) + "–" +
       mibNumberText(in.sweep.back().bucket_mb) + " MiB (" + std::to_string(in.sweep.size()) +
       " runs).";
  if (configs.size() != 1 || configs.front() != in.configuration_without_buckets) {
    s += " This sweep is NOT of the run reviewed above (" + in.configuration_without_buckets +
         "): its figures and recommendation are about the configuration it names.";
  }
  return s;
}

std::string compareCovers(const DesignReportInput& in) {
  std::string s = "A: " + in.compare_name_a + " (" + in.compare_configuration_a +
                  "). B: " + in.compare_name_b + " (" + in.compare_configuration_b + ").";
  if (!in.compare_includes_this_run) s += " Neither is the run reviewed above.";
  if (withoutDigestPrefix(in.compare_configuration_a) !=
      withoutDigestPrefix(in.compare_configuration_b))
    s += " The runs differ in more than one setting: read the differences with care.";
  return s;
}

Table comparisonTable(const DesignReportInput& in) {
  Table t{{"metric", in.compare_name_a, in.compare_name_b, "difference"}};
  for (const auto& row : in.comparison)
    t.push_back({row.metric, row.a, row.b, row.delta});
  return t;
}

std::string mdEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '|' || c == '*' || c == '`' || c == '[' || c == ']') o += '\\';
    o += c;
  }
  return o;
}

std::string markdownTable(const Table& t) {
  std::string s;
  for (std::size_t r = 0; r < t.size(); ++r) {
    s += "|";
    for (const auto& cell : t[r])
      s += " " + mdEscape(cell) + " |";
    s += "\n";
    if (r == 0) {
      s += "|";
      for (std::size_t c = 0; c < t[r].size(); ++c)
        s += c == 0 ? " --- |" : " ---: |";
      s += "\n";
    }
  }
  return s + "\n";
}

std::string htmlEscape(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<':
        o += "&lt;";
        break;
      case '>':
        o += "&gt;";
        break;
      case '&':
        o += "&amp;";
        break;
      case '"':
        o += "&quot;";
        break;
      default:
        o += c;
    }
  }
  return o;
}

std::string htmlTable(const Table& t) {
  std::string s = "<table>\n";
  for (std::size_t r = 0; r < t.size(); ++r) {
    s += "<tr>";
    for (std::size_t c = 0; c < t[r].size(); ++c) {
      const char* tag = r == 0 ? "th" : "td";
      s += std::string("<") + tag + (c > 0 && r > 0 ? " class=\"num\"" : "") + ">" +
           htmlEscape(t[r][c]) + "</" + tag + ">";
    }
    s += "</tr>\n";
  }
  return s + "</table>\n";
}

Table configTable(const DesignReportInput& in) {
  Table t{{"setting", "value"}};
  // Each setting as every message names it (0.05, not the float's 0.05000000074505806; a seed
  // as written; no straggler as "none").
  for (const auto& [k, v] : in.config)
    t.push_back({k, trace::settingText(k, v)});
  return t;
}

// Predicted times in ms with µs precision (the CLI's JSON gives the same µs to the ns).
std::string predictedMs(double us) {
  char b[48];
  std::snprintf(b, sizeof b, "%.3f ms", us / 1e3);
  return b;
}

// The prediction section's sentences: what it is, the base replay, the recommendation, notes.
std::vector<std::string> predictionLines(const WhatIfResult& w) {
  std::vector<std::string> out;
  out.push_back(
      "Every figure in this section is predicted, not measured: a replay of the recorded run "
      "under other bucket sizes (the what-if model: gradient production, communication cost "
      "fitted from the run's own collectives, compute slowdown under communication).");
  if (!w.model.usable) return out;
  std::string base =
      "Predicted replay of the recorded configuration: " + predictedMs(w.base_predicted_step_us) +
      " per step against the recorded " +
      (w.base_step_us > 0 ? predictedMs(w.base_step_us) : std::string("n/a")) + " (" +
      w.model.selection.rule + "); base replay error ";
  if (const auto e = replayErrorPct(w.base_predicted_step_us, w.base_step_us)) {
    base += signedText(*e, 2);
  } else {
    base += "n/a";
  }
  // The overlap and exposed communication too: a replay can match the step time (a host-bound
  // step) and still hide more or less than the run did.
  base += "; overlap " + percentText(w.base_predicted_overlap_pct, 2) + " against the recorded " +
          percentText(w.model.recorded_overlap_pct, 2) + ", exposed communication " +
          predictedMs(w.base_predicted_exposed_us) + " per rank and step against " +
          predictedMs(w.model.recorded_exposed_us);
  out.push_back(base + ". Gradient production: " + w.model.production_source + ".");
  char s[160];
  if (w.model.slowdown.fitted)
    std::snprintf(s, sizeof s, "Fitted compute slowdown under communication: %.1f %% (±%.1f).",
                  100 * w.model.slowdown.factor, 100 * w.model.slowdown.spread);
  else
    std::snprintf(s, sizeof s,
                  "Compute slowdown under communication: not determined, none assumed.");
  out.push_back(s);
  return out;
}

// The predicted figure's caption (its alternative text in both formats).
constexpr const char* kPredictedFigureAlt =
    "PREDICTED step time per bucket size (what-if replay, not a measurement)";

std::string noPredictionLine(const std::string& why) {
  return "No prediction in this report: " + why + ". The report was written without it.";
}

std::string incompleteWarning(const DesignReportInput& in);

// The run's warnings and each rank's ("rank 1: ..."), as `summary` gives them, but the one about
// traces cut short when the INCOMPLETE RUN banner (incompleteWarning) names them already.
std::vector<std::string> reportWarnings(const DesignReportInput& in) {
  std::vector<std::string> out;
  if (!in.report) return out;
  const auto& cut = in.report->completeness.incomplete_ranks;
  const std::string said =
      !cut.empty() && !incompleteWarning(in).empty() ? cutShortWarning(cut) : std::string();
  for (const auto& w : in.report->warnings)
    if (w != said) out.push_back(w);
  for (const auto& r : in.report->ranks)
    for (const auto& w : r.warnings)
      out.push_back(rankWarning(r.rank, w));
  return out;
}

// The warning a reader of an incomplete run must see before any number; "" when complete.
std::string incompleteWarning(const DesignReportInput& in) {
  std::string ranks;
  if (in.report) {
    for (const auto& r : in.report->ranks) {
      if (!r.incomplete) continue;
      ranks += (ranks.empty() ? "" : ", ") + std::to_string(r.rank);
    }
  }
  if (ranks.empty() && in.incomplete_note.empty()) return {};
  std::string s =
      "INCOMPLETE RUN: the numbers below cover only what was recorded before the "
      "run stopped.";
  if (!ranks.empty()) s += " Traces flagged incomplete: rank " + ranks + ".";
  if (!in.incomplete_note.empty()) s += " " + in.incomplete_note;
  return s;
}

}  // namespace

namespace {
// Why some predictions have no band, each reason once (the table's cells name it in short).
std::vector<std::string> noBandNotes(const WhatIfResult& w) {
  std::vector<std::string> out;
  for (const auto& why : noBandReasons(w))
    out.push_back("No band: " + why + ".");
  return out;
}
}  // namespace

std::vector<std::vector<std::string>> designReportPredictionTable(const WhatIfResult& w) {
  Table t{{"bucket size", "predicted step time", "predicted band", "predicted overlap",
           "predicted exposed / step", "predicted buckets"}};
  const auto recommendation = recommendWhatIf(w);
  for (std::size_t i = 0; i < w.predictions.size(); ++i) {
    const auto& p = w.predictions[i];
    const auto why = noBandReason(p);
    std::string size = bucketSizeText(p.config.bucket_mb);
    if (const auto mark = predictionMark(recommendation, i); !mark.empty())
      size += " (" + mark + ")";
    if (p.host_bound) size += " (host-bound)";  // as `predict` and the figure mark it
    // Without a band the cell names why in a few words; the whole reason follows the table once
    // (noBandNotes).
    t.push_back({size, predictedMs(p.step_us),
                 why ? "none (" + why->substr(0, why->find_first_of(":,")) + ")"
                     : predictedMs(p.step_us_low) + " – " + predictedMs(p.step_us_high),
                 percentText(p.overlap_pct, 2), predictedMs(p.exposed_comm_us),
                 std::to_string(p.buckets)});
  }
  return t;
}

std::vector<std::vector<std::string>> designReportFitTable(const WhatIfResult& w) {
  Table t{{"collective", "ranks", "α (µs)", "β (µs/MiB)", "bus bandwidth", "samples",
           "residual RMS", "worst residual", "fit method"}};
  for (const auto& f : w.model.comm) {
    char a[32], b[32], rms[48], worst[32];
    std::snprintf(a, sizeof a, "%.2f", f.alpha_us);
    std::snprintf(b, sizeof b, "%.3f", f.beta_us_per_mib);
    std::snprintf(rms, sizeof rms, "%.2f µs (%.2f %%)", f.residual_rms_us, f.residual_pct);
    std::snprintf(worst, sizeof worst, "%.2f %%", f.worst_residual_pct);
    std::string bw = gbps(f.busbw_gbps);
    if (f.busbw_gbps && f.includes_waits) bw += " (waiting included, not the network's)";
    t.push_back({std::string(collectiveKindName(f.kind)), std::to_string(f.ranks), a, b, bw,
                 std::to_string(f.samples), rms, worst, f.method});
  }
  return t;
}

std::string designReportMarkdown(const DesignReportInput& in) {
  std::string s = "# " + in.title + "\n\n";
  s += "Run: **" + mdEscape(in.run_name) + "**, " + sourceLabel(in.source) + ".\n\n";
  if (!in.configuration.empty()) s += "Configuration: " + mdEscape(in.configuration) + ".\n\n";
  if (const auto warning = incompleteWarning(in); !warning.empty())
    s += "> **" + mdEscape(warning) + "**\n\n";
  // What the summary warns about (ranks missing, a trace with no events, ...), before any number.
  for (const auto& w : reportWarnings(in))
    s += "> Warning: " + mdEscape(w) + "\n\n";
  if (in.report) {
    s += "## Headline\n\n" + markdownTable(headline(in));
    if (!in.timeline_png.empty()) s += "![Timeline](" + in.timeline_png + ")\n\n";
    if (!in.step_figures.empty()) s += mdEscape(stepFiguresCover(in)) + "\n\n";
    if (const auto why = noStepFigure(in)) s += mdEscape(*why) + "\n\n";
    for (const auto& f : in.step_figures)
      s += "![" + mdEscape(f.caption) + "](" + f.png + ")\n\n*" + mdEscape(f.caption) + ".*\n\n";
    const auto means = bucketMeanTable(in);
    s += "## Buckets\n\n" + (means.size() > 1
                                 ? mdEscape(bucketsCover(in)) + "\n\n" + markdownTable(means)
                                 : mdEscape(kNoBuckets) + "\n\n");
  }
  if (!in.sweep.empty()) {
    s += "## Bucket-size sweep\n\n" + mdEscape(sweepCovers(in)) + "\n\n" +
         markdownTable(sweepTable(in.sweep));
    if (!in.sweep_png.empty()) s += "![Sweep](" + in.sweep_png + ")\n\n";
    if (in.recommendation) s += "**Recommendation.** " + in.recommendation->text + "\n\n";
  }
  if (in.whatif) {
    const auto& w = *in.whatif;
    s += "## Predicted: step time per bucket size (what-if)\n\n";
    for (const auto& line : predictionLines(w))
      s += mdEscape(line) + "\n\n";
    if (w.model.usable && !in.predicted_png.empty())
      s += "![" + std::string(kPredictedFigureAlt) + "](" + in.predicted_png + ")\n\n";
    if (w.model.usable) {
      s += markdownTable(designReportPredictionTable(w));
      for (const auto& n : noBandNotes(w))
        s += mdEscape(n) + "\n\n";
      if (const auto note = hostBoundNote(w)) s += "Host-bound sizes: " + mdEscape(*note) + ".\n\n";
      if (const auto rec = recommendWhatIf(w))
        s += "**Predicted recommendation.** " + mdEscape(rec->text) + "\n\n";
      s += "Fitted network costs (time = α + β · bytes, predicted):\n\n" +
           markdownTable(designReportFitTable(w));
    }
    for (const auto& n : w.notes)
      s += "- note: " + mdEscape(n) + "\n";
    if (!w.notes.empty()) s += "\n";
  } else if (!in.whatif_missing.empty()) {
    s += "## Predicted: step time per bucket size (what-if)\n\n" +
         mdEscape(noPredictionLine(in.whatif_missing)) + "\n\n";
  }
  if (!in.comparison.empty()) {
    s += "## Comparison\n\n" + mdEscape(compareCovers(in)) + "\n\n" +
         markdownTable(comparisonTable(in));
    if (!in.compare_png.empty()) s += "![Comparison](" + in.compare_png + ")\n\n";
  }
  if (!in.config.empty()) s += "## Configuration\n\n" + markdownTable(configTable(in));
  s += "Numbers follow ddpscope's definitions (docs/METRICS.md): overlap = Σ|comm ∩ compute| / "
       "Σ|comm| over the ranks and the steps covered; the first of three or more steps is left "
       "out as warm-up.\n";
  if (in.report) {
    if (const auto rows = bucketTable(in); rows.size() > 1)
      s += "\n## Appendix: buckets step by step\n\n" + mdEscape(bucketStepsCover(in)) + "\n\n" +
           markdownTable(rows);
  }
  return s;
}

std::string designReportHtml(const DesignReportInput& in) {
  std::string s =
      "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" + htmlEscape(in.title) +
      "</title>\n<style>body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
      "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #ccc;padding:.3em .7em}"
      "th{background:#f3f3f3;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-"
      "nums}"
      "img{max-width:100%}.badge{display:inline-block;padding:.1em .5em;border:1px solid "
      "#999}</style>\n"
      "</head><body>\n<h1>" +
      htmlEscape(in.title) + "</h1>\n<p>Run: <b>" + htmlEscape(in.run_name) +
      "</b> <span class=\"badge\">" + htmlEscape(sourceLabel(in.source)) + "</span></p>\n";
  if (!in.configuration.empty())
    s += "<p>Configuration: " + htmlEscape(in.configuration) + ".</p>\n";
  if (const auto warning = incompleteWarning(in); !warning.empty()) {
    s += "<p style=\"border:2px solid #E69F00;padding:.5em\"><b>" + htmlEscape(warning) +
         "</b></p>\n";
  }
  {
    for (const auto& w : reportWarnings(in))
      s +=
          "<p style=\"border:1px solid #E69F00;padding:.5em\">Warning: " + htmlEscape(w) + "</p>\n";
  }
  if (in.report) {
    s += "<h2>Headline</h2>\n" + htmlTable(headline(in));
    if (!in.timeline_png.empty())
      s += "<img src=\"" + htmlEscape(in.timeline_png) + "\" alt=\"Timeline\">\n";
    if (!in.step_figures.empty()) s += "<p>" + htmlEscape(stepFiguresCover(in)) + "</p>\n";
    if (const auto why = noStepFigure(in)) s += "<p>" + htmlEscape(*why) + "</p>\n";
    for (const auto& f : in.step_figures)
      s += "<figure><img src=\"" + htmlEscape(f.png) + "\" alt=\"" + htmlEscape(f.caption) +
           "\"><figcaption>" + htmlEscape(f.caption) + ".</figcaption></figure>\n";
    const auto means = bucketMeanTable(in);
    s += "<h2>Buckets</h2>\n<p>" + (means.size() > 1
                                        ? htmlEscape(bucketsCover(in)) + "</p>\n" + htmlTable(means)
                                        : htmlEscape(kNoBuckets) + "</p>\n");
  }
  if (!in.sweep.empty()) {
    s += "<h2>Bucket-size sweep</h2>\n<p>" + htmlEscape(sweepCovers(in)) + "</p>\n" +
         htmlTable(sweepTable(in.sweep));
    if (!in.sweep_png.empty())
      s += "<img src=\"" + htmlEscape(in.sweep_png) + "\" alt=\"Sweep\">\n";
    if (in.recommendation)
      s += "<p><b>Recommendation.</b> " + htmlEscape(in.recommendation->text) + "</p>\n";
  }
  if (in.whatif) {
    const auto& w = *in.whatif;
    s += "<h2>Predicted: step time per bucket size (what-if)</h2>\n";
    for (const auto& line : predictionLines(w))
      s += "<p>" + htmlEscape(line) + "</p>\n";
    if (w.model.usable && !in.predicted_png.empty())
      s += "<img src=\"" + htmlEscape(in.predicted_png) + "\" alt=\"" + kPredictedFigureAlt +
           "\">\n";
    if (w.model.usable) {
      s += htmlTable(designReportPredictionTable(w));
      for (const auto& n : noBandNotes(w))
        s += "<p>" + htmlEscape(n) + "</p>\n";
      if (const auto note = hostBoundNote(w))
        s += "<p>Host-bound sizes: " + htmlEscape(*note) + ".</p>\n";
      if (const auto rec = recommendWhatIf(w))
        s += "<p><b>Predicted recommendation.</b> " + htmlEscape(rec->text) + "</p>\n";
      s += "<p>Fitted network costs (time = α + β · bytes, predicted):</p>\n" +
           htmlTable(designReportFitTable(w));
    }
    if (!w.notes.empty()) {
      s += "<ul>\n";
      for (const auto& n : w.notes)
        s += "<li>note: " + htmlEscape(n) + "</li>\n";
      s += "</ul>\n";
    }
  } else if (!in.whatif_missing.empty()) {
    s += "<h2>Predicted: step time per bucket size (what-if)</h2>\n<p>" +
         htmlEscape(noPredictionLine(in.whatif_missing)) + "</p>\n";
  }
  if (!in.comparison.empty()) {
    s += "<h2>Comparison</h2>\n<p>" + htmlEscape(compareCovers(in)) + "</p>\n" +
         htmlTable(comparisonTable(in));
    if (!in.compare_png.empty())
      s += "<img src=\"" + htmlEscape(in.compare_png) + "\" alt=\"Comparison\">\n";
  }
  if (!in.config.empty()) s += "<h2>Configuration</h2>\n" + htmlTable(configTable(in));
  if (in.report) {
    // Folded: a run of one allreduce per tensor has thousands of these rows.
    if (const auto rows = bucketTable(in); rows.size() > 1)
      s += "<h2>Appendix: buckets step by step</h2>\n<details><summary>" +
           htmlEscape(bucketStepsCover(in)) + "</summary>\n" + htmlTable(rows) + "</details>\n";
  }
  s += "</body></html>\n";
  return s;
}

DesignReportInput designReportInputFor(const trace::Run& run, const RunReport& report,
                                       const std::string& run_name) {
  DesignReportInput in;
  in.run_name = run_name;
  in.source = run.ranks.empty() ? "imported" : std::string(run.ranks.front().source());
  in.configuration = runConfigurationText(run, true);
  in.configuration_without_buckets = runConfigurationText(run, false);
  if (!run.ranks.empty()) in.config = run.ranks.front().ddpscope.config;
  in.report = &report;
  return in;
}

}  // namespace ddpscope::analysis
