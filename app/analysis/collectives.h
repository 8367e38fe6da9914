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

// The pieces of matchCollectives, for callers that do not hold every rank's trace at once (the
// run digest): a rank's communication kernels in a few numbers each, the matching of every
// rank's kernels, and one rank's exposed split from the matching.
struct CollectiveTiming {
  CollectiveKind kind = CollectiveKind::Unknown;       // what it is matched as (rule, else args)
  CollectiveKind rule_kind = CollectiveKind::Unknown;  // the rule's alone (the per-kind table's)
  std::string group;  // process group, "" when the trace names none
  std::int64_t seq = -1;
  TimeNs start = 0, end = 0;
  std::int64_t bytes = -1;
  std::int32_t step = trace::kNoStep;
  std::int32_t ranks = 1;  // p of its busbw (collectiveRanks)
  EventRef ref;            // the kernel in its rank's trace
};
std::vector<CollectiveTiming> collectiveTimings(const trace::RankTrace& rank,
                                                const RankActivity& act);

// One rank's kernel of a matched collective, in the few numbers its bandwidth needs.
struct MatchedKernel {
  CollectiveKind kind = CollectiveKind::Unknown;  // the rule's (CollectiveTiming::rule_kind)
  std::int64_t bytes = -1;
  std::int32_t ranks = 1;                  // p of its busbw (collectiveRanks)
  TimeNs start = 0, arrived = 0, end = 0;  // arrived: the last rank's start, within the kernel
};
struct CollectiveMatching {
  std::vector<MatchedCollective> matched;  // in time order
  std::string matched_by;
  std::vector<std::string> warnings;
  std::vector<std::vector<Interval>> waits;         // per rank: its waits for the last rank
  std::vector<bool> involved;                       // per rank: in at least one matched collective
  std::vector<std::vector<MatchedKernel>> kernels;  // per rank: its matched kernels
};
// Timings and rank numbers of the ranks in report order.
CollectiveMatching matchTimings(const std::vector<std::vector<CollectiveTiming>>& timings,
                                const std::vector<std::int32_t>& rank_numbers);
// Fills the exposed_wait/transfer split of the rank at `rank_index` and its steps' matched wait
// and transfer, from the rank's exposed communication (∪comm \ ∪compute: all the split needs),
// and puts the bandwidth of its per-kind collectives and buckets on the transfer parts of its
// matched kernels (BandwidthBasis::Transfer).
// `offset_ns`: what the matching's times are ahead of the report's (the digest matches in
// absolute time, each rank's report is in its own).
void applyMatchedSplit(const CollectiveMatching& matching, std::size_t rank_index,
                       const IntervalSet& exposed, RankReport& rr, TimeNs offset_ns = 0);
// Whether waiting for a late rank can be told from transfer in this run: only when no rank of
// the declared world is missing (the report's completeness is filled). A rank not loaded may be
// the late one: the loaded ranks' wait for it would read as transfer. When not, the split stays
// unknown (null) everywhere, and the report says why (matchedSplitUnknownWarning).
bool matchedSplitKnown(const RunReport& report);
std::string matchedSplitUnknownWarning(const RunReport& report);

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
