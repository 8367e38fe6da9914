#pragma once
// The report as `ddpscope-cli summary` prints it: JSON (DESIGN.md "Command-line contracts")
// and a readable table.

#include <string>

#include "app/analysis/analysis.h"

namespace ddpscope::analysis {

std::string reportToJson(const RunReport& report);
std::string reportToText(const RunReport& report);

// Formats a duration with the unit that keeps three significant digits (s, ms, µs, ns).
std::string formatDuration(TimeNs ns);

}  // namespace ddpscope::analysis
