#include "agent/cuda/rank_identity.h"

#include <charconv>
#include <cstdlib>
#include <stdexcept>

namespace ddpscope::agent::cuda {

namespace {

std::optional<std::int32_t> envInt(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  std::int32_t out = 0;
  const char* end = v + std::char_traits<char>::length(v);
  auto [p, ec] = std::from_chars(v, end, out);
  if (ec != std::errc() || p != end || out < 0) {
    throw std::invalid_argument(std::string(name) + "=" + v + " is not a non-negative integer");
  }
  return out;
}

std::string envString(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::optional<RankIdentity> rankIdentityFromEnvironment() {
  struct Scheme {
    const char *rank, *size, *local, *launcher, *job;
    const char* step = nullptr;  // a job's steps reuse its id (srun within one allocation)
  };
  static constexpr Scheme kSchemes[] = {
      {"DDPSCOPE_RANK", "DDPSCOPE_WORLD_SIZE", "DDPSCOPE_LOCAL_RANK", "ddpscope", "DDPSCOPE_JOB"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "mpirun",
       "OMPI_MCA_orte_ess_jobid"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "srun", "SLURM_JOB_ID", "SLURM_STEP_ID"},
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "torchrun", "TORCHELASTIC_RUN_ID"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "mpirun", "PMI_JOBID"},
  };
  for (const auto& s : kSchemes) {
    const auto rank = envInt(s.rank);
    const auto size = envInt(s.size);
    if (!rank || !size) continue;
    if (*size < 1 || *rank >= *size) {
      throw std::invalid_argument(std::string(s.rank) + "=" + std::to_string(*rank) +
                                  " does not fit " + s.size + "=" + std::to_string(*size));
    }
    RankIdentity id;
    id.rank = *rank;
    id.world_size = *size;
    id.local_rank = envInt(s.local).value_or(*rank);
    id.launcher = s.launcher;
    id.job_key = envString(s.job);
    if (const std::string step = s.step ? envString(s.step) : ""; !step.empty()) {
      id.job_key += "." + step;
    }
    return id;
  }
  return std::nullopt;
}

}  // namespace ddpscope::agent::cuda
