#pragma once
// What the app says about a run in words: its warnings, how many ranks it has, why it is
// incomplete, and the title line of an exported figure.

#include <QString>
#include <QStringList>
#include <cstddef>
#include <cstdint>
#include <optional>

#include "app/analysis/stragglers.h"
#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

// What the "INCOMPLETE" badge's tooltip says: why, and what the numbers cover ("" when complete).
QString incompleteExplanation(const Completeness& c, std::size_t ranks_loaded);

// What the analysis warns about the run (the CLI's "warning:" lines): the run's, then each
// rank's prefixed "rank R: ".
QStringList runWarnings(const LoadedRun& run);
// "1 rank", "8 ranks", or "3 of 4 ranks" when ranks of the run's world have no trace here.
QString ranksText(const LoadedRun& run);
// "1 warning", "3 warnings".
QString warningCount(qsizetype n);

// How the run's exposed communication splits (whole trace, all ranks: analysis::
// summarizeStragglers), and the late rank when one dominates: "Exposed communication: 81.2 %
// waiting for a late rank (rank 2, last at 30 of 32 skewed collectives), 18.8 % transfer not
// hidden (whole trace)". "" when no collective could be matched (one rank).
QString stragglerText(const LoadedRun& run);
// The same of a summary (a run's, or a digest's: analysis::digestStragglers); without the late
// rank's part where the text beside it names it already.
QString stragglerText(const analysis::StragglerSummary& late, bool name_late_rank = true);

// In a run cut short, the rank that went quiet first (analysis::firstQuietRank): "Rank 2 went
// quiet first: its GPU work ends 5.67 ms before any other rank's". "" when none did.
QString firstQuietText(const analysis::RunSummary& summary);

// The title of an exported figure, so that a slide says what it shows: the run's name, its source
// badge (INCOMPLETE, "N of W ranks" or "N ranks pooled") and the headline numbers.
// two_lines: the numbers on a line of their own, for narrow figures.
QString runTitle(const LoadedRun& run, bool two_lines = false);

// What a matched collective says of the rank that started last and of one rank's wait and
// transfer, for its tooltip and Details. With ranks of the world without a trace, the last of
// the loaded ranks may not be the last (a missing one may have started later), so the late rank
// is said to be of the loaded ranks and the wait and transfer are not told apart
// (analysis::matchedSplitKnown).
struct MatchedCollectiveText {
  QString late_rank;  // "rank 3", "none (all started together)", "... among the loaded ranks"
  bool split_known = true;
  QString split_unknown;  // when not: "not told apart: ranks 3, 7 have no trace"
};
MatchedCollectiveText matchedCollectiveText(const analysis::RunReport& report,
                                            const analysis::MatchedCollective& m);
// The transfer part of event `index` of track `track` of the rank at `rank_index` when it is a
// kernel of a collective matched on every rank of the world (the time its bandwidth divides by:
// analysis::BandwidthBasis::Transfer), none otherwise: its tooltip's and Details' rows.
std::optional<trace::TimeNs> matchedTransferTime(const LoadedRun& run, std::int32_t rank_index,
                                                 std::int32_t track, std::uint32_t index);

}  // namespace ddpscope::ui
