#pragma once
// Bootstrapping a multi-process job: rank 0 hands a small byte blob (the NCCL unique id) to every
// other rank before any communicator exists. Plain C++, no CUDA: built and tested everywhere.
//
// Two ways:
//   file  rank 0 writes the blob to a file (atomically), the others poll until it is there; the
//         file's folder must be shared by the ranks' machines (one node: any folder).
//   mpi   MPI_Bcast over MPI_COMM_WORLD; only in builds with MPI (mpiBootstrapBuilt()), for
//         processes started by mpirun (Open MPI, MPICH) or srun with a PMI/PMIx plugin.
// DDPSCOPE_BOOTSTRAP=file|mpi|auto chooses (auto, the default: mpi when built and launched so).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>

namespace ddpscope::agent::bootstrap {

class Bootstrap {
 public:
  virtual ~Bootstrap() = default;
  // Rank 0's bytes replace every other rank's; all ranks pass the same size. Throws
  // std::runtime_error when the blob does not arrive (timeout, cancelled, MPI error).
  virtual void broadcast(std::span<char> bytes) = 0;
  // "file <path>" or "mpi (<library>)", for messages.
  virtual std::string describe() const = 0;
};

enum class BootstrapKind { kFile, kMpi };

struct FileRendezvousOptions {
  std::string path;               // where rank 0 publishes the blob
  std::int32_t rank = 0;          // this process's rank
  double timeout_s = 300;         // how long the other ranks wait for rank 0
  std::string what = "the data";  // names the blob in messages ("the NCCL id")
  // Polled while waiting; true stops the wait with the timeout's message (e.g. SIGTERM seen).
  std::function<bool()> cancelled;
};

// Rank 0 writes the file (temporary file + rename, so a reader never sees half of it); the
// others read it every 20 ms until it holds exactly the broadcast's size, and throw
// "rank R: rank 0 did not publish <what> in <path> within T s; is the folder shared between the
// ranks' machines?" after timeout_s.
std::unique_ptr<Bootstrap> makeFileRendezvous(FileRendezvousOptions options);

// Whether this build has the MPI bootstrap (CMake found MPI).
bool mpiBootstrapBuilt();

struct MpiBootstrapOptions {
  // Who the launcher's environment says this process is; MPI_COMM_WORLD must agree.
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  std::string launcher;  // for messages: "mpirun", "srun"
};

// Initializes MPI (MPI_Init_thread, unless the process already did) and checks that
// MPI_COMM_WORLD's rank and size are the expected ones; all ranks learn whether any of them
// disagrees (an allreduce), so a mismatch is a clear error on every rank instead of a hang in the
// broadcast. MPI is finalized by the destructor, or before the mismatch error is thrown, when
// this object initialized it. Throws std::runtime_error on a mismatch, when MPI fails, or when
// the build has no MPI.
std::unique_ptr<Bootstrap> makeMpiBootstrap(const MpiBootstrapOptions& options);

// The choice, from DDPSCOPE_BOOTSTRAP (the `forced` value: "", "auto", "file" or "mpi"), the
// launcher ("mpirun", "srun", "torchrun", "ddpscope", "") and whether the process has an MPI world
// (mpi_world: launcher's MPI/PMI variables are set, see launchedWithMpiWorld()). auto: mpi when
// the build has it and the process was started by mpirun, or by srun with PMI; file otherwise.
// Throws std::invalid_argument for an unknown value, or "mpi" in a build without MPI.
BootstrapKind chooseBootstrap(const std::string& forced, const std::string& launcher,
                              bool mpi_world, bool mpi_built);

// Whether the environment shows an MPI world for this launcher: mpirun always (Open MPI's
// OMPI_COMM_WORLD_* or MPICH's PMI_RANK made it one); srun only with PMIX_RANK, PMI_RANK or
// PMI_FD (srun --mpi=pmix or pmi2).
bool launchedWithMpiWorld(const std::string& launcher);

}  // namespace ddpscope::agent::bootstrap
