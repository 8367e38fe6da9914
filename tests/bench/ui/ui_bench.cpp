// The timeline's cost on a generated run with 1 M GPU events (docs/UI.md: cost grows with pixels x
// lanes, not with events). Targets on a 2-core machine: draw list + replot of the full view
// < 20 ms, of a zoomed view < 10 ms. Each iteration moves the range by one nanosecond so that the
// per-(range, width) cache never hits: what is measured is a cold rebuild.
#include <benchmark/benchmark.h>

#include <malloc.h>
#include <qcustomplot.h>
#include <unistd.h>
#include <QApplication>
#include <QSplitter>

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
// or spread over `ranks` ranks (more lanes). With `host`, the timeline shows the host lanes (the
// launches on their thread's lane); without, only the GPU side's lanes, as before host lanes
// existed (the baseline the host lanes' cost is a ratio to). One run is kept at a time.
std::shared_ptr<const LoadedRun> runOf(int ranks, int million, bool host = false) {
  static std::map<std::pair<int, int>, std::shared_ptr<LoadedRun>> cache;
  static std::vector<Lane> all_lanes;  // the lanes with the host ones while they are set aside
  const std::pair<int, int> key{ranks, million};
  if (!cache.contains(key)) {
    cache.clear();
    all_lanes.clear();
    bench::SyntheticSpec spec;
    spec.ranks = ranks;
    spec.events_per_rank = std::int64_t{1'000'000} * million / ranks;
    cache[key] = prepareRun(bench::syntheticRun(spec), {});
  }
  auto& lanes = cache.at(key)->timeline.lanes;
  if (host && !all_lanes.empty()) {
    lanes = std::move(all_lanes);
    all_lanes.clear();
  } else if (!host && all_lanes.empty()) {
    all_lanes = std::move(lanes);
    lanes.clear();
    for (const Lane& l : all_lanes)
      if (l.kind != LaneKind::Host) lanes.push_back(l);
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
  const auto run = runOf(1, static_cast<int>(state.range(1)), state.range(2) != 0);
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
// BM_DrawList's is what honest density costs). Arg `blocks` 0 walks every event (the baseline
// whole blocks taken from their summaries are measured against, in the same run).
void BM_DrawListOccupancy(benchmark::State& state) {
  const auto run = runOf(1, static_cast<int>(state.range(1)), state.range(2) != 0);
  const bool use_blocks = state.range(3) != 0;
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
      boxes += buildDrawList(lane.events, w, 3, &occupancy, use_blocks).size();
    benchmark::DoNotOptimize(boxes);
    benchmark::DoNotOptimize(occupancy.data());
  }
  state.counters["boxes"] = static_cast<double>(boxes);
  double blocks = 0, plain = 0;  // how many blocks can be taken whole (at a far zoom)
  for (const auto& lane : t.lanes)
    for (const auto& b : lane.events.blockSummaries()) {
      blocks += 1;
      plain += b.styles > 0 ? 1 : 0;
    }
  state.counters["whole_blocks"] = blocks > 0 ? plain / blocks : 0;
  if (std::getenv("DDPSCOPE_BENCH_LANES")) {  // each lane's blocks, style changes, overlaps
    for (const auto& lane : t.lanes) {
      std::size_t p = 0, runs = 0, zero = 0, overl = 0;
      for (const auto& b : lane.events.blockSummaries())
        p += b.styles > 0;
      TimeNs m = 0;
      for (std::size_t i = 0; i < lane.events.size(); ++i) {
        if (i > 0 && lane.events.style(i) != lane.events.style(i - 1)) ++runs;
        if (lane.events.end(i) == lane.events.start(i)) ++zero;
        if (i > 0 && lane.events.start(i) < m) ++overl;
        m = std::max(m, lane.events.end(i));
      }
      std::fprintf(stderr,
                   "%s kind %d n %zu plain %zu/%zu style changes %zu zero %zu overlap %zu\n",
                   lane.label.c_str(), static_cast<int>(lane.kind), lane.events.size(), p,
                   lane.events.blockSummaries().size(), runs, zero, overl);
    }
  }
}

// The widget: draw lists of every lane plus QCustomPlot's replot of the whole timeline.
void BM_Replot(benchmark::State& state) {
  const auto run = runOf(static_cast<int>(state.range(1)), static_cast<int>(state.range(2)),
                         state.range(3) != 0);
  MainWindow window;
  window.setErrorDialogsEnabled(false);
  window.resize(kWidth + 260, 1000);
  window.show();
  window.session()->addRun(run);
  QApplication::processEvents();
  // Host lanes shown means every thread's rows open (they start closed, its first row alone).
  if (state.range(3) != 0)
    for (const Lane& l : run->timeline.lanes)
      if (l.kind == LaneKind::Host && l.depth == 0 && l.rows > 1)
        window.timeline()->setHostGroupExpanded(l.rank_index, l.track, true);
  QApplication::processEvents();
  // The timeline as tall as the window allows, so that a rank's lanes (host lanes included) are
  // on screen and drawn: lanes scrolled out of view cost nothing.
  if (auto* split = qobject_cast<QSplitter*>(window.timeline()->parentWidget()))
    split->setSizes({900, 60});
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
  int on_screen = 0;  // lanes inside the plot's visible height
  for (const auto* l : window.timeline()->lanes())
    on_screen += plot->yAxis->range().contains(l->top()) ? 1 : 0;
  state.counters["lanes_on_screen"] = on_screen;
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
    // By column capacity: the GPU side's lanes (what a run without host lanes holds), the host
    // lanes, and the launch index.
    double gpu_lanes = 0, host_lanes = 0, links = 0;
    for (const Lane& l : loaded->timeline.lanes)
      (l.kind == LaneKind::Host ? host_lanes : gpu_lanes) += static_cast<double>(l.events.bytes());
    for (const auto& v : loaded->timeline.launches)
      links += static_cast<double>(v.capacityBytes());
    state.counters["gpu_lanes_B_per_event"] = gpu_lanes / events;
    state.counters["host_lanes_B_per_event"] = host_lanes / events;
    state.counters["launch_index_B_per_event"] = links / events;
    benchmark::DoNotOptimize(loaded);
    loaded.reset();
    state.ResumeTiming();
  }
  state.counters["app_B_per_event_beyond_model"] = per_event;
}

bool with20M() {
  const char* v = std::getenv("DDPSCOPE_BENCH_HOST20M");
  return v != nullptr && std::string(v) == "1";
}

bool with10M() {
  const char* v = std::getenv("DDPSCOPE_BENCH_10M");
  return v != nullptr && std::string(v) == "1";
}

const bool registered = [] {
  // Args: {1 / fraction of the run shown, M events, host lanes shown}; 2 M events are 1 M GPU
  // events and their launches. Host lanes off is the baseline (the GPU side's lanes only).
  auto* draw = benchmark::RegisterBenchmark("BM_DrawList", BM_DrawList)
                   ->ArgNames({"zoom", "Mevents", "host"})
                   ->Args({1, 2, 0})
                   ->Args({100, 2, 0})
                   ->Args({1, 2, 1})
                   ->Args({100, 2, 1})
                   ->Unit(benchmark::kMillisecond);
  auto* occupancy = benchmark::RegisterBenchmark("BM_DrawListOccupancy", BM_DrawListOccupancy)
                        ->ArgNames({"zoom", "Mevents", "host", "blocks"})
                        ->Args({1, 2, 0, 0})
                        ->Args({1, 2, 0, 1})
                        ->Args({100, 2, 0, 0})
                        ->Args({100, 2, 0, 1})
                        ->Args({1, 2, 1, 0})
                        ->Args({1, 2, 1, 1})
                        ->Args({100, 2, 1, 0})
                        ->Args({100, 2, 1, 1})
                        ->Unit(benchmark::kMillisecond);
  // Args: {1 / fraction of the run shown, ranks, M events, host lanes shown}.
  auto* replot = benchmark::RegisterBenchmark("BM_Replot", BM_Replot)
                     ->ArgNames({"zoom", "ranks", "Mevents", "host"})
                     ->Args({1, 1, 2, 0})
                     ->Args({100, 1, 2, 0})
                     ->Args({1, 1, 2, 1})
                     ->Args({100, 1, 2, 1})
                     ->Args({1, 8, 2, 0})
                     ->Args({100, 8, 2, 0})
                     ->Args({1, 8, 2, 1})
                     ->Args({100, 8, 2, 1})
                     ->Unit(benchmark::kMillisecond);
  auto* prepare = benchmark::RegisterBenchmark("BM_PrepareRun", BM_PrepareRun)
                      ->ArgNames({"ranks", "Mevents"})
                      ->Args({8, 2})
                      ->Iterations(3)
                      ->Unit(benchmark::kMillisecond);
  if (with10M()) {
    draw->Args({1, 10, 0})->Args({100, 10, 0})->Args({10000, 10, 0});
    occupancy->Args({1, 10, 0, 1})->Args({100, 10, 0, 1})->Args({10000, 10, 0, 1});
    replot->Args({1, 8, 10, 0})->Args({100, 8, 10, 0})->Args({10000, 8, 10, 0});
    prepare->Args({8, 10});
  }
  // 10 M GPU events and their 10 M launches (20 M events, 1 rank): the GPU side's lanes alone,
  // then with the launches on their host lane.
  if (with20M()) {
    occupancy->Args({1, 20, 0, 0})
        ->Args({1, 20, 0, 1})
        ->Args({100, 20, 0, 1})
        ->Args({1, 20, 1, 0})
        ->Args({1, 20, 1, 1})
        ->Args({100, 20, 1, 1});
    replot->Args({1, 1, 20, 0})->Args({100, 1, 20, 0})->Args({1, 1, 20, 1})->Args({100, 1, 20, 1});
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
