#pragma once
// `ddpscope-cli compare`: two runs side by side, as the app's Compare tab shows them
// (analysis::compareRuns; docs/CLI.md, "ddpscope-cli compare").

#include <CLI/CLI.hpp>

#include <string>

namespace ddpscope::cli {

struct CompareArgs {
  bool json = false;
  std::string rules_file;
  std::string a, b;  // each a trace file or a run folder
};

// Registers the `compare` subcommand on `app`, its options written into `args`.
CLI::App* addCompareCommand(CLI::App& app, CompareArgs& args);

// Runs it: 0 on success. Trace errors are thrown as the other commands' are (main reports them).
int runCompare(const CompareArgs& args);

}  // namespace ddpscope::cli
