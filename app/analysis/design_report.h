#pragma once
// The design-review report: configuration, headline numbers, timeline figure, bucket table,
// sweep chart and recommendation, run comparison, as Markdown and as standalone HTML. The
// figures are PNG files written beside the report by the app; this only names them.

#include <optional>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/sweep.h"
#include "app/analysis/whatif.h"

namespace ddpscope::analysis {

// The report is about one run; every other section names the run(s) it covers.
struct DesignReportInput {
  std::string title = "Gradient synchronisation review";
  std::string run_name;
  std::string source;  // "sim", "cuda", "imported": a simulated run is labelled as such
  // runConfigurationText of the run under review, with and without its bucket size.
  std::string configuration, configuration_without_buckets;
  std::vector<std::pair<std::string, std::string>> config;  // key -> raw JSON value
  const RunReport* report = nullptr;  // the run under review (its figures: summarizeRun)
  // Why the run's numbers cover only part of it (a rank's trace flagged incomplete, ranks
  // missing, the agent failed); "" when complete. Ranks flagged in `report` are named anyway.
  std::string incomplete_note;
  std::string timeline_png;  // file names beside the report
  // Single steps drawn beside the whole-run timeline (stepsToShow): each a figure of the ranks'
  // lanes over the step's window on every rank (stepWindow), with its caption.
  struct StepFigure {
    std::string png;
    std::string caption;
  };
  std::vector<StepFigure> step_figures;
  std::string step_figures_lanes =
      "the lanes of every rank loaded";  // what the figures draw, in words
  // A sweep: its points name their configuration (SweepPoint::configuration).
  std::vector<SweepPoint> sweep;
  std::optional<SweepRecommendation> recommendation;
  std::string sweep_png;
  // A comparison of two runs, each named with its configuration (runConfigurationText).
  std::string compare_name_a, compare_name_b;
  std::string compare_configuration_a, compare_configuration_b;
  bool compare_includes_this_run = false;  // A or B is the run under review
  std::vector<ComparisonRow> comparison;
  std::string compare_png;
  // The what-if prediction of the run under review (predictWhatIf; null: no such section):
  // the predicted step time per bucket size with its band, overlap and exposed communication,
  // the recommendation (recommendWhatIf), the fitted network costs and the base replay's error,
  // every figure labelled "predicted".
  const WhatIfResult* whatif = nullptr;
  // The predicted U-curve (the Sweep tab's chart: step time per bucket size, its band, the
  // recorded configuration, measured sweep points), shown in the prediction section.
  std::string predicted_png;
  // Why the report has no prediction (whatif null): it failed or was cancelled. The section
  // then says so instead of its figures; "" writes no section.
  std::string whatif_missing;
};

// Fills the run-under-review part of the input from a loaded run (name, source, configuration,
// report); the sections of other runs are the caller's.
DesignReportInput designReportInputFor(const trace::Run& run, const RunReport& report,
                                       const std::string& run_name);

// The prediction section's tables (their header row first), as both formats write them.
std::vector<std::vector<std::string>> designReportPredictionTable(const WhatIfResult& w);
std::vector<std::vector<std::string>> designReportFitTable(const WhatIfResult& w);

std::string designReportMarkdown(const DesignReportInput& in);
std::string designReportHtml(const DesignReportInput& in);

}  // namespace ddpscope::analysis
