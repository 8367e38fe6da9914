#pragma once
// The design-review report: configuration, headline numbers, timeline figure, bucket table,
// sweep chart and recommendation, run comparison, as Markdown and as standalone HTML. The
// figures are PNG files written beside the report by the app; this only names them.

#include <optional>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/sweep.h"

namespace ddpscope::analysis {

struct DesignReportInput {
  std::string title = "Gradient synchronisation review";
  std::string run_name;
  std::string source;  // "sim", "cuda", "imported": a simulated run is labelled as such
  std::vector<std::pair<std::string, std::string>> config;  // key -> raw JSON value
  const RunReport* report = nullptr;                        // the run under review
  // Why the run's numbers cover only part of it (a rank's trace flagged incomplete, ranks
  // missing, the agent failed); "" when complete. Ranks flagged in `report` are named anyway.
  std::string incomplete_note;
  std::string timeline_png;  // file names beside the report
  std::vector<SweepPoint> sweep;
  std::optional<SweepRecommendation> recommendation;
  std::string sweep_png;
  std::string compare_name_a, compare_name_b;
  std::vector<ComparisonRow> comparison;
  std::string compare_png;
};

std::string designReportMarkdown(const DesignReportInput& in);
std::string designReportHtml(const DesignReportInput& in);

}  // namespace ddpscope::analysis
