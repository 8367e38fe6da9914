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
// exposed_wait_ns / exposed_transfer_ns. A collective is matched within its kind and process
// group (from the trace's collective arguments; one unnamed group without them): by sequence
// number when every kernel of the group has one, else by order. Without two ranks, nothing is
// matched.
void matchCollectives(const trace::Run& run, const std::vector<RankActivity>& activities,
                      RunReport& report);

// How close (ns) a collective's start must follow the end of another one of its process group
// for the check below to say it waited for it.
inline constexpr TimeNs kSerializationToleranceNs = 5'000;

// The same-communicator serialisation check of one rank: fills out.serialized with the
// collectives that waited for another collective of their process group on another stream
// (docs/METRICS.md, "Serialised collectives"), and out.serialization_checked. Needs the
// process group of the kernels (the trace's collective arguments) and their launches.
void checkSerialization(const trace::RankTrace& rank, const RankActivity& act, RankReport& out,
                        TimeNs tolerance_ns = kSerializationToleranceNs);

}  // namespace ddpscope::analysis
