#include "agent/agent_options.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <ostream>

#include "tracer/format/json_text.h"

namespace ddpscope::agent {

namespace {

std::string jsonNumber(double v) {
  return trace::shortestNumber(v);
}
std::string jsonString(const std::string& s) {
  return "\"" + s + "\"";
}  // our values need no escapes

// Number validators with short messages (CLI11's own print the whole double range).
CLI::Validator atLeast(double lo, bool inclusive, double hi = std::numeric_limits<double>::max()) {
  return CLI::Validator(
      [=](std::string& in) -> std::string {
        double v = 0;
        try {
          std::size_t used = 0;
          v = std::stod(in, &used);
          if (used != in.size()) return "'" + in + "' is not a number";
        } catch (const std::exception&) {
          return "'" + in + "' is not a number";
        }
        if (!std::isfinite(v)) return "must be a finite number, got " + in;
        if (!(inclusive ? v >= lo : v > lo))
          return "must be " + std::string(inclusive ? ">= " : "> ") + jsonNumber(lo) + ", got " +
                 in;
        if (v > hi) return "must be at most " + jsonNumber(hi) + ", got " + in;
        return "";
      },
      inclusive ? "NUMBER >= 0" : "NUMBER > 0");
}
const CLI::Validator kNonNegative = atLeast(0, true);
// Bucket caps in MiB: up to 1 TiB, far beyond any model, well inside the bytes' 64 bits.
const CLI::Validator kBucketMb = atLeast(0, true, 1024.0 * 1024.0);
const CLI::Validator kPositive = atLeast(0, false);

struct ModelDefaults {
  std::int32_t layers, hidden, batch;
};
ModelDefaults defaultsFor(const std::string& kind) {
  // transformer: GPT-2 small shapes, 4096 tokens per rank; mlp: 8 x 1024, 256 samples.
  return kind == "mlp" ? ModelDefaults{8, 1024, 256} : ModelDefaults{12, 768, 4096};
}

void addSimOptions(CLI::App& app, sim::CostModel& c) {
  app.add_option("--sim-gemm-tflops", c.gemm_tflops, "sim: sustained GEMM rate")->check(kPositive);
  app.add_option("--sim-memory-gbps", c.memory_gbps, "sim: memory bandwidth")->check(kPositive);
  app.add_option("--sim-kernel-min-us", c.kernel_min_us, "sim: shortest kernel")
      ->check(kNonNegative);
  app.add_option("--sim-launch-us", c.launch_us, "sim: host time per launch")->check(kNonNegative);
  app.add_option("--sim-alpha-us", c.allreduce_alpha_us,
                 "sim: ring allreduce latency per step (alpha)")
      ->check(kNonNegative);
  app.add_option("--sim-busbw-gbps", c.allreduce_busbw_gbps,
                 "sim: ring allreduce bus bandwidth (B)")
      ->check(kPositive);
  app.add_option("--sim-comm-slowdown", c.comm_slowdown,
                 "sim: fraction compute kernels slow down while NCCL kernels run")
      ->check(kNonNegative);
  app.add_option("--jitter", c.jitter,
                 "sim: compute kernels take up to this fraction longer (random)")
      ->check(kNonNegative);
  app.add_option("--straggler-rank", c.straggler_rank, "sim: this rank computes slower");
  app.add_option("--straggler-slowdown", c.straggler_slowdown,
                 "sim: the straggler's slowdown factor")
      ->check(CLI::Range(1.0, 1000.0));
}

// The fault-injection options together; returns an error message or "".
std::string validateFault(const AgentOptions& o, bool rank_given, bool step_given) {
  if (o.fault.empty()) {
    if (rank_given || step_given) return "--fault-rank and --fault-step need --fault die|hang";
    return "";
  }
  if (o.backend != "sim")
    return "--fault injects a simulated fault and needs --backend sim (on CUDA, kill or stop a "
           "rank's process instead)";
  if (o.world_size < 2)
    return "--fault needs --world-size of at least 2 (the other ranks are the ones that notice)";
  if (!rank_given || !step_given) return "--fault needs --fault-rank N and --fault-step S";
  if (o.fault_rank < 0 || o.fault_rank >= o.world_size)
    return "--fault-rank must be a rank from 0 to --world-size - 1 = " +
           std::to_string(o.world_size - 1) + ", got " + std::to_string(o.fault_rank);
  if (o.fault_step < 0 || o.fault_step >= o.steps)
    return "--fault-step must be a step from 0 to --steps - 1 = " + std::to_string(o.steps - 1) +
           ", got " + std::to_string(o.fault_step);
  if (o.timeout_s > kMaxFaultTimeoutS)
    return "--timeout-s with --fault must be at most " + jsonNumber(kMaxFaultTimeoutS) + " s";
  return "";
}

// Checks that need several options; returns an error message or "".
std::string validate(AgentOptions& o, bool first_given) {
  if (!first_given) o.first_bucket_mb = std::min(1.0, o.bucket_mb);
  if (o.cost.straggler_rank < -1 || o.cost.straggler_rank >= o.world_size)
    return "--straggler-rank must be a rank below --world-size (or -1 for none)";
  if (o.cost.straggler_slowdown != 1.0 && o.cost.straggler_rank < 0)
    return "--straggler-slowdown slows one rank down and needs --straggler-rank N";
  if (o.cost.straggler_rank >= 0 && o.backend != "sim")
    return "--straggler-rank slows a simulated rank down and needs --backend sim";
  if (o.sim_math && o.backend != "sim") return "--sim-math needs --backend sim";
  if (o.launch == "local" && o.backend != "cuda") return "--launch local needs --backend cuda";
  if (o.sim_math) {
    auto model = makeModel(o.model);
    std::int64_t n = 0;
    for (const auto& p : model->parameters())
      n += p.elements;
    if (n > kSimMathMaxParameters)
      return "--sim-math does the arithmetic on the CPU and takes models of at most " +
             std::to_string(kSimMathMaxParameters) + " parameters; this one has " +
             std::to_string(n) + " (use smaller --layers/--hidden)";
  }
  return "";
}

}  // namespace

TrainerOptions AgentOptions::trainerOptions() const {
  TrainerOptions t;
  t.bucket_cap_bytes = mebibytesToBytes(bucket_mb);
  t.first_bucket_cap_bytes = mebibytesToBytes(first_bucket_mb);
  t.overlap = overlap;
  t.fusion = fusion;
  t.lr = lr;
  t.rebuild_buckets = rebuild_buckets;
  return t;
}

std::vector<std::pair<std::string, std::string>> AgentOptions::configEntries() const {
  std::vector<std::pair<std::string, std::string>> c = {
      {"backend", jsonString(backend)},
      {"world_size", jsonNumber(world_size)},
      {"bucket_mb", jsonNumber(bucket_mb)},
      {"first_bucket_mb", jsonNumber(first_bucket_mb)},
      {"overlap", overlap ? "true" : "false"},
      {"fusion", jsonString(fusion == Fusion::Copy ? "copy" : "view")},
      {"model", jsonString(model.kind)},
      {"layers", jsonNumber(model.layers)},
      {"hidden", jsonNumber(model.hidden)},
      {"batch", jsonNumber(model.batch)},
      {"vocab", jsonNumber(model.vocab)},
      {"steps", jsonNumber(steps)},
      {"seed", jsonNumber(static_cast<double>(model.seed))},
      {"lr", trace::shortestNumber(lr)},
      {"rebuild_buckets", rebuild_buckets ? "true" : "false"},
      {"sim_math", sim_math ? "true" : "false"}};
  if (backend == "cuda") {
    c.emplace_back("launch", jsonString(launch));
    c.emplace_back("timeout_s", jsonNumber(timeout_s));
    c.emplace_back("traced", trace ? "true" : "false");
  }
  if (backend == "sim") {
    for (auto& e : cost.configEntries())
      c.push_back(std::move(e));
  }
  if (!fault.empty()) {
    // A fault-injection run says so in every trace it writes.
    c.emplace_back("fault", jsonString(fault));
    c.emplace_back("fault_rank", jsonNumber(fault_rank));
    c.emplace_back("fault_step", jsonNumber(fault_step));
    c.emplace_back("fault_simulated", "true");
    c.emplace_back("timeout_s", jsonNumber(timeout_s));
  }
  return c;
}

ParsedArguments parseAgentArguments(int argc, const char* const* argv, std::ostream& out,
                                    std::ostream& err) {
  AgentOptions o;
  CLI::App app{
      "ddpscope-agent: a data-parallel training loop with fused-gradient buckets, on "
      "CUDA+NCCL or on a simulated device; writes DIR/rank-<r>.json.gz"};
  std::string fusion = "view";
  std::optional<std::int32_t> layers, hidden, batch;
  std::int64_t seed = 1;
  bool no_overlap = false;
  // Each option's default in --help ("--bucket-mb FLOAT:NUMBER >= 0=25"), read from the options'
  // initial values so that it never disagrees with what a run without the flag does.
  app.option_defaults()->always_capture_default();
  app.add_option("--backend", o.backend, "sim | cuda")->check(CLI::IsMember({"sim", "cuda"}));
  app.add_option("--world-size", o.world_size, "number of ranks")->check(CLI::Range(1, 4096));
  app.add_option("--bucket-mb", o.bucket_mb, "bucket cap in MiB; 0: one allreduce per tensor")
      ->check(kBucketMb);
  auto* first = app.add_option("--first-bucket-mb", o.first_bucket_mb,
                               "cap of the first bucket in MiB (default: min(1, bucket-mb))")
                    ->check(kBucketMb)
                    ->default_str("");  // the description says it
  app.add_flag("--no-overlap", no_overlap, "launch all allreduces after backward");
  app.add_option("--fusion", fusion, "copy (pack/unpack kernels) | view (gradients in the bucket)")
      ->check(CLI::IsMember({"copy", "view"}));
  app.add_option("--model", o.model.kind, "mlp | transformer")
      ->check(CLI::IsMember({"mlp", "transformer"}));
  // Defaults that depend on --model, said for each model.
  const auto per_model = [](std::int32_t ModelDefaults::*field) {
    return " (default: " + std::to_string(defaultsFor("mlp").*field) + " mlp, " +
           std::to_string(defaultsFor("transformer").*field) + " transformer)";
  };
  app.add_option("--layers", layers,
                 "layers (mlp) or blocks (transformer)" + per_model(&ModelDefaults::layers))
      ->check(CLI::Range(1, 4096));
  app.add_option("--hidden", hidden, "width H" + per_model(&ModelDefaults::hidden))
      ->check(CLI::Range(1, 65536));
  app.add_option("--batch", batch,
                 "rows per rank per step (samples, or tokens)" + per_model(&ModelDefaults::batch))
      ->check(CLI::Range(1, 1 << 24));
  app.add_option("--vocab", o.model.vocab, "transformer vocabulary")->check(CLI::Range(1, 1 << 24));
  app.add_option("--steps", o.steps, "training steps")->check(CLI::Range(1, 1000000));
  app.add_option("--seed", seed, "seed of data, initialisation and jitter")->check(kNonNegative);
  app.add_option("--lr", o.lr, "SGD learning rate")->check(kPositive);
  app.add_flag("--rebuild-buckets", o.rebuild_buckets,
               "rebuild buckets once, after step 0, in gradient-ready order");
  app.add_flag("--sim-math", o.sim_math,
               "sim: do the real fp32 arithmetic on the CPU (small models)");
  addSimOptions(app, o.cost);
  app.add_option("--out", o.out_dir, "output folder")->required();
  app.add_option(
         "--launch", o.launch,
         "cuda: none (one rank per process, from mpirun/srun/torchrun) | local (one process "
         "per GPU on this node)")
      ->check(CLI::IsMember({"none", "local"}));
  app.add_option("--timeout-s", o.timeout_s,
                 "abort after this long without progress (cuda: the NCCL communicator, wall "
                 "time; sim with --fault: the waiting collective, virtual time)")
      ->check(kPositive);
  app.add_option("--fault", o.fault,
                 "sim: inject a simulated fault: rank --fault-rank dies (writes no trace) or "
                 "hangs at the start of its backward in step --fault-step; the others abort "
                 "after --timeout-s and write incomplete traces; exit 1")
      ->check(CLI::IsMember({"die", "hang"}));
  // No default to show: -1 only marks "not given".
  auto* fault_rank =
      app.add_option("--fault-rank", o.fault_rank, "sim: the rank --fault stops (0 .. N-1)")
          ->default_str("");
  auto* fault_step =
      app.add_option("--fault-step", o.fault_step, "sim: the step --fault stops it in (0 .. S-1)")
          ->default_str("");
  bool no_trace = false;
  app.add_flag("--no-trace", no_trace, "cuda: run without the CUPTI tracer (overhead baseline)");
  try {
    app.parse(argc, argv);
    o.overlap = !no_overlap;
    o.trace = !no_trace;
    o.fusion = fusion == "copy" ? Fusion::Copy : Fusion::View;
    const auto d = defaultsFor(o.model.kind);
    o.model.layers = layers.value_or(d.layers);
    o.model.hidden = hidden.value_or(d.hidden);
    o.model.batch = batch.value_or(d.batch);
    o.model.seed = static_cast<std::uint64_t>(seed);
    o.cost.jitter = std::min(o.cost.jitter, 10.0);
    auto msg = validate(o, first->count() > 0);
    if (msg.empty()) msg = validateFault(o, fault_rank->count() > 0, fault_step->count() > 0);
    if (!msg.empty()) {
      err << "ddpscope-agent: " << msg << "\n";
      return {std::nullopt, 2};
    }
  } catch (const CLI::CallForHelp&) {
    out << app.help();
    return {std::nullopt, 0};
  } catch (const CLI::ParseError& e) {
    err << "ddpscope-agent: " << e.what() << "\nRun with --help for the options.\n";
    return {std::nullopt, 2};
  } catch (const std::invalid_argument& e) {
    err << "ddpscope-agent: " << e.what() << "\n";
    return {std::nullopt, 2};
  }
  return {o, 0};
}

}  // namespace ddpscope::agent
