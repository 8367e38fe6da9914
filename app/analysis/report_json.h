#pragma once
// The report as `ddpscope-cli summary` prints it: JSON (docs/CLI.md, "ddpscope-cli summary")
// and a readable table.

#include <string>
#include <string_view>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"

namespace ddpscope::analysis {

std::string reportToJson(const RunReport& report);
struct TextOptions {
  // Every rank's buckets step by step (the JSON's rows); without it, one mean row per bucket over
  // the ranks and the run summary's steps (analysis::bucketMeans, as the Buckets tab's chart).
  bool bucket_steps = false;
};
std::string reportToText(const RunReport& report, const TextOptions& options = {});
// The run summary in a few readable lines, its step rule first (the text report's head).
std::string runSummaryText(const RunSummary& summary);

// The columns s takes in a text table: UTF-8 continuation bytes ("µ", "–") take none.
std::size_t textColumns(std::string_view s);
// s left-aligned in `width` columns of a text table (textColumns).
std::string padded(const std::string& s, std::size_t width);

// Formats a duration with the unit that keeps three significant digits (s, ms, µs, ns).
std::string formatDuration(TimeNs ns);
// formatDuration with `extra` more decimals (ns stay whole).
std::string formatDuration(TimeNs ns, int extra);
// Durations set side by side (a sweep's step times): formatDuration of each, with as many more
// decimals (up to three) as it takes for two different values never to read the same.
std::vector<std::string> distinctDurations(const std::vector<TimeNs>& ns);

}  // namespace ddpscope::analysis
