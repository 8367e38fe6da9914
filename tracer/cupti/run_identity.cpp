#include "run_identity.h"

#include <sys/stat.h>

#include <charconv>
#include <cstdlib>
#include <string_view>

namespace ddpscope::cupti {

namespace {

// Parses a non-negative decimal integer that fits in T; false for anything else.
template <typename T>
bool parseCount(std::string_view s, T& out) {
  T value{};
  const auto* end = s.data() + s.size();
  auto [ptr, ec] = std::from_chars(s.data(), end, value);
  if (ec != std::errc() || ptr != end || s.empty() || value < 0) return false;
  out = value;
  return true;
}

// The first of `names` that is set and well formed; malformed ones are reported and skipped.
template <typename T>
bool firstCount(const EnvLookup& env, std::initializer_list<const char*> names, T& out,
                std::string* from, std::vector<std::string>& warnings) {
  for (const char* name : names) {
    const char* v = env(name);
    if (v == nullptr || *v == '\0') continue;
    if (parseCount(v, out)) {
      if (from != nullptr) *from = name;
      return true;
    }
    warnings.push_back(std::string("ignoring ") + name + "=\"" + v +
                       "\": expected a non-negative integer");
  }
  return false;
}

}  // namespace

EnvLookup processEnvironment() {
  return [](const char* name) -> const char* { return std::getenv(name); };
}

RunIdentity runIdentityFromEnvironment(const EnvLookup& env) {
  RunIdentity id;
  firstCount(env, {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID"}, id.rank, &id.rank_variable,
             id.warnings);
  std::int32_t world = 0;
  if (firstCount(env, {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"}, world, nullptr,
                 id.warnings)) {
    if (world >= 1) {
      id.world_size = world;
      id.world_size_known = true;
    } else {
      id.warnings.push_back("ignoring a world size of 0");
    }
  }
  if (id.rank >= id.world_size) {
    id.world_size = id.rank + 1;
    id.world_size_known = false;  // a rank past the world size: the size is not to be trusted
  }
  if (const char* dir = env("DDPSCOPE_TRACE_DIR"); dir != nullptr && *dir != '\0') {
    id.trace_dir = dir;
  }
  std::size_t mb = kDefaultBufferCapMb;
  if (firstCount(env, {"DDPSCOPE_CUPTI_BUFFER_MB"}, mb, nullptr, id.warnings) && mb == 0) {
    id.warnings.push_back("DDPSCOPE_CUPTI_BUFFER_MB=0 raised to 1");
    mb = 1;
  }
  id.buffer_cap_bytes = mb * std::size_t{1024} * 1024;
  return id;
}

std::string unclaimedTracePath(const std::string& path, std::int32_t rank, std::int64_t pid,
                               std::int64_t since_ns) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return path;
  const std::int64_t written =
      static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
  if (written < since_ns) return path;
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? std::string() : path.substr(0, slash + 1);
  return dir + "rank-" + std::to_string(rank) + ".pid" + std::to_string(pid) + ".json.gz";
}

std::string rankTracePath(const RunIdentity& id) {
  std::string path = id.trace_dir;
  if (!path.empty() && path.back() != '/') path += '/';
  return path + "rank-" + std::to_string(id.rank) + ".json.gz";
}

}  // namespace ddpscope::cupti
