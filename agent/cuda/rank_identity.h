#pragma once
// Who this process is in a multi-process job, from the launcher's environment variables.

#include <cstdint>
#include <optional>
#include <string>

namespace ddpscope::agent::cuda {

struct RankIdentity {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  std::int32_t local_rank = 0;
  std::string launcher;  // "ddpscope", "torchrun", "mpirun", "srun", or "" (single process)
  std::string job_key;   // distinguishes concurrent jobs sharing a rendezvous folder
};

// From DDPSCOPE_RANK/DDPSCOPE_WORLD_SIZE/DDPSCOPE_LOCAL_RANK (our local launcher),
// RANK/WORLD_SIZE/LOCAL_RANK (torchrun), OMPI_COMM_WORLD_* (Open MPI), PMI_RANK/PMI_SIZE, or
// SLURM_PROCID/SLURM_NTASKS/SLURM_LOCALID; empty when none is set. Throws std::invalid_argument
// for values that are not numbers or out of range.
std::optional<RankIdentity> rankIdentityFromEnvironment();

}  // namespace ddpscope::agent::cuda
