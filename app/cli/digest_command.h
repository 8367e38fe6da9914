#pragma once
// `ddpscope-cli digest`: the run digest (app/analysis/digest.h) on the command line
// (docs/CLI.md, "ddpscope-cli digest"; the file: docs/DIGEST.md).

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

namespace ddpscope::cli {

struct DigestArgs {
  std::string out;  // empty: standard output
  unsigned threads = 0;
  std::string rules_file;
  bool skip_unreadable = false;  // leave out the files that cannot be read (named in a warning)
  std::vector<std::string> paths;
};

// Registers the `digest` subcommand on `app`, its options written into `args`.
CLI::App* addDigestCommand(CLI::App& app, DigestArgs& args);

// Runs it: 0 on success. Trace errors are thrown as the other commands' are (main reports them).
// Started by mpirun/srun, the processes split the files among them and process 0 writes the
// digest (runDigestMpi).
int runDigest(const DigestArgs& args);

bool launchedAsMpiJob();  // mpirun/srun started this process with others
// The digest of a process among others. Two builds: ddpscope-cli-mpi, the only one linked with
// Open MPI, does it (digest_mpi.cpp); ddpscope-cli, which every other command starts without
// loading MPI's libraries, runs ddpscope-cli-mpi in its place (digest_mpi_exec.cpp).
int runDigestMpi(const DigestArgs& args);

}  // namespace ddpscope::cli
