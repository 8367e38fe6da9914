// The what-if predictor (app/analysis/whatif.h) on a generated run of 1 M events over 8 ranks:
// a sweep of ten bucket sizes (the model built from the run, the replay of the recorded
// configuration and the ten predictions), as the app's Sweep tab runs it off the GUI thread.
// Baseline in the same run: the full analysis of the same run (analyzeRun), which the app has
// always done before it predicts. Target: the sweep takes well under a second, and at
// most as long as the analysis (ratio <= 1).
#include <benchmark/benchmark.h>

#include "app/analysis/sweep.h"
#include "app/analysis/whatif.h"
#include "tests/bench/common/bench_main.h"
#include "tests/bench/common/synthetic_run.h"

using namespace ddpscope;

namespace {

struct Prepared {
  trace::Run run;
  analysis::RunReport report;
  std::vector<analysis::RankActivity> activities;
};

const Prepared& prepared() {
  static const Prepared p = [] {
    Prepared x;
    bench::SyntheticSpec spec;
    spec.ranks = 8;
    spec.events_per_rank = 1'000'000 / spec.ranks;
    x.run = bench::syntheticRun(spec);
    x.report = analysis::analyzeRun(x.run, {}, &x.activities);
    return x;
  }();
  return p;
}

std::vector<analysis::WhatIfConfig> tenSizes() {
  std::vector<analysis::WhatIfConfig> out;
  for (double mb : analysis::defaultSweepSizes()) {
    analysis::WhatIfConfig c;
    c.bucket_mb = mb;
    out.push_back(c);
  }
  return out;
}

void BM_WhatIfSweepTenSizes(benchmark::State& state) {
  const auto& p = prepared();
  const auto configs = tenSizes();
  std::size_t predictions = 0;
  for (auto _ : state) {
    auto res = analysis::predictWhatIf(p.run, p.report, p.activities, configs);
    predictions = res.predictions.size();
    benchmark::DoNotOptimize(res);
  }
  if (predictions != configs.size()) state.SkipWithError("the sweep predicted fewer sizes");
  state.counters["events"] = static_cast<double>(p.run.eventCount());
}

// One prediction on a model already built (what moving a slider costs).
void BM_WhatIfOnePrediction(benchmark::State& state) {
  const auto& p = prepared();
  const auto model = analysis::buildWhatIfModel(p.run, p.report, p.activities);
  if (!model.usable) state.SkipWithError("the synthetic run gives no model");
  analysis::WhatIfConfig c;
  c.bucket_mb = 5;
  for (auto _ : state) {
    auto pred = analysis::predictConfiguration(model, c);
    benchmark::DoNotOptimize(pred);
  }
}

// Baseline: the full analysis of the same run, on one thread as the prediction runs (the app
// analyses ranks at once, one per core; the ratio is kept to the work itself).
void BM_BaselineAnalyzeRun(benchmark::State& state) {
  const auto& p = prepared();
  analysis::AnalysisOptions one_thread;
  one_thread.threads = 1;
  for (auto _ : state) {
    auto report = analysis::analyzeRun(p.run, one_thread);
    benchmark::DoNotOptimize(report);
  }
  state.counters["events"] = static_cast<double>(p.run.eventCount());
}

}  // namespace

BENCHMARK(BM_BaselineAnalyzeRun)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WhatIfSweepTenSizes)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_WhatIfOnePrediction)->Unit(benchmark::kMillisecond);
DDPSCOPE_BENCHMARK_MAIN()
