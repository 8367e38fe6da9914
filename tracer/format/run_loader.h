#pragma once
// Loads a run: a folder of rank-<r>.json[.gz] files, or several files, as one multi-rank run.
// Every file is read by the importer the registry finds for it (importer.h); one file may hold
// several ranks (an Nsight Systems capture of several processes).

#include <atomic>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "importer.h"
#include "trace_model.h"
#include "trace_reader.h"

namespace ddpscope::trace {

struct RunLoadOptions {
  ReadLimits limits = defaultReadLimits();
  const std::atomic<bool>* cancel = nullptr;
  // Overall fraction loaded, 0..1; may be called from worker threads.
  std::function<void(double)> progress;
  unsigned threads = 0;  // 0: one per core, at most one per file
  // Leave out the files that cannot be read (malformed or truncated JSON or gzip, an unsupported
  // format), each named with why in Run::unreadable_files (the analysis warns of them), instead
  // of refusing the run; their ranks are then ranks of the world without a trace. A run none of
  // whose files can be read is still an error, and so are files of different runs or two files
  // of one rank.
  bool skip_unreadable = false;
};

// Whether a file begins as a run digest does ({"ddpscope_digest": ..., inflated when gzip),
// reading only its first bytes; false for unreadable files. How a digest is told from a trace.
bool startsAsRunDigest(const std::string& path);

// The trace files a path stands for: the path itself if it is a file; for a folder, its rank-*
// files, or when it has none, every file in it with an importer's extension (*.json[.gz],
// *.sqlite, ...). Sorted by name. A run digest in the folder (kept beside the traces it was made
// of) is passed over. The other trace files of a folder that has rank files go to *skipped when
// it is given. A folder without trace files is an error that names its subfolders that have
// some (a run kept as one folder per node).
std::vector<std::string> expandTracePaths(const std::vector<std::string>& paths,
                                          std::vector<std::string>* skipped = nullptr);
// Why `r` cannot be a rank of the run whose world `declared` states: a rank at or beyond a
// declared world of two or more (a world of 1 is also what an importer that says nothing leaves).
// `numbered_by_order`: r's number came from its file's process order, after the files before it.
std::optional<std::string> rankOutsideDeclaredWorld(const RankTrace& declared, const RankTrace& r,
                                                    bool numbered_by_order);

// Throws TraceError naming a file that `files` holds twice (by name and through its folder, say):
// a slip of the command line that would make two ranks 0, or a made-up second rank.
void refuseRepeatedFiles(const std::vector<std::string>& files);

// Reads every file (in parallel), orders ranks, and aligns them on a common time base so that
// equal absolute times have equal model times across ranks. Throws TraceError for a bad file
// (naming it), for duplicate ranks, for files that declare different world sizes (not one run),
// or when no trace file is found. Trace files of a folder left out (not rank-<r> files beside
// rank files) are listed in run.skipped_files.
// Why two files cannot be ranks of one run (a different source, declared world size,
// distributed backend or producer setting such as the bucket size), in words naming the
// setting ("its bucket_mb is 100, not 5"); none when they can.
std::optional<std::string> runIdentityDifference(const RankTrace& a, const RankTrace& b);
// The producer's settings every rank of a run shares (the keys runIdentityDifference compares),
// and whether two raw JSON values of one are the same ("25", "25.0" and "2.5e1" are).
std::span<const std::string_view> runSettingKeys();
bool sameSettingValue(std::string_view a, std::string_view b);
// What sameSettingValue compares numbers by, and how a setting reads (analysis::settingText):
// a whole number's digits without its leading zeros, signed ("-0012" -> "-12", "-0" -> "0"),
// none for anything else; and a value that is exactly a 32-bit float, that float's shortest
// decimal form (0.05000000074505806 -> "0.05"), none otherwise.
std::optional<std::string> wholeNumberText(std::string_view raw);
std::optional<std::string> float32Text(double v);
// A recorded setting as a person reads it, in every message that names one: a whole number as
// written (its leading zeros aside: sameSettingValue compares them digit by digit, beyond a
// double's precision); another number in the shortest form that reads back as the same double
// (0.1, not the 0.10000000000000001 it was written as; not the locale's), or, for a 32-bit float
// written in full, that float's shortest form (0.05000000074505806 reads 0.05, as
// sameSettingValue takes it); a string without its quotes; the simulator's straggler rank -1
// as "none".
std::string settingText(std::string_view key, std::string_view raw);

Run loadRun(const std::vector<std::string>& paths, const RunLoadOptions& options = {});

// How ranks of several files are numbered (loadRun, and the digest, which reads files apart):
// ranks a file numbers by their order in it continue after the ranks of the files before it, so
// that several exports (one per node) open as one run; their world size, when undeclared, is at
// least the number of ranks. `note` says when a rank was renumbered. One file: left as it is.
struct RankNumber {
  RankOrigin origin = RankOrigin::Declared;
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  bool world_size_declared = true;
  std::string note;
};
void numberRanksAcrossFiles(std::vector<std::vector<RankNumber>>& files);

// Aligns ranks already in memory on their common base (the earliest base among them). Throws
// TraceError naming a rank's file when the ranks' clocks are too far apart to share a time base
// (kMaxTraceSpanNs), which only corrupt or unrelated files are.
void alignRanks(Run& run);

}  // namespace ddpscope::trace
