// `ddpscope-cli digest` under mpirun/srun, in the build of ddpscope-cli that does not load Open
// MPI's libraries (they take a few ms to load and relocate, at every start of every command):
// the process becomes ddpscope-cli-mpi, from the same folder, with the same arguments, which
// joins the job (MPI_Init) as this process. Without it (built without MPI, or not copied beside
// this program), every process of the job would write the whole digest: an error says so.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "app/cli/digest_command.h"

namespace ddpscope::cli {

int runDigestMpi(const DigestArgs&) {
#ifdef DDPSCOPE_CLI_MPI_BESIDE
  // Set below before the exec: found again, ddpscope-cli-mpi is this program (a copy or a link
  // of it), which would run itself for ever.
  constexpr const char* kMarker = "DDPSCOPE_CLI_MPI_EXEC";
  if (std::getenv(kMarker) != nullptr)
    throw std::runtime_error(
        std::string(kMarker) +
        " is set: ddpscope-cli ran ddpscope-cli-mpi, and that was ddpscope-cli again (a copy or a "
        "link of it, not its MPI build): build both (cmake builds them together) and copy both; "
        "or unset " +
        kMarker + " if you set it");
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto mpi = self.parent_path() / "ddpscope-cli-mpi";
  // This process's own arguments, as it was started (the parsed ones would have to be spelled
  // again option by option).
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  const std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> args;
  for (std::size_t at = 0; at < cmdline.size();) {
    const std::size_t end = cmdline.find('\0', at);
    args.push_back(cmdline.substr(at, end == std::string::npos ? std::string::npos : end - at));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  if (!ec && !args.empty() && ::access(mpi.c_str(), F_OK) == 0) {
    args.front() = mpi.string();
    ::setenv(kMarker, "1", 1);
    std::vector<char*> argv;
    for (auto& a : args)
      argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(mpi.c_str(), argv.data());
    throw std::runtime_error("cannot run " + mpi.string() + " for the digest under mpirun/srun (" +
                             std::strerror(errno) +
                             "): it must be executable, on a file system that allows running "
                             "programs");
  }
  throw std::runtime_error(
      "started by mpirun/srun, but ddpscope-cli-mpi (the build of this program that joins an MPI "
      "job) is not beside it in " +
      (ec ? std::string("its folder") : self.parent_path().string()) +
      ": copy it there, or run `ddpscope-cli digest` without mpirun (it reads the files on every "
      "core of this machine)");
#else
  throw std::runtime_error(
      "started by mpirun/srun, but this ddpscope-cli was built without MPI (Open MPI was not "
      "found): run `ddpscope-cli digest` without mpirun (it reads the files on every core of this "
      "machine), or build with Open MPI (Debian: libopenmpi-dev)");
#endif
}

}  // namespace ddpscope::cli
