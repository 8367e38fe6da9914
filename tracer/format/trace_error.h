#pragma once
// Errors a user can act on: which file, where in it, and what was expected.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

namespace ddpscope::trace {

inline constexpr std::uint64_t kNoOffset = ~std::uint64_t{0};

class TraceError : public std::runtime_error {
 public:
  TraceError(std::string file, std::uint64_t offset, std::string what);
  const std::string& file() const { return file_; }
  std::uint64_t offset() const { return offset_; }  // kNoOffset when unknown
  const std::string& detail() const { return detail_; }

 private:
  std::string file_;
  std::uint64_t offset_;
  std::string detail_;
};

// A file's bytes could not be read again while its events were parsed (it was shortened or
// replaced, or the disk failed): said as it is, never retried through another way of reading.
class SourceUnreadable : public TraceError {
 public:
  using TraceError::TraceError;
};

// Files of a run of several could not be read (loadRun without skip_unreadable): the error of
// the first, and how many of the run's files were read and not (both 0 when not counted: a
// digest stops at the first). The run can be loaded without them (RunLoadOptions::
// skip_unreadable, DigestOptions::skip_unreadable), as the app offers.
class UnreadableRunFiles : public TraceError {
 public:
  UnreadableRunFiles(const TraceError& first, std::size_t read_files, std::size_t unreadable_files)
      : TraceError(first.file(), first.offset(), first.detail()),
        read(read_files),
        unreadable(unreadable_files) {}
  std::size_t read, unreadable;
};

}  // namespace ddpscope::trace
