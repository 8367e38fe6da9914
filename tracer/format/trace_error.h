#pragma once
// Errors a user can act on: which file, where in it, and what was expected.

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

}  // namespace ddpscope::trace
