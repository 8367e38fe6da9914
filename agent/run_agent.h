#pragma once
// Runs the agent as the command line asks: trains on the chosen backend and writes one trace per
// rank. Progress goes to `out` as JSON lines, errors to `err`; returns the process exit code.

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "agent/agent_options.h"
#include "agent/sim/sim_device.h"
#include "tracer/format/importer.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::agent {

inline constexpr int kExitOk = 0;
inline constexpr int kExitBadArguments = 2;
inline constexpr int kExitBackendUnavailable = 3;
inline constexpr int kExitFailed = 1;

int runAgent(const AgentOptions& options, std::ostream& out, std::ostream& err);
// Creates --out's folder; throws std::runtime_error saying so when it names a file, or cannot be
// created, or already holds rank files this run of `world_size` ranks would not replace (another
// run's rank-5.json.gz beside this one's rank 0-3 would make a folder of two runs). Every
// backend, before it writes a trace. Returns how many rank files of an earlier run it will
// replace (the caller says so). Inline: the CUDA backend's library comes after this one's when
// linked.
inline std::size_t makeOutFolder(const std::string& out_dir, std::int32_t world_size) {
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec || !std::filesystem::is_directory(out_dir)) {
    const bool file = std::filesystem::exists(out_dir) && !std::filesystem::is_directory(out_dir);
    throw std::runtime_error(
        "--out " + out_dir + ": " +
        (file ? std::string("is a file, not a folder; give a folder for the rank files")
              : "cannot create the folder: " + ec.message()));
  }
  std::vector<std::pair<int, std::string>> stale;  // (rank, file name), listed by rank
  std::size_t replaced = 0;
  for (std::filesystem::directory_iterator it(out_dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    // The rank files the agent writes (rank-<r>.json.gz), and plain ones beside them.
    const std::string name = it->path().filename().string();
    if (!name.starts_with("rank-") || !(name.ends_with(".json") || name.ends_with(".json.gz")))
      continue;
    const auto rank = trace::rankFromFileName(name);
    if (!rank) continue;
    if (*rank >= world_size)
      stale.emplace_back(*rank, name);
    else
      ++replaced;
  }
  if (stale.empty()) return replaced;
  std::sort(stale.begin(), stale.end());
  std::string list;
  for (std::size_t i = 0; i < stale.size() && i < 3; ++i)
    list += (i ? ", " : "") + stale[i].second;
  if (stale.size() > 3) list += " and " + std::to_string(stale.size() - 3) + " more";
  throw std::runtime_error("--out " + out_dir + ": already holds " + list +
                           " of another run (this one has " + std::to_string(world_size) +
                           " ranks, so they would be left beside its files as one mixed run); "
                           "give an empty or new folder, or remove them");
}
int agentMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// The simulated run without writing files: one finished trace per rank (ddpscope block filled,
// canonicalized). Progress lines go to `progress` when it is not null.
// With --fault the run stops at the simulated fault: `fault` says how, `ranks` holds the traces
// the surviving (and a hung) rank write, each flagged incomplete, and a dead rank has none;
// losses and step_ms cover the completed steps only.
struct SimRunResult {
  std::vector<trace::RankTrace> ranks;
  std::vector<float> losses;    // per step, rank 0 (empty without --sim-math)
  std::vector<double> step_ms;  // per step, slowest rank
  std::int32_t buckets = 0;
  std::optional<sim::SimAbort> fault;
};
// `adjust` may change the trainer options (tests use it for the test-only switches).
SimRunResult runSimulation(const AgentOptions& options, std::ostream* progress = nullptr,
                           const std::function<void(TrainerOptions&)>& adjust = {});

// The error a simulated fault ends with (no "ddpscope-agent: " prefix), naming the rank, the
// kind, the step and the bucket; `dir` is where the traces went.
std::string faultMessage(const AgentOptions& options, const SimRunResult& result,
                         const std::string& dir);

// The ddpscope block of a rank's trace: source, every setting, the buckets of the plan.
trace::DdpscopeBlock makeDdpscopeBlock(const AgentOptions& options, std::string source,
                                       const BucketPlan& plan,
                                       const std::vector<ParamInfo>& params);

}  // namespace ddpscope::agent
