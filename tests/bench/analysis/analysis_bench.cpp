// The full per-rank analysis (overlap, steps, buckets, dependency check) over generated runs of
// 100 k, 1 M and 4 M events. Target: <= 100 ms per 1 M events, linear in events.
// Baseline in the same run: one pass that only reads every event's start and duration.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <map>
#include <string>

#include "app/analysis/analysis.h"
#include "tests/bench/common/bench_main.h"
#include "tests/bench/common/synthetic_run.h"

using namespace ddpscope;

namespace {

const trace::RankTrace& rankOf(std::int64_t events) {
  static std::map<std::int64_t, trace::RankTrace> cache;
  auto it = cache.find(events);
  if (it == cache.end()) {
    bench::SyntheticSpec spec;
    spec.events_per_rank = events;
    it = cache.emplace(events, bench::syntheticRank(spec, 0)).first;
  }
  return it->second;
}

// One rank on one thread, or with its host side worked out beside its GPU unions (threads 0:
// one per core). Real time: the second thread's work counts.
void BM_FullRankAnalysis(benchmark::State& state) {
  const auto& rank = rankOf(state.range(0));
  analysis::AnalysisOptions o;
  o.threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    auto report = analysis::analyzeRank(rank, o);
    benchmark::DoNotOptimize(report);
  }
  state.counters["events"] = static_cast<double>(rank.eventCount());
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(rank.eventCount()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_HtaCompatAnalysis(benchmark::State& state) {
  const auto& rank = rankOf(state.range(0));
  analysis::AnalysisOptions o;
  o.hta_compat = true;
  for (auto _ : state) {
    auto report = analysis::analyzeRank(rank, o);
    benchmark::DoNotOptimize(report);
  }
  state.counters["events"] = static_cast<double>(rank.eventCount());
}

// Baseline: touching every event's start and duration once (the memory-bandwidth floor).
void BM_BaselineScan(benchmark::State& state) {
  const auto& rank = rankOf(state.range(0));
  for (auto _ : state) {
    trace::TimeNs sum = 0;
    for (const auto& t : rank.tracks) {
      for (std::size_t i = 0; i < t.size(); ++i)
        sum += t.start[i] ^ t.dur[i];
    }
    benchmark::DoNotOptimize(sum);
  }
  state.counters["events"] = static_cast<double>(rank.eventCount());
}

// The whole run's report (every rank, stragglers, spread) as the app and the CLI compute it.
// Args: {events in the run, ranks, threads}: threads 1 is the baseline (one rank after the
// other), 0 what the app and the CLI use (ranks at once, one per core).
void BM_FullRunAnalysis(benchmark::State& state) {
  static std::map<std::pair<std::int64_t, std::int64_t>, trace::Run> cache;
  const std::pair<std::int64_t, std::int64_t> key{state.range(0), state.range(1)};
  if (!cache.contains(key)) {
    cache.clear();  // one at a time: 10 M events hold about 0.5 GB
    bench::SyntheticSpec spec;
    spec.ranks = static_cast<std::int32_t>(key.second);
    spec.events_per_rank = key.first / key.second;
    cache.emplace(key, bench::syntheticRun(spec));
  }
  const auto& r = cache.at(key);
  analysis::AnalysisOptions options;
  options.threads = static_cast<unsigned>(state.range(2));
  for (auto _ : state) {
    auto report = analysis::analyzeRun(r, options);
    benchmark::DoNotOptimize(report);
  }
  state.counters["events"] = static_cast<double>(r.eventCount());
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(r.eventCount()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// 10 M events only with DDPSCOPE_BENCH_10M=1 in the environment.
const bool registered = [] {
  auto* b = benchmark::RegisterBenchmark("BM_FullRunAnalysis", BM_FullRunAnalysis)
                ->Args({1'000'000, 8, 1})
                ->Args({1'000'000, 8, 0})
                ->Unit(benchmark::kMillisecond);
  const char* v = std::getenv("DDPSCOPE_BENCH_10M");
  if (v != nullptr && std::string(v) == "1")
    b->Args({10'000'000, 8, 1})->Args({10'000'000, 8, 0})->Iterations(3);
  return true;
}();

}  // namespace

BENCHMARK(BM_BaselineScan)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Arg(4'000'000)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_FullRankAnalysis)
    ->ArgNames({"events", "threads"})
    ->Args({100'000, 1})
    ->Args({1'000'000, 1})
    ->Args({1'000'000, 0})
    ->Args({4'000'000, 1})
    ->Args({4'000'000, 0})
    ->MinTime(2)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HtaCompatAnalysis)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
DDPSCOPE_BENCHMARK_MAIN()
