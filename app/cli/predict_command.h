#pragma once
// `ddpscope-cli predict`: the what-if predictor (app/analysis/whatif.h) on the command line
// (docs/CLI.md, "ddpscope-cli predict").

#include <CLI/CLI.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ddpscope::cli {

struct PredictArgs {
  bool json = false;
  std::optional<std::string> bucket_mb;  // comma list; none: the app's sweep sizes
  std::string first_bucket_mb;
  std::optional<std::int32_t> world_size;  // none: as recorded
  bool overlap = false;                    // --overlap
  bool no_overlap = false;                 // --no-overlap; neither: as recorded
  double network_scale = 1;
  double compute_scale = 1;
  std::string rules_file;
  std::vector<std::string> paths;
};

// Registers the `predict` subcommand on `app`, its options written into `args`.
CLI::App* addPredictCommand(CLI::App& app, PredictArgs& args);

// Runs it: 0 on success, 2 for bad arguments (a message on stderr). Trace errors are thrown as
// the other commands' are (main reports them).
int runPredict(const PredictArgs& args);

}  // namespace ddpscope::cli
