#pragma once
// The ddpscope-agent command line (docs/CLI.md "ddpscope-agent") as a plain struct.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agent/model.h"
#include "agent/sim/cost_model.h"
#include "agent/trainer.h"

namespace ddpscope::agent {

struct AgentOptions {
  std::string backend = "sim";  // "sim" | "cuda"
  std::int32_t world_size = 8;
  double bucket_mb = 25.0;
  double first_bucket_mb = 1.0;  // defaults to min(1, bucket_mb)
  bool overlap = true;
  Fusion fusion = Fusion::View;
  ModelConfig model;
  std::int32_t steps = 20;
  float lr = 0.05f;
  bool rebuild_buckets = false;
  bool sim_math = false;
  sim::CostModel cost;
  std::string out_dir;
  // CUDA backend: "none" (this process is one rank; identity from mpirun/srun/torchrun or rank 0
  // of 1) or "local" (start world_size processes on this node, one per GPU).
  std::string launch = "none";
  double timeout_s = 300;  // the watchdog aborts NCCL when a step makes no progress this long
  bool trace = true;       // false: run untraced (to measure the tracer's overhead)
  // Simulated fault injection (sim only): "" none, "die" or "hang". Rank fault_rank stops at the
  // start of its backward in step fault_step; the others' watchdogs abort after timeout_s of
  // virtual time (agent/sim/sim_device.h SimFault).
  std::string fault;
  std::int32_t fault_rank = -1;
  std::int32_t fault_step = -1;

  TrainerOptions trainerOptions() const;
  // Every setting as (key, raw JSON value) for the trace's ddpscope.config block.
  std::vector<std::pair<std::string, std::string>> configEntries() const;
};

struct ParsedArguments {
  std::optional<AgentOptions> options;  // empty: exit with exit_code
  int exit_code = 0;                    // 0 after --help, 2 for bad arguments
};

// Parses argv; writes --help to `out` and errors to `err`.
ParsedArguments parseAgentArguments(int argc, const char* const* argv, std::ostream& out,
                                    std::ostream& err);

// The largest --timeout-s a simulated fault takes (virtual ns must stay far from overflow).
inline constexpr double kMaxFaultTimeoutS = 1e6;

// Largest model --sim-math accepts (parameters), since it does the arithmetic on the CPU.
inline constexpr std::int64_t kSimMathMaxParameters = 20'000'000;

}  // namespace ddpscope::agent
