#pragma once
// Who kept the others waiting, over the whole run: the matched collectives' late ranks and the
// ranks' exposed communication split into waiting and transfer (docs/METRICS.md "Late rank").
// No Qt.

#include <cstdint>
#include <optional>

#include "app/analysis/analysis.h"

namespace ddpscope::analysis {

struct StragglerSummary {
  // Whether the late rank was looked for: always for a run's report; for a run read from its
  // digest, when the digest recorded it (digestStragglers).
  bool late_known = false;
  // Matched collectives at which some rank started after the others (skew > 0).
  std::int32_t skewed = 0;
  // The rank that started last at more than half of those, when there is one.
  std::optional<std::int32_t> late_rank;
  std::int32_t late_count = 0;  // how many of the skewed collectives late_rank started last at
  // Σ over the ranks that have the split (RankReport::exposed_wait_ns / exposed_transfer_ns) of
  // their whole trace's exposed communication: waiting for a late rank, and transfer not hidden.
  // None when no rank's collectives could be matched.
  std::optional<TimeNs> exposed_wait_ns, exposed_transfer_ns;
  // exposed_wait / (exposed_wait + exposed_transfer), a percentage; none without exposed
  // communication in the split.
  std::optional<double> wait_pct;
  std::optional<double> transfer_pct;  // 100 − wait_pct
  // The hidden split, over the same ranks (whole trace): hidden communication inside waits for
  // a late rank (a wait under compute, which the overlap counts as hidden), and the overlap of
  // the transfers alone, Σ hidden transfer / Σ transfer in % (none without transfer).
  std::optional<TimeNs> hidden_wait_ns;
  std::optional<double> transfer_overlap_pct;
  // The overlap of the same ranks over the same whole traces, waits included (Σ hidden / Σ
  // communication): what transfer_overlap_pct is to be read against (the headline's overlap
  // covers the selected steps only).
  std::optional<double> whole_overlap_pct;
};
// One rank's hidden split: (hidden inside its waits, transfer overlap %), none without the
// matched split.
struct HiddenSplit {
  TimeNs hidden_wait_ns = 0, hidden_transfer_ns = 0, transfer_ns = 0;
  std::optional<double> transfer_overlap_pct;
};
std::optional<HiddenSplit> hiddenSplit(const RankReport& rank);
StragglerSummary summarizeStragglers(const RunReport& report);
// Adds one rank's exposed split (its whole trace's waiting and transfer) to the run's sums; a
// rank without both is left out. The one place the run's sums are made.
void addExposedSplit(StragglerSummary& s, std::optional<TimeNs> wait_ns,
                     std::optional<TimeNs> transfer_ns);
// wait_pct and transfer_pct of exposed_wait_ns and exposed_transfer_ns (none unless both are
// known and their sum is above 0): the one definition of the exposed split's shares.
void setExposedShares(StragglerSummary& s);

}  // namespace ddpscope::analysis
