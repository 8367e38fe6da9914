#pragma once
// `ddpscope-cli compare`: two runs side by side, as the app's Compare tab shows them
// (analysis::compareRuns; docs/CLI.md, "ddpscope-cli compare").

#include <CLI/CLI.hpp>

#include <string>
#include <vector>

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

// `ddpscope-cli sweep`: measured runs at several bucket sizes, one row each, and the fastest
// (analysis::recommendBucketSize, as the app's Sweep tab and the design report say it).
struct SweepArgs {
  bool json = false;
  std::string rules_file;
  std::vector<std::string> runs;  // PATH, or MB=PATH for a run that does not record its size
};
CLI::App* addSweepCommand(CLI::App& app, SweepArgs& args);
// 0 on success, 2 for bad arguments (a run without a known size, two runs at one size).
int runSweep(const SweepArgs& args);

}  // namespace ddpscope::cli
