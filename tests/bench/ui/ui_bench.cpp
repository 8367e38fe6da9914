// The timeline's cost on a generated run with 1 M GPU events (docs/UI.md: cost grows with pixels x
// lanes, not with events). Targets on a 2-core machine: draw list + replot of the full view
// < 20 ms, of a zoomed view < 10 ms. Each iteration moves the range by one nanosecond so that the
// per-(range, width) cache never hits: what is measured is a cold rebuild.
#include <benchmark/benchmark.h>

#include <malloc.h>
#include <qcustomplot.h>
#include <unistd.h>
#include <QApplication>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include "app/ui/lane_plottable.h"
#include "app/ui/main_window.h"
#include "app/ui/session.h"
#include "app/ui/timeline_view.h"
#include "tests/bench/common/synthetic_run.h"
#include "tracer/format/memory.h"

using namespace ddpscope;
using namespace ddpscope::ui;

namespace {

constexpr int kWidth = 1600;

// `million` M events in all, about half of them GPU activity (the rest host launches), on 1 rank
// or spread over `ranks` ranks (more lanes). One run is kept at a time.
std::shared_ptr<const LoadedRun> runOf(int ranks, int million) {
  static std::map<std::pair<int, int>, std::shared_ptr<const LoadedRun>> cache;
  const std::pair<int, int> key{ranks, million};
  if (!cache.contains(key)) {
    cache.clear();
    bench::SyntheticSpec spec;
    spec.ranks = ranks;
    spec.events_per_rank = std::int64_t{1'000'000} * million / ranks;
    cache[key] = prepareRun(bench::syntheticRun(spec), {});
  }
  return cache.at(key);
}

std::int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

std::size_t gpuEvents(const LoadedRun& run) {
  std::size_t n = 0;
  for (const auto& r : run.run.ranks)
    for (const auto& t : r.tracks)
      for (auto k : t.kind_of)
        n += trace::isGpuActivity(k) ? 1 : 0;
  return n;
}

std::size_t drawnEvents(const LoadedRun& run) {
  std::size_t n = 0;
  for (const auto& l : run.timeline.lanes)
    n += l.events.size();
  return n;
}

// Pure draw-list builder over every lane; args {1 / fraction of the run shown, M events}.
void BM_DrawList(benchmark::State& state) {
  const auto run = runOf(1, static_cast<int>(state.range(1)));
  const auto& t = run->timeline;
  const double zoom = 1.0 / static_cast<double>(state.range(0));
  const TimeNs span = t.extent_hi - t.extent_lo;
  const TimeNs width = static_cast<TimeNs>(static_cast<double>(span) * zoom);
  const TimeNs lo = t.extent_lo + (span - width) / 2;
  TimeNs jiggle = 0;
  std::size_t boxes = 0;
  for (auto _ : state) {
    const ViewWindow w{lo + jiggle, lo + width + jiggle, kWidth};
    jiggle = 1 - jiggle;
    boxes = 0;
    for (const auto& lane : t.lanes)
      boxes += buildDrawList(lane.events, w).size();
    benchmark::DoNotOptimize(boxes);
  }
  state.counters["gpu_events"] = static_cast<double>(gpuEvents(*run));
  state.counters["lane_items"] = static_cast<double>(drawnEvents(*run));
  state.counters["boxes"] = static_cast<double>(boxes);
}

// The same with each column's occupancy, as the timeline draws merged boxes (its cost beside
// BM_DrawList's is what honest density costs).
void BM_DrawListOccupancy(benchmark::State& state) {
  const auto run = runOf(1, static_cast<int>(state.range(1)));
  const auto& t = run->timeline;
  const double zoom = 1.0 / static_cast<double>(state.range(0));
  const TimeNs span = t.extent_hi - t.extent_lo;
  const TimeNs width = static_cast<TimeNs>(static_cast<double>(span) * zoom);
  const TimeNs lo = t.extent_lo + (span - width) / 2;
  TimeNs jiggle = 0;
  std::size_t boxes = 0;
  std::vector<float> occupancy;
  for (auto _ : state) {
    const ViewWindow w{lo + jiggle, lo + width + jiggle, kWidth};
    jiggle = 1 - jiggle;
    boxes = 0;
    for (const auto& lane : t.lanes)
      boxes += buildDrawList(lane.events, w, 3, &occupancy).size();
    benchmark::DoNotOptimize(boxes);
    benchmark::DoNotOptimize(occupancy.data());
  }
  state.counters["boxes"] = static_cast<double>(boxes);
}

// The widget: draw lists of every lane plus QCustomPlot's replot of the whole timeline.
void BM_Replot(benchmark::State& state) {
  const auto run = runOf(static_cast<int>(state.range(1)), static_cast<int>(state.range(2)));
  MainWindow window;
  window.setErrorDialogsEnabled(false);
  window.resize(kWidth + 260, 1000);
  window.show();
  window.session()->addRun(run);
  QApplication::processEvents();
  auto* plot = window.timeline()->plot();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const auto& t = run->timeline;
  const double zoom = 1.0 / static_cast<double>(state.range(0));
  const TimeNs span = t.extent_hi - t.extent_lo;
  const TimeNs width = static_cast<TimeNs>(static_cast<double>(span) * zoom);
  const TimeNs lo = t.extent_lo + (span - width) / 2;
  TimeNs jiggle = 0;
  for (auto _ : state) {
    plot->xAxis2->setRange(static_cast<double>(lo + jiggle),
                           static_cast<double>(lo + width + jiggle));
    jiggle = 1 - jiggle;
    plot->replot(QCustomPlot::rpImmediateRefresh);
  }
  state.counters["gpu_events"] = static_cast<double>(gpuEvents(*run));
  state.counters["lane_items"] = static_cast<double>(drawnEvents(*run));
  state.counters["axis_rect_width"] = plot->axisRect()->width();
}

// What the app builds for a loaded run (analysis of every rank, overlap intervals, timeline
// lanes), its time and the resident bytes it adds per event beyond the model. Args: {ranks, M
// events}.
void BM_PrepareRun(benchmark::State& state) {
  bench::SyntheticSpec spec;
  spec.ranks = static_cast<std::int32_t>(state.range(0));
  spec.events_per_rank = std::int64_t{1'000'000} * state.range(1) / spec.ranks;
  double per_event = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto run = bench::syntheticRun(spec);
    const double events = static_cast<double>(run.eventCount());
    ::malloc_trim(0);
    const auto before = residentBytes();
    state.ResumeTiming();
    auto loaded = prepareRun(std::move(run), {});
    state.PauseTiming();
    ::malloc_trim(0);  // what is left resident is what the loaded run holds
    per_event = static_cast<double>(residentBytes() - before) / events;
    benchmark::DoNotOptimize(loaded);
    loaded.reset();
    state.ResumeTiming();
  }
  state.counters["app_B_per_event_beyond_model"] = per_event;
}

bool with10M() {
  const char* v = std::getenv("DDPSCOPE_BENCH_10M");
  return v != nullptr && std::string(v) == "1";
}

const bool registered = [] {
  auto* draw = benchmark::RegisterBenchmark("BM_DrawList", BM_DrawList)
                   ->ArgNames({"zoom", "Mevents"})
                   ->Args({1, 2})
                   ->Args({100, 2})
                   ->Unit(benchmark::kMillisecond);
  auto* occupancy = benchmark::RegisterBenchmark("BM_DrawListOccupancy", BM_DrawListOccupancy)
                        ->ArgNames({"zoom", "Mevents"})
                        ->Args({1, 2})
                        ->Args({100, 2})
                        ->Unit(benchmark::kMillisecond);
  // Args: {1 / fraction of the run shown, ranks, M events}; 2 M events are 1 M GPU events.
  auto* replot = benchmark::RegisterBenchmark("BM_Replot", BM_Replot)
                     ->ArgNames({"zoom", "ranks", "Mevents"})
                     ->Args({1, 1, 2})
                     ->Args({100, 1, 2})
                     ->Args({1, 8, 2})
                     ->Args({100, 8, 2})
                     ->Unit(benchmark::kMillisecond);
  auto* prepare = benchmark::RegisterBenchmark("BM_PrepareRun", BM_PrepareRun)
                      ->ArgNames({"ranks", "Mevents"})
                      ->Args({8, 2})
                      ->Iterations(3)
                      ->Unit(benchmark::kMillisecond);
  if (with10M()) {
    draw->Args({1, 10})->Args({100, 10})->Args({10000, 10});
    occupancy->Args({1, 10})->Args({100, 10})->Args({10000, 10});
    replot->Args({1, 8, 10})->Args({100, 8, 10})->Args({10000, 8, 10});
    prepare->Args({8, 10});
  }
  return true;
}();

}  // namespace

int main(int argc, char** argv) {
  ddpscope::trace::tuneAllocatorForTraces();  // as the app does
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
