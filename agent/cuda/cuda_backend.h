#pragma once
// --backend cuda: one process per GPU (rank), started by --launch local, mpirun, srun or torchrun;
// the NCCL id goes from rank 0 to the others through MPI under mpirun/srun in a build with MPI,
// through a file rendezvous otherwise (agent/bootstrap, DDPSCOPE_BOOTSTRAP); the shared training
// loop on a CudaDevice, traced in-process by CUPTI, one rank-<r>.json.gz per rank.

#include <ostream>
#include <string>

#include "agent/agent_options.h"

namespace ddpscope::agent::cuda {

struct CudaRunOptions {
  // "none": this process is one rank (identity from RANK/WORLD_SIZE, OMPI_COMM_WORLD_*, SLURM_*,
  // or rank 0 of 1); "local": start world_size processes on this node, one per visible GPU.
  std::string launch = "none";
  // The watchdog aborts the NCCL communicator when a step makes no progress for this long or NCCL
  // reports an asynchronous error, instead of hanging; the trace so far is written, incomplete.
  double timeout_s = 300;
  bool trace = true;  // false: the same run untraced (to measure the tracer's overhead)
};

// From the command line (--launch, --timeout-s, --no-trace); DDPSCOPE_LAUNCH overrides --launch
// (the local launcher sets it to "none" in the processes it starts).
CudaRunOptions cudaRunOptions(const AgentOptions& options);

int runCudaBackend(const AgentOptions& options, std::ostream& out, std::ostream& err);
int runCudaBackend(const AgentOptions& options, const CudaRunOptions& run, std::ostream& out,
                   std::ostream& err);

}  // namespace ddpscope::agent::cuda
