#pragma once
// Where a traced process writes its trace and as which rank, from the launcher's environment
// (torchrun: RANK/WORLD_SIZE, Open MPI: OMPI_COMM_WORLD_*, Slurm: SLURM_PROCID/SLURM_NTASKS).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ddpscope::cupti {

using EnvLookup = std::function<const char*(const char*)>;
// std::getenv, as an EnvLookup.
EnvLookup processEnvironment();

struct RunIdentity {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  bool world_size_known = false;  // from WORLD_SIZE & co., not the rank + 1 guessed
  std::string rank_variable;      // the variable the rank came from; "" when defaulted to 0
  std::string trace_dir = ".";
  std::size_t buffer_cap_bytes = 0;
  std::vector<std::string> warnings;  // ignored malformed values, for stderr
};

inline constexpr std::size_t kDefaultBufferCapMb = 256;

// RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID (first set wins, default 0); WORLD_SIZE,
// OMPI_COMM_WORLD_SIZE, SLURM_NTASKS (default 1); DDPSCOPE_TRACE_DIR (default "."),
// DDPSCOPE_CUPTI_BUFFER_MB (default kDefaultBufferCapMb, at least 1).
RunIdentity runIdentityFromEnvironment(const EnvLookup& env = processEnvironment());

// "<trace_dir>/rank-<rank>.json.gz".
std::string rankTracePath(const RunIdentity& id);

// The name a traced process publishes its trace under, chosen just before the rename: `path`
// (rankTracePath), unless a file of that name was written at or after `since_ns` (ns since the
// Unix epoch: when this process started tracing), i.e. by another process of the same run that
// claims the same rank (RANK unset under torch.multiprocessing.spawn, a CUDA subprocess that
// inherited RANK). Then "<dir>/rank-<rank>.pid<pid>.json.gz", so that neither trace is lost.
// A file older than since_ns is an earlier run's and is replaced.
std::string unclaimedTracePath(const std::string& path, std::int32_t rank, std::int64_t pid,
                               std::int64_t since_ns);

}  // namespace ddpscope::cupti
