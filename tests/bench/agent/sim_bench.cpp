// Benchmarks of the simulated device: simulation alone, and simulation plus writing the traces.
#include <benchmark/benchmark.h>

#include <filesystem>

#include "agent/run_agent.h"
#include "tracer/format/trace_writer.h"

namespace {

ddpscope::agent::AgentOptions presetRun(std::int32_t steps) {
  ddpscope::agent::AgentOptions o;  // defaults: transformer 12 x 768, 4096 tokens, 25 MiB buckets
  o.world_size = 8;
  o.steps = steps;
  o.out_dir = "unused";
  return o;
}

// The figure: 8 ranks x 100 steps of the default transformer preset, traces in memory.
void BM_SimulateTransformer8Ranks(benchmark::State& state) {
  const auto o = presetRun(static_cast<std::int32_t>(state.range(0)));
  std::size_t events = 0;
  for (auto _ : state) {
    auto r = ddpscope::agent::runSimulation(o);
    events = 0;
    for (const auto& t : r.ranks)
      events += t.eventCount();
    benchmark::DoNotOptimize(r);
  }
  state.counters["events"] = static_cast<double>(events);
}
BENCHMARK(BM_SimulateTransformer8Ranks)->Arg(100)->Unit(benchmark::kMillisecond)->Iterations(3);

// The same run including what ddpscope-agent also does: 8 gzip-compressed trace files.
void BM_SimulateAndWriteTransformer8Ranks(benchmark::State& state) {
  const auto o = presetRun(static_cast<std::int32_t>(state.range(0)));
  const auto dir = std::filesystem::temp_directory_path() / "ddpscope_agent_bench";
  std::filesystem::create_directories(dir);
  for (auto _ : state) {
    auto r = ddpscope::agent::runSimulation(o);
    for (const auto& t : r.ranks)
      ddpscope::trace::writeTraceFile(
          t, (dir / ("rank-" + std::to_string(t.rank) + ".json.gz")).string());
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_SimulateAndWriteTransformer8Ranks)
    ->Arg(100)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

// --sim-math on a small mlp: the CPU arithmetic's cost per step.
void BM_SimMathMlp(benchmark::State& state) {
  auto o = presetRun(10);
  o.model = {"mlp", 4, 256, 64, 0, 1};
  o.sim_math = true;
  for (auto _ : state)
    benchmark::DoNotOptimize(ddpscope::agent::runSimulation(o));
}
BENCHMARK(BM_SimMathMlp)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
