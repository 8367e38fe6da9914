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
  std::vector<std::string> paths;
};

// Registers the `digest` subcommand on `app`, its options written into `args`.
CLI::App* addDigestCommand(CLI::App& app, DigestArgs& args);

// Runs it: 0 on success. Trace errors are thrown as the other commands' are (main reports them).
// Started by mpirun/srun (and built with MPI), the processes split the files among them and
// process 0 writes the digest.
int runDigest(const DigestArgs& args);

#ifdef DDPSCOPE_HAVE_MPI
bool launchedAsMpiJob();                   // mpirun/srun started this process with others
int runDigestMpi(const DigestArgs& args);  // digest_mpi.cpp
#endif

}  // namespace ddpscope::cli
