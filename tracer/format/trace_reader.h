#pragma once
// Reader for Chrome-trace / Kineto JSON and our own files (a superset), plain or gzip.

#include <atomic>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

#include "file_io.h"
#include "trace_model.h"

namespace ddpscope::trace {

struct ReadOptions {
  ReadLimits limits = defaultReadLimits();
  // Polled while parsing; when it becomes true the read stops with LoadCancelled.
  const std::atomic<bool>* cancel = nullptr;
  // Called now and then with the fraction of the input parsed, 0..1.
  std::function<void(double)> progress;
  // Documents of at least four times this size are parsed a piece of the event array at a
  // time, so the parser's memory stays small and warm (the indexes and tape simdjson writes for
  // a piece are written again for the next one, where a whole document touches fresh memory for
  // all of it); 0 parses every document whole. The result and every error message are the
  // same either way.
  std::size_t piece_bytes = std::size_t{512} << 10;
  // A mapped file of up to this size is copied whole into memory of this thread's (one read,
  // which also gives its content hash) and parsed there, in pieces when it is big enough; a
  // bigger one is parsed in pieces each copied from the file. The result is the same either way.
  std::size_t copy_whole_at_most = std::size_t{16} << 20;
  // Threads that may parse the pieces of one document (loadRun gives a file the cores the other
  // files leave free). The result is the same for any number.
  unsigned threads = 1;
  // When set (readTraceFile), the file's content hash (fileContentHash's value) is stored here
  // if the reader had the file's own bytes in memory whole on the way (a file read or copied
  // whole, or a gzip file before inflating), so that a caller needing both does not read the
  // file twice; left unset otherwise (a big plain file parsed in pieces).
  std::optional<std::uint64_t>* content_hash = nullptr;
};

class LoadCancelled : public std::runtime_error {
 public:
  LoadCancelled() : std::runtime_error("loading was cancelled") {}
};

// Reads one rank's trace file. Throws TraceError (file, byte offset, what was expected) on
// malformed input and LoadCancelled when cancelled. The result is canonical: tracks sorted
// (GPU tracks by device and stream, then host tracks by pid and tid), events sorted by start,
// times rebased so the earliest event is at 0 (base_time_ns keeps absolute times).
RankTrace readTraceFile(const std::string& path, const ReadOptions& options = {});

// Parses trace JSON already in memory; `name` is used in error messages and as the path.
RankTrace parseTrace(const PaddedBuffer& json, const std::string& name,
                     const ReadOptions& options = {});
// How the last successful parse on this thread went: the number of pieces the event array was
// parsed in (0: as one document). For tests and benchmarks.
struct ReadStats {
  std::size_t pieces = 0;
  std::size_t threads = 1;  // threads that parsed them
  // A .json.gz parsed while a second thread inflated it (readTraceFile; PERFORMANCE.md).
  bool inflated_while_parsing = false;
  // One that was tried so and did not work out (a corrupt or multi-member stream, pieces that
  // failed): read again the usual way, which gave this result or error.
  bool inflate_stream_fell_back = false;
};
ReadStats lastReadStats();

// The reader keeps its JSON parser, staging memory and two buffers (a piece copied from a file,
// and a whole file of up to ReadOptions::copy_whole_at_most) per thread from one file to the next
// (a run's ranks are read one after another on each loader thread); this gives this thread's
// back.
void releaseReaderMemory();

RankTrace parseTraceText(std::string_view json, const std::string& name = "<memory>",
                         const ReadOptions& options = {});

}  // namespace ddpscope::trace
