#include "trace_error.h"

namespace ddpscope::trace {
namespace {
std::string compose(const std::string& file, std::uint64_t offset, const std::string& what) {
  std::string s = file.empty() ? std::string("<memory>") : file;
  if (offset != kNoOffset) s += " (byte " + std::to_string(offset) + ")";
  return s + ": " + what;
}
}  // namespace

TraceError::TraceError(std::string file, std::uint64_t offset, std::string what)
    : std::runtime_error(compose(file, offset, what)),
      file_(std::move(file)),
      offset_(offset),
      detail_(std::move(what)) {}

}  // namespace ddpscope::trace
