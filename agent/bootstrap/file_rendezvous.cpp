#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string_view>
#include <thread>
#include <utility>

#include "agent/bootstrap/bootstrap.h"
#include "agent/short_number.h"
#include "tracer/format/file_io.h"

namespace ddpscope::agent::bootstrap {

namespace {

class FileRendezvous final : public Bootstrap {
 public:
  explicit FileRendezvous(FileRendezvousOptions o) : o_(std::move(o)) {}

  void broadcast(std::span<char> bytes) override {
    if (o_.rank == 0) {
      trace::writeFileAtomically(o_.path, std::string_view(bytes.data(), bytes.size()));
      return;
    }
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::duration_cast<std::chrono::nanoseconds>(
                                               std::chrono::duration<double>(o_.timeout_s));
    for (;;) {
      std::ifstream in(o_.path, std::ios::binary);
      std::string got((std::istreambuf_iterator<char>(in)), {});
      if (got.size() == bytes.size()) {
        std::memcpy(bytes.data(), got.data(), bytes.size());
        return;
      }
      if (std::chrono::steady_clock::now() > deadline || (o_.cancelled && o_.cancelled())) {
        throw std::runtime_error("rank " + std::to_string(o_.rank) + ": rank 0 did not publish " +
                                 o_.what + " in " + o_.path + " within " +
                                 shortNumber(o_.timeout_s) +
                                 " s; is the folder shared between the ranks' machines?");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  std::string describe() const override { return "file " + o_.path; }

 private:
  FileRendezvousOptions o_;
};

}  // namespace

std::unique_ptr<Bootstrap> makeFileRendezvous(FileRendezvousOptions options) {
  return std::make_unique<FileRendezvous>(std::move(options));
}

bool launchedWithMpiWorld(const std::string& launcher) {
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  if (launcher == "mpirun") return true;
  if (launcher == "srun") return set("PMIX_RANK") || set("PMI_RANK") || set("PMI_FD");
  return false;
}

BootstrapKind chooseBootstrap(const std::string& forced, const std::string& launcher,
                              bool mpi_world, bool mpi_built) {
  if (forced == "file") return BootstrapKind::kFile;
  if (forced == "mpi") {
    if (!mpi_built) {
      throw std::invalid_argument(
          "DDPSCOPE_BOOTSTRAP=mpi, but this ddpscope-agent was built without MPI (install "
          "libopenmpi-dev and rebuild), or use DDPSCOPE_BOOTSTRAP=file");
    }
    return BootstrapKind::kMpi;
  }
  if (!forced.empty() && forced != "auto") {
    throw std::invalid_argument("DDPSCOPE_BOOTSTRAP=" + forced + " is not one of auto, file, mpi");
  }
  const bool mpi_launcher = launcher == "mpirun" || launcher == "srun";
  return mpi_built && mpi_launcher && mpi_world ? BootstrapKind::kMpi : BootstrapKind::kFile;
}

}  // namespace ddpscope::agent::bootstrap
