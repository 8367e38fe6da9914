#pragma once
// Writer for the Kineto layout of docs/FORMAT.md with our "ddpscope" block.

#include <string>

#include "file_io.h"
#include "trace_model.h"

namespace ddpscope::trace {

struct WriteOptions {
  // gzip the output; by default decided by the path (".gz" suffix).
  enum class Compression { ByPath, Gzip, Plain } compression = Compression::ByPath;
  int gzip_level = 3;
  // Chooses the file's name just before it is published (file_io.h); empty: the path given.
  FinalPath final_path;
};

// The JSON text of a rank's trace: Chrome Trace Event JSON that Perfetto, chrome://tracing and
// Holistic Trace Analysis open unchanged.
std::string serializeTrace(const RankTrace& trace);

// Writes atomically (temporary file, then rename) and returns the path written. Throws
// std::runtime_error on failure; the destination is then untouched.
std::string writeTraceFile(const RankTrace& trace, const std::string& path,
                           const WriteOptions& options = {});

}  // namespace ddpscope::trace
