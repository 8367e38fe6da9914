// Loading: parse JSON and build the model, against simdjson's bare parse of the same bytes (the
// practical limit), measured in the same run. Also writing (serialise + gzip).
#include <benchmark/benchmark.h>
#include <simdjson.h>

#include <map>

#include "tests/bench/common/synthetic_run.h"
#include "tracer/format/file_io.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;

namespace {

const trace::PaddedBuffer& jsonOf(std::int64_t events) {
  static std::map<std::int64_t, trace::PaddedBuffer> cache;
  auto it = cache.find(events);
  if (it == cache.end()) {
    bench::SyntheticSpec spec;
    spec.events_per_rank = events;
    it = cache
             .emplace(events,
                      trace::PaddedBuffer(trace::serializeTrace(bench::syntheticRank(spec, 0))))
             .first;
  }
  return it->second;
}

void setCounters(benchmark::State& state, const trace::PaddedBuffer& json) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(json.size()));
  state.counters["MB"] = static_cast<double>(json.size()) / 1e6;
}

// The practical limit: simdjson's DOM parse (runtime-dispatched to the best SIMD kernel).
void BM_SimdjsonBareParse(benchmark::State& state) {
  const auto& json = jsonOf(state.range(0));
  simdjson::dom::parser parser;
  for (auto _ : state) {
    simdjson::dom::element doc;
    auto err = parser.parse(json.data(), json.size(), false).get(doc);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(doc);
  }
  setCounters(state, json);
}

void BM_ParseTrace(benchmark::State& state) {
  const auto& json = jsonOf(state.range(0));
  for (auto _ : state) {
    auto t = trace::parseTrace(json, "bench.json");
    benchmark::DoNotOptimize(t);
  }
  setCounters(state, json);
}

void BM_SerializeTrace(benchmark::State& state) {
  bench::SyntheticSpec spec;
  spec.events_per_rank = state.range(0);
  const auto t = bench::syntheticRank(spec, 0);
  for (auto _ : state) {
    auto s = trace::serializeTrace(t);
    benchmark::DoNotOptimize(s);
  }
}

}  // namespace

BENCHMARK(BM_SimdjsonBareParse)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->MinTime(3)
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ParseTrace)->Arg(100'000)->Arg(1'000'000)->MinTime(3)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_SerializeTrace)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK_MAIN();
