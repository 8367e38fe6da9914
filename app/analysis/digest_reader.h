#pragma once
// Reading a run digest (docs/DIGEST.md) back: the figures digestRun wrote, as numbers, and what
// the app's Digest view shows of them (the ranks × steps grid of one figure, the run's late
// rank). No Qt.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/analysis/digest.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/stragglers.h"
#include "app/analysis/sweep.h"

namespace ddpscope::analysis {

// One step of one rank, as the digest states it (times in nanoseconds).
struct DigestStep {
  std::int32_t step = 0;
  TimeNs dur_ns = 0;
  std::optional<double> overlap_pct;
  TimeNs exposed_ns = 0;
  std::optional<double> dp_efficiency;
  std::optional<TimeNs> matched_wait_ns, matched_transfer_ns;
};

struct DigestRank {
  std::int32_t rank = 0;
  std::int32_t world_size = 0;
  std::string source;
  bool incomplete = false;
  std::optional<DigestFile> file;  // none when the digest does not name it
  // The whole trace's figures (OverlapMetrics' names; first_ns/last_ns/busy_ns are not kept).
  OverlapMetrics whole;
  std::optional<TimeNs> exposed_wait_ns, exposed_transfer_ns;
  std::vector<DigestStep> steps;
  std::vector<std::string> warnings;  // the rank's own (its report's), as summary --json's
};

struct Digest {
  int version = 0;
  // The run summary as written: selection, headline figures (per_rank is not in a digest).
  RunSummary run;
  std::string rules;
  std::string matched_by;
  std::int64_t matched_collectives = 0;
  // The run's late rank as summarizeStragglers found it over the matched collectives when the
  // digest was made (`late_rank`, `late_rank_last_in`, `collectives_with_skew`); none in a digest
  // written before the format kept it.
  struct LateRank {
    std::int32_t skewed = 0;
    std::optional<std::int32_t> rank;
    std::int32_t last_in = 0;
  };
  std::optional<LateRank> late;
  std::vector<std::string> warnings;
  std::vector<DigestRank> ranks;  // in the digest's (rank) order
  // Version 3 on; none in a digest of version 1 or 2 (its settings are then not known).
  std::optional<DigestProducer> producer;
};

// Parses digest JSON; `name` (the file) prefixes every error. Throws trace::TraceError naming
// what is wrong: not JSON, not a digest, a newer version, a missing or mistyped field (with
// the rank and step it belongs to).
Digest parseDigest(std::string_view json, const std::string& name);
// Reads a digest file, gzip-compressed or not (detected by its bytes).
Digest readDigest(const std::string& path);
// The digest's run in one line, as runConfigurationText names a loaded run: "from its digest ·
// simulated · mlp, 4 layers, hidden 1024 · backend sim · 4 ranks · buckets 25 MiB (first 1 MiB)"
// (a digest of version 1 or 2 keeps no model or backend: "from its digest · simulated · 4 ranks
// · ...").
std::string digestConfigurationText(const Digest& digest, bool with_buckets = true);
// Its source, world size and model (version 3 on; not known, so not compared, before).
RunIdentity digestIdentity(const Digest& digest);
// The digest's run as a measured sweep or Compare sets it beside others (measuredRun's
// counterpart): its summary, selected step times, identity, configuration without buckets, the
// settings of its producer (version 3 on; not known before) and the cap its bucket setting states
// (digestBucketMb), labelled `label`, at `bucket_mb`.
MeasuredRun measuredDigest(const Digest& digest, const std::string& label, double bucket_mb);
// The cap a digest's bucket setting states: "25 MiB (first 1 MiB)" 25, "per tensor" 0; none
// when it states no size.
std::optional<double> digestBucketMb(const Digest& digest);
// selectedStepTimes of the digest's ranks over its run summary's steps.
std::vector<TimeNs> digestStepTimes(const Digest& digest);

// Whether the file starts as a digest does ({"ddpscope_digest": ...), reading only its first
// bytes (inflated when gzip); false for unreadable files. How the app tells a digest from a trace.
bool isDigestFile(const std::string& path);

// The figures the Digest view can show per rank and step.
enum class DigestFigure {
  StepTime,     // the step's time (dur_us)
  ExposedComm,  // its exposed communication (exposed_comm_us)
  MatchedWait,  // its matched collectives' wait for the last rank (matched_wait_us)
};
inline constexpr int kDigestFigureCount = 3;
std::string_view digestFigureName(DigestFigure f);  // "step time", ...
// What a cell of the figure is, in a sentence (the Digest tab's note under its controls).
std::string_view digestFigureDefinition(DigestFigure f);

// One figure over ranks × steps: columns are every step number any rank has, ascending; a cell is
// empty where the rank has no such step or the figure is null there.
struct DigestGrid {
  DigestFigure figure = DigestFigure::StepTime;
  std::vector<std::int32_t> steps;  // column → step number
  // row → rank number: the digest's ranks and the ranks of the world it has no trace of
  // (Digest::run.missing_ranks), in rank order.
  std::vector<std::int32_t> ranks;
  std::vector<char> no_trace;                // per row: 1 for a rank of the world without a trace
  std::vector<std::optional<TimeNs>> cells;  // row-major: cells[row * steps.size() + column]
  // The colour scale: over the cells of the run summary's selected steps that have a value (every
  // cell with a value when none has, as for a whole-trace summary).
  std::optional<TimeNs> min_ns, max_ns;
  // Per column: 1 for a step outside the run summary's selection (a warm-up step, one not on
  // every rank, one cut short), drawn but outside the scale; all 0 when the summary covers the
  // whole trace.
  std::vector<char> left_out;
  const std::optional<TimeNs>& at(std::size_t row, std::size_t column) const {
    return cells[row * steps.size() + column];
  }
};
DigestGrid digestGrid(const Digest& digest, DigestFigure figure);

// The run's late rank and exposed split, as summarizeStragglers gives them for the run's traces:
// the late rank as the digest recorded it (late_known false when it did not), the exposed split
// summed over the ranks that have it. The hidden split is not kept in a digest: none.
StragglerSummary digestStragglers(const Digest& digest);

// The trace files of some ranks (digest rank numbers); each file once, in rank order. A rank's
// file is looked for, by the name the digest gives it, in each of `folders` (a digest file's own
// folder, the folders a digest was made of, folders the user adds) and then in their immediate
// subfolders (a run kept as one folder per node). Of the files found, the one of the digest's
// size is it; when several have that size, the one of the digest's hash (only then are files
// read). Throws std::runtime_error naming the rank and the file when the digest does not have
// the rank or does not name its file, when no folder holds it, when every copy found has another
// size (changed since the digest was made), or when no copy of that size has the digest's hash.
std::vector<std::string> digestRankFiles(const Digest& digest,
                                         const std::vector<std::string>& folders,
                                         const std::vector<std::int32_t>& ranks);

}  // namespace ddpscope::analysis
