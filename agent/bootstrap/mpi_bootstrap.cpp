// The MPI bootstrap; without MPI in the build, makeMpiBootstrap only explains that.
#include <climits>
#include <stdexcept>
#include <string>

#include "agent/bootstrap/bootstrap.h"

#ifdef DDPSCOPE_HAVE_MPI
#include <mpi.h>
#endif

namespace ddpscope::agent::bootstrap {

#ifdef DDPSCOPE_HAVE_MPI

namespace {

std::string mpiError(const char* call, int code) {
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  return std::string(call) + " failed: " + std::string(text, static_cast<std::size_t>(length));
}

std::string libraryVersion() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS) return "MPI";
  std::string v(text, static_cast<std::size_t>(length));
  const auto end = v.find_first_of(",\n");  // "Open MPI v4.1.4, package: ..." -> "Open MPI v4.1.4"
  return end == std::string::npos ? v : v.substr(0, end);
}

class MpiBootstrap final : public Bootstrap {
 public:
  explicit MpiBootstrap(const MpiBootstrapOptions& o) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // One thread at a time calls MPI (the agent's main thread); the watchdog never does.
      const int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
      if (rc != MPI_SUCCESS) throw std::runtime_error(mpiError("MPI_Init_thread", rc));
      owns_mpi_ = true;
    }
    // Errors come back as codes (messages) rather than aborting, when the MPI world is ours.
    if (owns_mpi_) MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rank = -1, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const bool mine_wrong = rank != o.rank || size != o.world_size;
    // Everyone learns whether anyone disagrees, so no rank is left waiting in a broadcast.
    int local = mine_wrong ? 1 : 0, any = 0;
    const int rc = MPI_Allreduce(&local, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
      finalize();
      throw std::runtime_error(mpiError("MPI_Allreduce", rc));
    }
    if (any) {
      const std::string launcher = o.launcher.empty() ? "the launcher" : o.launcher;
      std::string message;
      if (mine_wrong) {
        message = "MPI_COMM_WORLD has " + std::to_string(size) +
                  " process(es) and this one is rank " + std::to_string(rank) + ", but " +
                  launcher + "'s environment says rank " + std::to_string(o.rank) + " of " +
                  std::to_string(o.world_size) +
                  ": is ddpscope-agent built against the MPI that started it (" + libraryVersion() +
                  ")? Set DDPSCOPE_BOOTSTRAP=file to use the file rendezvous instead";
      } else {
        message = "another rank's MPI_COMM_WORLD rank or size does not match " + launcher +
                  "'s environment (see its message); the MPI bootstrap stops";
      }
      finalize();
      throw std::runtime_error(message);
    }
    library_ = libraryVersion();
  }

  ~MpiBootstrap() override { finalize(); }

  void broadcast(std::span<char> bytes) override {
    if (bytes.size() > static_cast<std::size_t>(INT_MAX)) {
      throw std::runtime_error("the MPI bootstrap broadcasts at most " + std::to_string(INT_MAX) +
                               " bytes, not " + std::to_string(bytes.size()));
    }
    const int rc =
        MPI_Bcast(bytes.data(), static_cast<int>(bytes.size()), MPI_BYTE, 0, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) throw std::runtime_error(mpiError("MPI_Bcast", rc));
  }

  std::string describe() const override { return "mpi (" + library_ + ")"; }

 private:
  void finalize() {
    if (!owns_mpi_) return;
    owns_mpi_ = false;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }

  bool owns_mpi_ = false;
  std::string library_;
};

}  // namespace

bool mpiBootstrapBuilt() {
  return true;
}

std::unique_ptr<Bootstrap> makeMpiBootstrap(const MpiBootstrapOptions& options) {
  return std::make_unique<MpiBootstrap>(options);
}

#else

bool mpiBootstrapBuilt() {
  return false;
}

std::unique_ptr<Bootstrap> makeMpiBootstrap(const MpiBootstrapOptions&) {
  throw std::runtime_error(
      "this ddpscope-agent was built without MPI (install libopenmpi-dev and rebuild), so it "
      "cannot bootstrap through MPI; set DDPSCOPE_BOOTSTRAP=file to use the file rendezvous");
}

#endif

}  // namespace ddpscope::agent::bootstrap
