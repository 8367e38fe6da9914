// The Digest tab on a digest of 1,024 ranks × 50 steps (docs/PERFORMANCE.md): redrawing the
// heatmap (a figure chosen: the colour map's cells, its gradient, a replot at 1200 × 800) as a
// ratio to the floor of any heatmap, filling a QImage of the same cells through a colour table;
// and opening the digest (parse, grid, heatmap), whose target is well under a second.
#include <benchmark/benchmark.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QImage>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>

#include "app/analysis/digest_reader.h"
#include "app/ui/digest_heatmap.h"
#include "app/ui/palette.h"
#include "tracer/format/memory.h"

using namespace ddpscope;

namespace {

constexpr int kRanks = 1024;
constexpr int kSteps = 50;

// Digest JSON of kRanks ranks × kSteps steps, as `ddpscope-cli digest` lays it out, with step
// times that vary by rank and step (a deterministic spread of ±10 %, rank 7 late).
const std::string& digestJson() {
  static const std::string json = [] {
    std::string s =
        "{\"ddpscope_digest\": 1, \"run\": {\"ranks\": 1024, \"world_size\": 1024, "
        "\"missing_ranks\": [], \"steps_used\": [";
    for (int st = 2; st <= kSteps; ++st)
      s += (st > 2 ? ", " : "") + std::to_string(st);
    s += "], \"step_rule\": \"steps 2–50 (step 1 left out as warm-up)\", \"whole_trace\": false, "
         "\"step_us\": 45000.000, \"overlap_pct\": 80.0000, \"exposed_comm_per_step_us\": "
         "2000.000, \"exposed_comm_us\": null, \"dp_efficiency\": 0.950000, \"gpu_idle_pct\": "
         "5.0000, \"allreduces_per_step\": 16.000, \"buckets_per_step\": 16, "
         "\"mean_bucket_wait_us\": 100.000}, \"rules\": \"built-in\", \"matched_by\": \"sequence "
         "number\", \"matched_collectives\": 819200, \"warnings\": [], \"ranks\": [";
    std::uint64_t x = 88172645463325252ull;
    for (int r = 0; r < kRanks; ++r) {
      s += r ? ",\n  " : "\n  ";
      s += "{\"rank\": " + std::to_string(r) + ", \"world_size\": 1024, \"source\": " +
           "\"simulated\", \"incomplete\": false, \"file\": \"rank-" + std::to_string(r) +
           ".json.gz\", \"file_bytes\": 123456, \"fnv1a64\": \"0123456789abcdef\", "
           "\"comm_us\": 1000.000, \"compute_us\": 2000.000, \"overlap_us\": 800.000, "
           "\"overlap_pct\": 80.0000, \"exposed_comm_us\": 200.000, \"span_us\": 5000.000, "
           "\"idle_us\": 100.000, \"idle_pct\": 2.0000, \"compute_pct\": 40.0000, "
           "\"non_compute_pct\": 60.0000, \"exposed_wait_us\": 150.000, "
           "\"exposed_transfer_us\": 50.000, \"steps\": [";
      for (int st = 1; st <= kSteps; ++st) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        const double spread = static_cast<double>(x % 2001) / 10000.0 - 0.1;
        const double dur = 45000.0 * (1.0 + spread) * (r == 7 ? 1.3 : 1.0);
        char step[320];
        std::snprintf(step, sizeof step,
                      "%s{\"step\": %d, \"dur_us\": %.3f, \"overlap_pct\": 80.0000, "
                      "\"exposed_comm_us\": %.3f, \"dp_efficiency\": 0.9500, "
                      "\"matched_wait_us\": %.3f, \"matched_transfer_us\": 40.000}",
                      st > 1 ? ", " : "", st, dur, dur * 0.04, r == 7 ? 0.0 : dur * 0.03);
        s += step;
      }
      s += "]}";
    }
    s += "\n]}\n";
    return s;
  }();
  return json;
}

const analysis::Digest& digest() {
  static const analysis::Digest d = analysis::parseDigest(digestJson(), "bench");
  return d;
}

ui::DigestHeatmap& heatmap() {
  static ui::DigestHeatmap* h = [] {
    auto* w = new ui::DigestHeatmap;
    w->resize(1200, 800);
    return w;
  }();
  return *h;
}

// Baseline: the cells into a QImage through a 256-colour table (the least any heatmap does).
void BM_BaselineFillImage(benchmark::State& state) {
  const auto grid = analysis::digestGrid(digest(), analysis::DigestFigure::StepTime);
  QList<QRgb> table;
  for (int i = 0; i < 256; ++i)
    table.push_back(ui::sequentialColour(ui::colours::kCompute, i / 255.0).rgb());
  const double lo = static_cast<double>(*grid.min_ns), hi = static_cast<double>(*grid.max_ns);
  QImage image(kSteps, kRanks, QImage::Format_ARGB32);
  for (auto _ : state) {
    for (int y = 0; y < kRanks; ++y) {
      auto* line = reinterpret_cast<QRgb*>(image.scanLine(y));
      for (int x = 0; x < kSteps; ++x) {
        const auto& v = grid.at(static_cast<std::size_t>(y), static_cast<std::size_t>(x));
        const int i = v ? static_cast<int>((static_cast<double>(*v) - lo) / (hi - lo) * 255.0) : 0;
        line[x] = table[std::clamp(i, 0, 255)];
      }
    }
    benchmark::DoNotOptimize(image.bits());
  }
}

// A figure chosen: the grid, the colour map's cells and gradient, and a replot.
void BM_HeatmapRedraw(benchmark::State& state) {
  auto& h = heatmap();
  int i = 0;
  for (auto _ : state) {
    const auto figure =
        (i++ % 2) ? analysis::DigestFigure::StepTime : analysis::DigestFigure::ExposedComm;
    h.setGrid(analysis::digestGrid(digest(), figure), figure == analysis::DigestFigure::StepTime
                                                          ? ui::colours::kCompute
                                                          : ui::colours::kCommExposed);
  }
}

// A replot that rebuilds the colour map's image (its data range changed), nothing else.
void BM_HeatmapReplotOnly(benchmark::State& state) {
  auto& h = heatmap();
  h.setGrid(analysis::digestGrid(digest(), analysis::DigestFigure::StepTime),
            ui::colours::kCompute);
  const QCPRange range = h.colourMap()->dataRange();
  int i = 0;
  for (auto _ : state) {
    h.colourMap()->setDataRange(QCPRange(range.lower, range.upper * (1.0 + 1e-9 * (i++ % 2))));
    h.plot()->replot();
  }
}

// Opening: the digest's JSON parsed, the step-time grid and the heatmap drawn.
void BM_OpenDigest(benchmark::State& state) {
  auto& h = heatmap();
  for (auto _ : state) {
    const auto d = analysis::parseDigest(digestJson(), "bench");
    h.setGrid(analysis::digestGrid(d, analysis::DigestFigure::StepTime), ui::colours::kCompute);
  }
  state.counters["json_MB"] = static_cast<double>(digestJson().size()) / 1e6;
}

BENCHMARK(BM_BaselineFillImage)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HeatmapRedraw)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_HeatmapReplotOnly)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_OpenDigest)->Unit(benchmark::kMillisecond);

}  // namespace

int main(int argc, char** argv) {
  trace::tuneAllocatorForTraces();  // as the app does
  qputenv("QT_QPA_PLATFORM", "offscreen");
  QApplication app(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
