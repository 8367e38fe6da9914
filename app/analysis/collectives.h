#pragma once
// Collectives matched across ranks: the same collective on every rank, its arrival skew, the rank
// that arrived last, and on each rank the part spent waiting for that rank and the part spent
// transferring (docs/METRICS.md "Matched collectives"). No Qt.

#include <string>
#include <vector>

#include "app/analysis/analysis.h"

namespace ddpscope::analysis {

// Matches the communication kernels of the ranks of `run` (classified as `activities` say, one
// per rank in run order) and fills report.matched, report.matched_by and each rank's
// exposed_wait_ns / exposed_transfer_ns. Without two ranks, nothing is matched.
void matchCollectives(const trace::Run& run, const std::vector<RankActivity>& activities,
                      RunReport& report);

}  // namespace ddpscope::analysis
