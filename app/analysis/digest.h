#pragma once
// The run digest (docs/DIGEST.md): a small file with, per rank, the summary figures and, per rank
// and step, step time, exposed communication and the matched collectives' wait and transfer,
// made without holding more than one rank's trace per thread in memory. No Qt.

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/collectives.h"
#include "tracer/format/importer.h"

namespace ddpscope::analysis {

// 2: the trace files' hash is XXH3 (`xxh3_64`); version 1 wrote FNV-1a (`fnv1a64`), still read.
// 3: the producer's configuration (`producer`: DigestProducer), so that runs compare from their
// digests like for like; versions 1 and 2 are read without it.
inline constexpr int kDigestVersion = 3;

// What a digest keeps of the producer of its traces: the first rank's (the rank order's)
// distributed backend and the run settings of its `ddpscope` block (trace::runSettingKeys, raw
// JSON as written, but its run id): its model, sizes, backend, bucket caps and every setting a
// sweep or Compare warns of when it differs (sweepSettings). An imported trace records none.
struct DigestProducer {
  std::string distributed_backend;  // "" when not recorded
  trace::DdpscopeBlock block;       // its config, and `present` when that holds any
  bool operator==(const DigestProducer&) const = default;
};
DigestProducer digestProducer(const trace::RankTrace& first_rank);

// How a digest hashed its trace files' bytes (64 bits each).
enum class FileHashKind {
  Xxh3,  // XXH3, seed 0 (trace::fileContentHash): what digests are made with
  Fnv1a  // FNV-1a, in digests of version 1
};

// The trace file a rank was read from.
struct DigestFile {
  std::string name;         // the file name, without its folder
  std::uint64_t bytes = 0;  // its size
  std::uint64_t hash = 0;   // of its bytes, by hash_kind: tells a changed file from the same one
  FileHashKind hash_kind = FileHashKind::Xxh3;
};
// The hash of a file's bytes; throws std::runtime_error when the file cannot be read.
std::uint64_t fileHash(const std::string& path, FileHashKind kind = FileHashKind::Xxh3);
// The key a digest writes the hash under: "xxh3_64" or "fnv1a64".
const char* fileHashKey(FileHashKind kind);

// What one rank contributes to a digest: its report and what matching needs, its trace dropped.
// Times of `timings`, `comm` and `compute` are absolute (the trace's base added) so that ranks
// read apart can be matched.
struct RankPartial {
  RankReport report;
  std::vector<CollectiveTiming> timings;
  IntervalSet exposed;  // ∪comm \ ∪compute (model time + base): for the matched split
  // Per step of report.steps, its exposed communication (stepExposed, model time + base): for
  // the matched split per step (splitStepExposed), as a run's analysis makes it.
  std::vector<IntervalSet> step_exposed;
  DigestFile file;
  bool written_by_ddpscope = false;
  trace::RankTrace identity;  // the trace without its events: to refuse files of other runs
  trace::RankOrigin origin = trace::RankOrigin::Declared;  // how its file numbered it
  std::size_t file_index = 0;      // its file's place in the run's sorted file list
  std::size_t trace_warnings = 0;  // report.warnings' first ones that are the trace's own
  TimeNs base_time_ns = 0;         // the report's times + this = the timings' (absolute time)
};

// The ranks of one trace file (a file may hold several).
std::vector<RankPartial> digestFile(const std::string& path, const AnalysisOptions& options,
                                    std::size_t file_index = 0);

// The run of the partials (numbered across files as loading a run numbers them, then sorted by
// rank): completeness, collectives matched across ranks and each rank's exposed split, as
// analyzeRun gives them for the same files.
// `hta_compat`: the partials are of HTA's window (AnalysisOptions::hta_compat), where no rank is
// named as the first to go quiet (firstQuietRank).
RunReport mergePartials(std::vector<RankPartial>& parts, bool hta_compat = false);

struct DigestOptions {
  AnalysisOptions analysis;
  unsigned threads = 0;  // 0: one per core, at most one per file
  std::function<void(std::size_t done, std::size_t total)> progress;  // from worker threads
  // Set (from any thread) to stop: looked at before each file is read; once the files being read
  // are done, digestFiles (and digestRun) throw DigestCancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Leave out the files that cannot be read, naming them in a warning of the digest
  // (unreadableFilesWarning), as trace::RunLoadOptions::skip_unreadable does for a run; a run none
  // of whose files can be read is still an error.
  bool skip_unreadable = false;
};

struct DigestCancelled : std::runtime_error {
  DigestCancelled() : std::runtime_error("the digest was cancelled") {}
};

// The digest of the run at `paths` (files or run folders), as JSON text. Throws TraceError for a
// bad file (naming it) and std::runtime_error for two files of one rank.
std::string digestRun(const std::vector<std::string>& paths, const DigestOptions& options);

// The steps of digestRun, for processes that each read a share of the files (MPI): the partials
// of some files (on `options.threads` threads), and the digest of every rank's partials.
// `indices`: each file's place in the run's whole file list (default: 0, 1, ...).
// A file left out as unreadable: its place in the run's file list and its reader's message.
struct UnreadableFile {
  std::size_t index = 0;
  std::string why;
};
// With options.skip_unreadable, the files that cannot be read are left out and added to
// *unreadable (which must then be given).
std::vector<RankPartial> digestFiles(const std::vector<std::string>& files,
                                     const DigestOptions& options,
                                     const std::vector<std::size_t>& indices = {},
                                     std::vector<UnreadableFile>* unreadable = nullptr);
// `skipped_files`: the folder's other trace files that were passed over (named in a warning);
// `unreadable`: the files left out as unreadable, in any order (named in a warning in file order;
// an error when no file was read).
std::string finishDigest(std::vector<RankPartial>& parts, const DigestOptions& options,
                         const std::vector<std::string>& skipped_files,
                         std::vector<UnreadableFile> unreadable = {});
// Partials as bytes and back (everything the digest and the run summary use), with the messages
// of the files left out as unreadable. Throws std::runtime_error for bytes that are not an
// encoding of partials.
std::string encodePartials(const std::vector<RankPartial>& parts,
                           const std::vector<UnreadableFile>& unreadable = {});
std::vector<RankPartial> decodePartials(std::string_view bytes,
                                        std::vector<UnreadableFile>* unreadable = nullptr);

// The JSON text of a digest from a merged run, its files (in the run's rank order) and its
// producer (digestProducer of its first rank).
std::string digestToJson(const RunReport& report, const std::vector<DigestFile>& files,
                         const DigestProducer& producer);

}  // namespace ddpscope::analysis
