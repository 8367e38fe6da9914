// The timeline's cost on a generated run with 1 M GPU events (STYLE.md: cost grows with pixels x
// lanes, not with events). Targets on a 2-core machine: draw list + replot of the full view
// < 20 ms, of a zoomed view < 10 ms. Each iteration moves the range by one nanosecond so that the
// per-(range, width) cache never hits: what is measured is a cold rebuild.
#include <benchmark/benchmark.h>

#include <qcustomplot.h>
#include <QApplication>
#include <map>
#include <memory>

#include "app/ui/lane_plottable.h"
#include "app/ui/main_window.h"
#include "app/ui/session.h"
#include "app/ui/timeline_view.h"
#include "tests/bench/common/synthetic_run.h"

using namespace ddpscope;
using namespace ddpscope::ui;

namespace {

constexpr int kWidth = 1600;

// About 1 M GPU events in all, on 1 rank or spread over `ranks` ranks (more lanes).
std::shared_ptr<const LoadedRun> run1M(int ranks = 1) {
  static std::map<int, std::shared_ptr<const LoadedRun>> cache;
  auto& run = cache[ranks];
  if (!run) {
    bench::SyntheticSpec spec;
    spec.ranks = ranks;
    spec.events_per_rank = 2'000'000 / ranks;  // host + GPU; about half are GPU activity
    run = prepareRun(bench::syntheticRun(spec), {});
  }
  return run;
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

// Pure draw-list builder over every lane; `zoom` is the fraction of the run shown.
void BM_DrawList(benchmark::State& state) {
  const auto run = run1M();
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

// The widget: draw lists of every lane plus QCustomPlot's replot of the whole timeline.
void BM_Replot(benchmark::State& state) {
  const auto run = run1M(static_cast<int>(state.range(1)));
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

}  // namespace

BENCHMARK(BM_DrawList)->Arg(1)->Arg(100)->Unit(benchmark::kMillisecond);
// Args: {1 / fraction of the run shown, ranks}.
BENCHMARK(BM_Replot)->Args({1, 1})->Args({100, 1})->Args({1, 8})->Args({100, 8})->Unit(
    benchmark::kMillisecond);

int main(int argc, char** argv) {
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
