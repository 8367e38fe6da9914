// The Statistics tab on the reference trace: the top kernels against an independent count of the
// file's events and its published class counts, stream busy time against the analysis, the
// per-step table against the analysis's steps, the models under QAbstractItemModelTester,
// sorting, the CSV export, a selected range, and rows that move the timeline.
#include <gtest/gtest.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QFile>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <array>
#include <limits>
#include <map>
#include <set>

#include "app/analysis/statistics.h"
#include "app/ui/loaded_run.h"
#include "app/ui/main_window.h"
#include "app/ui/run_load_job.h"
#include "app/ui/session.h"
#include "app/ui/statistics_model.h"
#include "app/ui/statistics_panel.h"
#include "app/ui/timeline_view.h"
#include "tests/common/kineto_reference.h"
#include "tests/common/trace_builder.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;
namespace ref = ddpscope::testing::kineto_reference;

namespace {
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");

std::shared_ptr<const LoadedRun> resnet() {
  static std::shared_ptr<const LoadedRun> run = [] {
    auto r = loadRunBlocking({kResnet});
    EXPECT_TRUE(r.run) << r.error.toStdString();
    return std::shared_ptr<const LoadedRun>(std::move(r.run));
  }();
  return run;
}

struct Tally {
  std::int64_t count = 0;
  TimeNs total = 0, min = std::numeric_limits<TimeNs>::max(), max = 0;
};

// An independent tally of the trace: every event of a GPU track that is GPU work, by name.
std::map<std::string, Tally> tallyByName(const trace::Run& run, TimeNs lo, TimeNs hi) {
  std::map<std::string, Tally> out;
  for (const auto& r : run.ranks)
    for (const auto& t : r.tracks) {
      if (t.kind != trace::TrackKind::Gpu) continue;
      for (std::size_t i = 0; i < t.size(); ++i) {
        const bool work = t.kind_of[i] == trace::EventKind::Kernel ||
                          t.kind_of[i] == trace::EventKind::Memcpy ||
                          t.kind_of[i] == trace::EventKind::Memset;
        if (!work || t.start[i] < lo || t.start[i] >= hi) continue;
        auto& k = out[r.names[t.name[i]]];
        ++k.count;
        k.total += t.dur[i];
        k.min = std::min(k.min, t.dur[i]);
        k.max = std::max(k.max, t.dur[i]);
      }
    }
  return out;
}
}  // namespace

// A cuda_sync record is the host waiting: not a row of the kernels, not in their share. A
// 1000 ns gemm beside a 5000 ns sync is the only row, with all of the GPU time.
TEST(UiStatistics, SyncRecordsAreNotKernelTime) {
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 0, 1000).add({"Stream Sync", 0, 5000, 9, 0, trace::EventKind::Sync});
  trace::Run run;
  run.ranks.push_back(b.build());
  const auto stats = analysis::kernelStatistics(run, analysis::ClassRules::builtin());
  ASSERT_EQ(stats.size(), 1u);
  EXPECT_EQ(stats[0].name, "gemm");
  EXPECT_EQ(stats[0].total_ns, 1000);
  EXPECT_DOUBLE_EQ(stats[0].share, 1.0);
}

TEST(UiStatistics, TopKernelsMatchAnIndependentTallyOfTheReferenceTrace) {
  app();
  const auto run = resnet();
  ASSERT_TRUE(run);
  const auto stats = analysis::kernelStatistics(run->run, run->rules);
  const auto want =
      tallyByName(run->run, std::numeric_limits<TimeNs>::min(), std::numeric_limits<TimeNs>::max());
  ASSERT_EQ(stats.size(), want.size());
  TimeNs all = 0;
  for (const auto& [name, k] : want)
    all += k.total;
  double shares = 0;
  std::array<std::int64_t, analysis::kActivityClassCount> by_class{};
  for (std::size_t i = 0; i < stats.size(); ++i) {
    const auto& s = stats[i];
    ASSERT_TRUE(want.contains(s.name)) << s.name;
    const auto& k = want.at(s.name);
    EXPECT_EQ(s.count, k.count) << s.name;
    EXPECT_EQ(s.total_ns, k.total) << s.name;
    EXPECT_EQ(s.min_ns, k.min) << s.name;
    EXPECT_EQ(s.max_ns, k.max) << s.name;
    EXPECT_DOUBLE_EQ(s.mean_ns, static_cast<double>(k.total) / static_cast<double>(k.count));
    EXPECT_DOUBLE_EQ(s.share, static_cast<double>(k.total) / static_cast<double>(all));
    if (i > 0) {
      EXPECT_GE(stats[i - 1].total_ns, s.total_ns);
    }
    shares += s.share;
    by_class[static_cast<std::size_t>(s.cls)] += s.count;
  }
  EXPECT_NEAR(shares, 1.0, 1e-9);
  // The published counts of the file's communication, computation and memory events.
  EXPECT_EQ(by_class[static_cast<std::size_t>(analysis::ActivityClass::Communication)],
            ref::kCommunicationKernels);
  EXPECT_EQ(by_class[static_cast<std::size_t>(analysis::ActivityClass::Computation)],
            ref::kComputationKernels);
  EXPECT_EQ(by_class[static_cast<std::size_t>(analysis::ActivityClass::Memory)],
            ref::kMemoryEvents);
  // Communication carries the collective its kernel's name says (allreduces, and the broadcast
  // of DDP's start).
  bool allreduce = false;
  for (const auto& s : stats)
    if (s.cls == analysis::ActivityClass::Communication) {
      EXPECT_EQ(s.kind, analysis::collectiveKindOfKernel(s.name)) << s.name;
      allreduce = allreduce || s.kind == analysis::CollectiveKind::AllReduce;
    }
  EXPECT_TRUE(allreduce);
}

TEST(UiStatistics, StreamBusyTimeIsTheAnalysisOnesAndAddsUpOverAWindow) {
  app();
  const auto run = resnet();
  const auto whole = analysis::streamStatistics(run->run, run->report);
  ASSERT_EQ(whole.size(), run->report.ranks[0].streams.size());
  const auto& rank = run->run.ranks[0];
  for (const auto& s : whole) {
    const trace::Track* track = nullptr;
    for (const auto& t : rank.tracks)
      if (t.kind == trace::TrackKind::Gpu && t.stream() == s.stream) track = &t;
    ASSERT_NE(track, nullptr);
    // Over everything, the window figure is the analysis's busy time.
    EXPECT_EQ(analysis::streamBusyWithin(*track, std::numeric_limits<TimeNs>::min() / 2,
                                         std::numeric_limits<TimeNs>::max() / 2),
              s.busy_ns);
    EXPECT_EQ(s.scope_ns, run->report.ranks[0].whole.span_ns);
    ASSERT_TRUE(s.busy_share);
    EXPECT_DOUBLE_EQ(*s.busy_share,
                     static_cast<double>(s.busy_ns) / static_cast<double>(s.scope_ns));
    // Two halves of a window add up to the window.
    const TimeNs lo = run->report.ranks[0].whole.first_ns, hi = run->report.ranks[0].whole.last_ns;
    const TimeNs mid = lo + (hi - lo) / 3;
    EXPECT_EQ(
        analysis::streamBusyWithin(*track, lo, mid) + analysis::streamBusyWithin(*track, mid, hi),
        analysis::streamBusyWithin(*track, lo, hi));
  }
}

TEST(UiStatistics, StepGpuIdleIsTheRunSummaryFigureForOneStep) {
  app();
  const auto run = resnet();
  // The headline's GPU idle % over steps 5–6 pools the per-step terms: Σ idle / Σ step time.
  double idle = 0, dur = 0;
  for (const auto& st : run->report.ranks[0].steps) {
    if (st.step < 5) continue;
    const auto pct = analysis::stepGpuIdlePct(st);
    ASSERT_TRUE(pct);
    idle += *pct / 100.0 * static_cast<double>(st.dur_ns);
    dur += static_cast<double>(st.dur_ns);
  }
  ASSERT_TRUE(run->summary.gpu_idle_pct);
  EXPECT_NEAR(100.0 * idle / dur, *run->summary.gpu_idle_pct, 1e-9);
}

TEST(UiStatistics, TheTabsTablesAreModelsThatSortAndExportAsCsv) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 900);
  w.show();
  w.session()->addRun(resnet());
  StatisticsPanel* panel = w.statisticsPanel();
  ASSERT_NE(panel, nullptr);
  w.tabs()->setCurrentWidget(panel);
  panel->refresh();
  for (int t = 0; t < StatisticsPanel::kTableCount; ++t) {
    QAbstractItemModelTester tester(panel->model(static_cast<StatisticsPanel::Table>(t)),
                                    QAbstractItemModelTester::FailureReportingMode::Fatal);
    QAbstractItemModelTester proxy_tester(panel->proxy(static_cast<StatisticsPanel::Table>(t)),
                                          QAbstractItemModelTester::FailureReportingMode::Fatal);
    panel->refresh();  // a reset under the testers
  }
  auto* kernels = panel->model(StatisticsPanel::kKernels);
  auto* proxy = panel->proxy(StatisticsPanel::kKernels);
  const auto stats = analysis::kernelStatistics(resnet()->run, resnet()->rules);
  ASSERT_EQ(kernels->rowCount(), static_cast<int>(stats.size()));
  // Sorted by total, longest first; then by count ascending.
  EXPECT_EQ(proxy->index(0, 0).data().toString().toStdString(), stats.front().name);
  proxy->sort(2, Qt::AscendingOrder);
  for (int r = 1; r < proxy->rowCount(); ++r)
    EXPECT_LE(proxy->index(r - 1, 2).data(StatisticsTableModel::kSortRole).toDouble(),
              proxy->index(r, 2).data(StatisticsTableModel::kSortRole).toDouble());
  // Steps: the analysis's figures, one row per step of the rank.
  auto* steps = panel->model(StatisticsPanel::kSteps);
  ASSERT_EQ(steps->rowCount(), static_cast<int>(resnet()->report.ranks[0].steps.size()));
  EXPECT_EQ(steps->index(0, 1).data(StatisticsTableModel::kSortRole).toDouble(), 4.0);
  EXPECT_EQ(steps->index(0, 2).data(StatisticsTableModel::kSortRole).toDouble(),
            static_cast<double>(ref::kSteps[0].dur_ns));
  EXPECT_EQ(steps->index(0, 4).data(StatisticsTableModel::kSortRole).toDouble(),
            static_cast<double>(ref::kSteps[0].exposed_ns));
  // A picture of the tab, sorted by total (DDPSCOPE_TEST_PNGS=DIR keeps it).
  if (const QByteArray dir = qgetenv("DDPSCOPE_TEST_PNGS"); !dir.isEmpty()) {
    proxy->sort(3, Qt::DescendingOrder);
    w.grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/statistics-resnet.png"));
    proxy->sort(2, Qt::AscendingOrder);
  }
  // CSV: a header, then the rows in the order shown.
  QTemporaryDir dir;
  const QString path = dir.filePath(QStringLiteral("kernels.csv"));
  QString error;
  ASSERT_TRUE(panel->exportCsv(StatisticsPanel::kKernels, path, &error)) << error.toStdString();
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QStringList lines = QString::fromUtf8(f.readAll()).split(QStringLiteral("\r\n"));
  EXPECT_EQ(lines.front(),
            QStringLiteral("name,class,count,total_us,mean_us,min_us,max_us,share_pct"));
  EXPECT_EQ(lines.size(), proxy->rowCount() + 2);  // and the empty string after the last \r\n
  const QString first_name = proxy->index(0, 0).data().toString();
  EXPECT_TRUE(lines[1].startsWith(first_name.contains(',') ? QStringLiteral("\"") : first_name))
      << lines[1].toStdString();
  // A path that is not a CSV, and a folder that does not exist: a message naming it, no file.
  EXPECT_FALSE(panel->exportCsv(StatisticsPanel::kKernels, dir.filePath("k.txt"), &error));
  EXPECT_TRUE(error.contains("k.txt"));
  const QString missing = dir.filePath(QStringLiteral("no/such/folder/k.csv"));
  EXPECT_FALSE(panel->exportCsv(StatisticsPanel::kKernels, missing, &error));
  EXPECT_TRUE(error.contains("k.csv")) << error.toStdString();
  EXPECT_FALSE(QFile::exists(missing));
}

TEST(UiStatistics, ASelectedRangeRestrictsTheTablesAndRowsMoveTheTimeline) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 900);
  w.show();
  const auto run = resnet();
  w.session()->addRun(run);
  StatisticsPanel* panel = w.statisticsPanel();
  w.tabs()->setCurrentWidget(panel);
  const auto& st = run->run.ranks[0].steps[1];
  w.session()->setSelection(TimeRange{st.start, st.end});
  panel->refresh();
  EXPECT_TRUE(panel->scopeText().startsWith("Selection")) << panel->scopeText().toStdString();
  const auto want = tallyByName(run->run, st.start, st.end);
  auto* kernels = panel->model(StatisticsPanel::kKernels);
  ASSERT_EQ(kernels->rowCount(), static_cast<int>(want.size()));
  std::int64_t count = 0, want_count = 0;
  for (int r = 0; r < kernels->rowCount(); ++r)
    count += static_cast<std::int64_t>(
        kernels->index(r, 2).data(StatisticsTableModel::kSortRole).toDouble());
  for (const auto& [name, k] : want)
    want_count += k.count;
  EXPECT_EQ(count, want_count);
  // The steps overlapping the selection: that step, and a neighbour only where it overlaps.
  std::set<int> want_steps, got_steps;
  for (const auto& s : run->run.ranks[0].steps)
    if (s.start < st.end && s.end > st.start) want_steps.insert(s.number);
  auto* steps = panel->model(StatisticsPanel::kSteps);
  for (int r = 0; r < steps->rowCount(); ++r)
    got_steps.insert(steps->index(r, 1).data(StatisticsTableModel::kSortRole).toInt());
  EXPECT_EQ(got_steps, want_steps);
  EXPECT_TRUE(got_steps.contains(st.number));
  // Streams: busy inside the selection, over its length.
  auto* streams = panel->model(StatisticsPanel::kStreams);
  ASSERT_GT(streams->rowCount(), 0);
  EXPECT_EQ(streams->index(0, 4).data(StatisticsTableModel::kSortRole).toDouble(),
            static_cast<double>(st.end - st.start));
  // A step row zooms the timeline to the step.
  w.session()->setSelection(std::nullopt);
  panel->refresh();
  const int step_rows = panel->proxy(StatisticsPanel::kSteps)->rowCount();
  ASSERT_GT(step_rows, 2);
  panel->activateRow(StatisticsPanel::kSteps, 2);
  const int src = panel->proxy(StatisticsPanel::kSteps)
                      ->mapToSource(panel->proxy(StatisticsPanel::kSteps)->index(2, 0))
                      .row();
  const auto& target = panel->model(StatisticsPanel::kSteps)->target(src);
  const trace::StepRange* step = nullptr;
  for (const auto& s : run->run.ranks[0].steps)
    if (s.number == target.step) step = &s;
  ASSERT_NE(step, nullptr);
  const TimeRange r = w.session()->viewRange();
  EXPECT_LE(r.lo, step->start);
  EXPECT_GE(r.hi, step->end);
  EXPECT_LT(r.length(), (step->end - step->start) * 11 / 10);
  // A kernel row highlights every instance of it on the timeline and shows the first.
  panel->activateRow(StatisticsPanel::kKernels, 0);
  const QString name = panel->proxy(StatisticsPanel::kKernels)->index(0, 0).data().toString();
  const auto all =
      tallyByName(run->run, std::numeric_limits<TimeNs>::min(), std::numeric_limits<TimeNs>::max());
  EXPECT_EQ(static_cast<std::int64_t>(w.timeline()->matches().size()),
            all.at(name.toStdString()).count);
  EXPECT_EQ(w.timeline()->currentMatch(), 0);
}
