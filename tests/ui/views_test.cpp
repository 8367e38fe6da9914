// The analysis views on Qt models, one step selection in every view, communication per
// collective kind, the exposed split with a late rank, and the rules editor: the Buckets and
// Compare tables and the Summary's per-kind table pass Qt's model checks; the Buckets table, its
// chart's export title, Compare's alignment and the design report cover the steps of the run
// summary; a simulated run with a straggler names it; rules typed in the settings reclassify the
// runs open.
// The agent first: its headers name a member `slots`, which Qt's headers make a macro.
#include "agent/run_agent.h"

#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <QAbstractItemModelTester>
#include <QApplication>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QFile>
#include <QFontMetrics>
#include <QImage>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTimer>
#include <set>
#include <sstream>

#include "app/analysis/bucket_steps.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/stragglers.h"
#include "app/analysis/sweep.h"
#include "app/ui/app_settings.h"
#include "app/ui/buckets_model.h"
#include "app/ui/buckets_panel.h"
#include "app/ui/collectives_model.h"
#include "app/ui/compare_model.h"
#include "app/ui/compare_panel.h"
#include "app/ui/details_panel.h"
#include "app/ui/format.h"
#include "app/ui/headline_bar.h"
#include "app/ui/main_window.h"
#include "app/ui/run_load_job.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"
#include "app/ui/summary_model.h"
#include "app/ui/summary_panel.h"
#include "app/ui/sweep_panel.h"
#include "app/ui/timeline_view.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");

std::shared_ptr<LoadedRun> load(const QStringList& paths) {
  app();
  RunLoadResult r = loadRunBlocking(paths);
  EXPECT_TRUE(r.run) << r.error.toStdString();
  return r.run;
}

// A window (no error dialogs) with the ResNet trace open.
std::unique_ptr<MainWindow> resnetWindow() {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  if (const auto run = load({kResnet})) w->session()->addRun(run);
  return w;
}

// A small simulated model, for runs that need not be the default one.
const std::vector<std::string> kSmall = {"--model", "mlp", "--layers", "4", "--hidden", "256"};

// `ddpscope-agent --backend sim --world-size N --steps 4 --out DIR [extra...]` (N: 4 unless given),
// in process.
QString simulate(const QString& dir, const std::vector<std::string>& extra, int world_size = 4) {
  const std::string out = dir.toStdString();
  std::vector<std::string> args = {"ddpscope-agent",
                                   "--backend",
                                   "sim",
                                   "--world-size",
                                   std::to_string(world_size),
                                   "--steps",
                                   "4",
                                   "--out",
                                   out};
  args.insert(args.end(), extra.begin(), extra.end());
  std::vector<const char*> argv;
  for (const auto& a : args)
    argv.push_back(a.c_str());
  std::ostringstream progress, errors;
  const int rc = agent::agentMain(static_cast<int>(argv.size()), argv.data(), progress, errors);
  EXPECT_EQ(rc, 0) << errors.str();
  return dir;
}

// With DDPSCOPE_VIEWS_SHOTS=DIR, what a test shows is also saved there as NAME.png, to look at.
void shoot(QWidget* widget, const char* name) {
  const QString dir = qEnvironmentVariable("DDPSCOPE_VIEWS_SHOTS");
  if (dir.isEmpty()) return;
  QApplication::processEvents();
  EXPECT_TRUE(widget->grab().save(QDir(dir).filePath(QString::fromUtf8(name) + ".png")));
}

// A test's own settings file, so that the rules typed here touch no one else's settings.
struct TestSettings {
  QTemporaryDir dir;
  TestSettings() {
    qputenv("DDPSCOPE_SETTINGS", dir.filePath(QStringLiteral("ddpscope.ini")).toLocal8Bit());
  }
  ~TestSettings() { qunsetenv("DDPSCOPE_SETTINGS"); }
};

// The first column of the rows of a table of the report (the one under `heading`), and how many
// rows.
std::set<int> reportTableFirstColumn(const QString& md, const QString& heading, int* rows) {
  std::set<int> steps;
  *rows = 0;
  const auto start = md.indexOf(heading);
  if (start < 0) return steps;
  const auto end = md.indexOf(QStringLiteral("\n## "), start + 1);
  const QStringList lines = md.mid(start, end - start).split('\n');
  bool header_seen = false;
  for (const QString& line : lines) {
    if (!line.startsWith('|') || line.contains(QStringLiteral(" --- |"))) continue;
    if (!header_seen) {
      header_seen = true;  // "| step | bucket | ..."
      continue;
    }
    ++*rows;
    steps.insert(line.section('|', 1, 1).trimmed().toInt());
  }
  return steps;
}
}  // namespace

TEST(UiModels, BucketsCompareAndCollectivesModelsPassQtsModelChecks) {
  const auto run = load({kResnet});
  ASSERT_TRUE(run);
  BucketsModel buckets;
  QAbstractItemModelTester t1(&buckets, QAbstractItemModelTester::FailureReportingMode::Fatal);
  buckets.setRun(run);
  EXPECT_GT(buckets.rowCount(), 0);
  // Every row is a bucket of the steps the run summary covers; its key finds it again.
  for (int r = 0; r < buckets.rowCount(); ++r) {
    const BucketKey key = buckets.keyAt(r);
    EXPECT_EQ(buckets.rowOf(key), r);
    const auto& b = run->report.ranks[static_cast<std::size_t>(key.rank_index)]
                        .buckets[static_cast<std::size_t>(key.report_index)];
    EXPECT_TRUE(analysis::inSelection(run->summary.selection, b.step)) << b.step;
    EXPECT_EQ(buckets.index(r, BucketsModel::kStep).data().toInt(), b.step);
  }
  EXPECT_EQ(buckets.headerData(BucketsModel::kReady, Qt::Horizontal).toString(),
            QStringLiteral("ready"));
  EXPECT_TRUE(buckets.headerData(BucketsModel::kReady, Qt::Horizontal, Qt::ToolTipRole)
                  .toString()
                  .contains(QStringLiteral("from the start of its step")));
  buckets.setRun(nullptr);
  EXPECT_EQ(buckets.rowCount(), 0);

  CompareModel compare;
  QAbstractItemModelTester t2(&compare, QAbstractItemModelTester::FailureReportingMode::Fatal);
  const auto rows = analysis::compareRuns(run->report, run->report);
  compare.setRows(rows);
  ASSERT_EQ(compare.rowCount(), static_cast<int>(rows.size()));
  EXPECT_EQ(compare.index(0, CompareModel::kMetric).data().toString().toStdString(),
            rows[0].metric);
  compare.setRows({});
  EXPECT_EQ(compare.rowCount(), 0);

  CollectivesModel kinds;
  QAbstractItemModelTester t3(&kinds, QAbstractItemModelTester::FailureReportingMode::Fatal);
  kinds.setRun(run);
  const auto& c = run->report.ranks[0].collectives;
  ASSERT_EQ(kinds.rowCount(), static_cast<int>(c.size()));
  ASSERT_FALSE(c.empty());
  EXPECT_EQ(kinds.index(0, CollectivesModel::kKind).data().toString(), QStringLiteral("allreduce"));
  EXPECT_EQ(kinds.index(0, CollectivesModel::kCount).data(CollectivesModel::kSortRole).toDouble(),
            static_cast<double>(c[0].count));
  EXPECT_EQ(kinds.index(0, CollectivesModel::kExposed).data(CollectivesModel::kSortRole).toDouble(),
            static_cast<double>(c[0].exposed_ns));
  kinds.setRun(nullptr);
  EXPECT_EQ(kinds.rowCount(), 0);
}

// The Summary tab's step chart draws every step, and hatches those the headline leaves out: one
// hatch per step outside the selection, none over a selected one.
TEST(UiSteps, TheSummaryChartHatchesTheStepsTheHeadlineLeavesOut) {
  const auto w = resnetWindow();
  const auto run = w->session()->current();
  ASSERT_TRUE(run);
  QCustomPlot* chart = w->summary()->chart();
  const auto& used = run->summary.selection.used;
  ASSERT_FALSE(used.empty());
  std::set<int> hatched;
  for (int i = 0; i < chart->itemCount(); ++i)
    if (auto* rect = qobject_cast<QCPItemRect*>(chart->item(i)))
      hatched.insert(static_cast<int>(
          std::lround((rect->topLeft->coords().x() + rect->bottomRight->coords().x()) / 2)));
  std::set<int> want;
  for (const auto& m : analysis::stepMeans(run->report))
    if (!std::binary_search(used.begin(), used.end(), m.step)) want.insert(m.step);
  EXPECT_FALSE(want.empty()) << "the ResNet trace has a warm-up step";
  EXPECT_EQ(hatched, want);
  EXPECT_TRUE(chart->xAxis->label().contains(QStringLiteral("hatched")));
}

// The Buckets table, its chart's export title and the design report cover the run summary's
// steps, and say which: for the reference trace steps 5–6 (4 is warm-up), for a simulated run
// steps 1–3 (0 is warm-up).
TEST(UiSteps, BucketsViewItsExportAndTheReportCoverTheSameSteps) {
  QTemporaryDir dir;
  const QString sim = simulate(dir.filePath(QStringLiteral("sim")), kSmall);
  for (const QString& path : {kResnet, sim}) {
    SCOPED_TRACE(path.toStdString());
    app();
    MainWindow w;
    w.setErrorDialogsEnabled(false);
    w.resize(1400, 900);
    w.show();
    const auto run = load({path});
    ASSERT_TRUE(run);
    w.session()->addRun(run);
    const auto& selection = run->summary.selection;
    ASSERT_FALSE(selection.used.empty());
    const QString rule = QString::fromStdString(selection.rule);

    // The view: rows of the selected steps only (every rank), and the note says which.
    const QAbstractItemModel* table = w.buckets()->table()->model();
    std::set<int> view_steps;
    int rank0_rows = 0;
    for (int r = 0; r < table->rowCount(); ++r) {
      view_steps.insert(table->index(r, BucketsModel::kStep).data().toInt());
      if (table->index(r, BucketsModel::kRank).data().toInt() == run->report.ranks[0].rank)
        ++rank0_rows;
    }
    EXPECT_EQ(view_steps, std::set<int>(selection.used.begin(), selection.used.end()));
    EXPECT_TRUE(w.buckets()->noteText().contains(rule.toHtmlEscaped()))
        << w.buckets()->noteText().toStdString();

    // The chart's export: its title states the same steps, and is not clipped.
    w.tabs()->setCurrentWidget(w.buckets());
    QString error;
    const QString svg = dir.filePath(QStringLiteral("buckets.svg"));
    ASSERT_TRUE(w.exportView(QStringLiteral("chart"), svg, 1.0, &error)) << error.toStdString();
    QFile f(svg);
    ASSERT_TRUE(f.open(QIODevice::ReadOnly));
    EXPECT_TRUE(f.readAll().contains(rule.toUtf8()));
    const QString png = dir.filePath(QStringLiteral("buckets.png"));
    ASSERT_TRUE(w.exportView(QStringLiteral("chart"), png, 1.0, &error)) << error.toStdString();
    const QFont bold(w.buckets()->chart()->font().family(), 9, QFont::Bold);
    int widest = 0;
    for (const QString& line : runTitle(*run, true).split('\n'))
      widest = std::max(widest, QFontMetrics(bold).horizontalAdvance(line));
    EXPECT_GE(QImage(png).width(), widest) << "the title would be clipped";

    // The report: the same steps, the same rows as the view's for rank 0, ready from step start.
    const QString report = dir.filePath(QStringLiteral("report"));
    ASSERT_TRUE(w.exportReport(report, &error)) << error.toStdString();
    QFile md(QDir(report).filePath(QStringLiteral("report.md")));
    ASSERT_TRUE(md.open(QIODevice::ReadOnly));
    const QString text = QString::fromUtf8(md.readAll());
    EXPECT_TRUE(text.contains(QStringLiteral("Steps covered: ") + rule)) << text.toStdString();
    EXPECT_TRUE(text.contains(QStringLiteral("ready (from step start)")));
    // Its Buckets section: one row per bucket (the means over ranks and steps, as the chart's).
    int mean_rows = 0;
    const auto ids = reportTableFirstColumn(text, QStringLiteral("## Buckets"), &mean_rows);
    const auto means = analysis::bucketMeans(run->report, selection);
    EXPECT_EQ(mean_rows, static_cast<int>(means.size()));
    std::set<int> mean_ids;
    for (const auto& m : means)
      mean_ids.insert(m.id);
    EXPECT_EQ(ids, mean_ids);
    // Its appendix: the view's rows of rank 0, step by step.
    int report_rows = 0;
    EXPECT_EQ(reportTableFirstColumn(text, QStringLiteral("## Appendix: buckets step by step"),
                                     &report_rows),
              view_steps);
    EXPECT_EQ(report_rows, rank0_rows);
  }
}

// Compare aligns both runs at a step their figures cover (not the warm-up step), and says so;
// the one-step view of the timeline follows the same rule (app_modes).
TEST(UiSteps, CompareAlignsAtAStepTheFiguresCover) {
  QTemporaryDir dir;
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  const auto a = load({simulate(dir.filePath(QStringLiteral("a")), kSmall)});
  auto five = kSmall;
  five.insert(five.end(), {"--bucket-mb", "0.5"});
  const auto b = load({simulate(dir.filePath(QStringLiteral("b")), five)});
  ASSERT_TRUE(a && b);
  w.session()->addRun(a);
  w.session()->addRun(b);
  ComparePanel* compare = w.comparePanel();
  compare->setRuns(0, 1);
  EXPECT_EQ(compare->step(), a->summary.selection.used.front());
  ASSERT_FALSE(a->summary.selection.warm_up.empty());
  EXPECT_NE(compare->step(), a->summary.selection.warm_up.front());  // not the warm-up step
  EXPECT_TRUE(compare->stepNote().contains(QStringLiteral("step %1").arg(compare->step())));
  EXPECT_TRUE(compare->stepNote().contains(QString::fromStdString(a->summary.selection.rule)))
      << compare->stepNote().toStdString();
  EXPECT_EQ(compare->table()->model()->rowCount(), static_cast<int>(compare->rows().size()));

  // A legend under the lanes says what the colours mean: every colour of the timeline's own
  // legend for the run shown there is in it (one definition, fillLaneLegend).
  const QStringList legend = compare->legendTexts();
  EXPECT_TRUE(legend.contains(QStringLiteral("hidden (overlap strip)")))
      << legend.join(", ").toStdString();
  for (const QString& item : w.timeline()->legendTexts())
    EXPECT_TRUE(legend.contains(item)) << item.toStdString();

  // The exported chart carries the table under the lanes: the same rows, each run's
  // configuration above, the step note below; the chart's layout is left as it was.
  const FigureTable table = compare->figureTable();
  ASSERT_EQ(table.rows.size(), compare->rows().size());
  for (std::size_t i = 0; i < table.rows.size(); ++i) {
    const auto& r = compare->rows()[i];
    EXPECT_EQ(table.rows[i],
              QStringList({QString::fromStdString(r.metric), QString::fromStdString(r.a),
                           QString::fromStdString(r.b), QString::fromStdString(r.delta)}));
  }
  EXPECT_EQ(table.header, QStringList({"metric", "A", "B", "B − A"}));
  ASSERT_EQ(table.above.size(), 2);
  EXPECT_TRUE(
      table.above[1].contains(QString::fromStdString(analysis::runConfigurationText(b->run))))
      << table.above[1].toStdString();
  EXPECT_EQ(table.below, QStringList{compare->stepNote()});
  const int layout_rows = compare->plot()->plotLayout()->rowCount();
  QByteArray svg, png;
  QString error;
  ASSERT_TRUE(compare->renderChart(ExportFormat::Svg, 1.0, &svg, &error)) << error.toStdString();
  EXPECT_EQ(compare->plot()->plotLayout()->rowCount(), layout_rows);
  // Drawn, not only made room for: every row's metric and figures are text of the figure.
  const QString drawn = QString::fromUtf8(svg);
  for (const auto& row : table.rows)
    for (const QString& cell : row)
      EXPECT_TRUE(cell.isEmpty() || drawn.contains(cell.toHtmlEscaped())) << cell.toStdString();
  EXPECT_TRUE(drawn.contains(QStringLiteral("metric")));
  // Nothing of the table is left in the chart after it was rendered: the PNG of the tab's chart
  // without a table is as it was.
  ASSERT_TRUE(compare->renderChart(ExportFormat::Png, 1.0, &png, &error)) << error.toStdString();
  EXPECT_EQ(compare->plot()->plotLayout()->rowCount(), layout_rows);
}

// A run analysed again with other rules (the settings' rules editor) stays A or B in Compare:
// the user's choice is kept, not reset to the two most recent runs.
TEST(UiSteps, CompareKeepsItsRunsWhenTheyAreAnalysedAgain) {
  QTemporaryDir dir;
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  const auto a = load({simulate(dir.filePath(QStringLiteral("a")), kSmall)});
  const auto b = load({simulate(dir.filePath(QStringLiteral("b")), kSmall)});
  const auto c = load({simulate(dir.filePath(QStringLiteral("c")), kSmall)});
  ASSERT_TRUE(a && b && c);
  for (const auto& r : {a, b, c})
    w.session()->addRun(r);
  ComparePanel* compare = w.comparePanel();
  compare->setRuns(2, 0);  // not the default pair (1, 2)
  const std::shared_ptr<const LoadedRun> fresh = reanalyseRun(*a, a->rules);
  ASSERT_TRUE(w.session()->replaceRun(a, fresh));
  EXPECT_EQ(compare->runA(), c);
  EXPECT_EQ(compare->runB(), fresh);
  EXPECT_EQ(compare->runBoxA()->currentIndex(), 2);
  EXPECT_EQ(compare->runBoxB()->currentIndex(), 0);
}

// With a late rank the others' waits count as hidden where compute runs beside them; the
// headline and the Summary say how much of the exposed time is waiting and name the late rank.
// Without a straggler the exposed time is transfer.
TEST(UiStragglers, ALateRankIsNamedAndItsWaitsSplitFromTransfer) {
  QTemporaryDir dir;
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  const auto late = load({simulate(dir.filePath(QStringLiteral("late")),
                                   {"--straggler-rank", "2", "--straggler-slowdown", "1.5"})});
  const auto even = load({simulate(dir.filePath(QStringLiteral("even")), {})});
  ASSERT_TRUE(late && even);

  const auto s = analysis::summarizeStragglers(late->report);
  ASSERT_TRUE(s.late_rank.has_value());
  EXPECT_EQ(*s.late_rank, 2);
  ASSERT_TRUE(s.wait_pct.has_value());
  EXPECT_GT(*s.wait_pct, 50.0);
  w.session()->addRun(late);
  const QString split = w.headline()->exposedSplitText();
  EXPECT_TRUE(split.contains(QStringLiteral("waiting for rank 2"))) << split.toStdString();
  EXPECT_TRUE(split.contains(formatPct(s.wait_pct, 1))) << split.toStdString();
  // The waits that ran under compute raise the overlap: the transfers' own overlap is beside it,
  // and below the run's overlap.
  ASSERT_TRUE(s.hidden_wait_ns && s.transfer_overlap_pct);
  EXPECT_GT(*s.hidden_wait_ns, 0);
  EXPECT_TRUE(split.contains(QStringLiteral("transfers alone overlapped")) &&
              split.contains(formatPct(s.transfer_overlap_pct, 1)))
      << split.toStdString();
  ASSERT_TRUE(s.whole_overlap_pct);
  EXPECT_LT(*s.transfer_overlap_pct, *s.whole_overlap_pct);  // the same traces, waits in
  EXPECT_TRUE(split.contains(formatPct(s.whole_overlap_pct, 1) + QStringLiteral(" with the waits")))
      << split.toStdString();
  EXPECT_TRUE(w.summary()->note()->text().contains(QStringLiteral("(rank 2, last at")))
      << w.summary()->note()->text().toStdString();
  // The per-rank table's split adds up to each rank's exposed communication.
  const QAbstractItemModel* ranks = w.summary()->table()->model();
  for (int r = 0; r < ranks->rowCount(); ++r) {
    const double exposed =
        ranks->index(r, SummaryModel::kExposed).data(SummaryModel::kSortRole).toDouble();
    const double wait =
        ranks->index(r, SummaryModel::kExposedWait).data(SummaryModel::kSortRole).toDouble();
    const double transfer =
        ranks->index(r, SummaryModel::kExposedTransfer).data(SummaryModel::kSortRole).toDouble();
    EXPECT_DOUBLE_EQ(wait + transfer, exposed) << "row " << r;
  }
  // The Summary's per-kind table: the allreduces of every rank.
  EXPECT_EQ(w.summary()->kindsTable()->model()->rowCount(), 4);
  w.resize(1600, 1000);
  w.show();
  w.tabs()->setCurrentWidget(w.summary());
  shoot(&w, "straggler-summary");

  const auto e = analysis::summarizeStragglers(even->report);
  EXPECT_FALSE(e.late_rank.has_value());
  ASSERT_TRUE(e.wait_pct.has_value());
  EXPECT_LT(*e.wait_pct, 50.0);  // without a straggler: transfer not hidden
  w.session()->addRun(even);
  EXPECT_FALSE(w.headline()->exposedSplitText().contains(QStringLiteral("rank")))
      << w.headline()->exposedSplitText().toStdString();
}

// Details of a communication kernel: its collective kind, the rule that classified it, and its
// matched collective's skew, late rank, and this rank's wait and transfer.
TEST(UiStragglers, DetailsOfACollectiveShowItsSkewLateRankWaitAndTransfer) {
  QTemporaryDir dir;
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  const auto run = load({simulate(dir.filePath(QStringLiteral("late")),
                                  {"--straggler-rank", "2", "--straggler-slowdown", "1.5"})});
  ASSERT_TRUE(run);
  w.session()->addRun(run);
  // Rank 0's kernel of a matched collective that rank 2 started last.
  const analysis::MatchedCollective* pick = nullptr;
  for (const auto& m : run->report.matched)
    if (m.last_rank == 2 && m.wait_ns[0] > 0) pick = &m;
  ASSERT_NE(pick, nullptr);
  const trace::TimeNs start = pick->last_start_ns - pick->wait_ns[0];
  const auto& rank = run->run.ranks[0];
  std::optional<EventRef> ref;
  for (std::size_t ti = 0; ti < rank.tracks.size() && !ref; ++ti) {
    const auto& t = rank.tracks[ti];
    for (std::size_t i = 0; i < t.size() && !ref; ++i)
      if (t.kind == trace::TrackKind::Gpu && t.start[i] == start &&
          t.dur[i] == pick->wait_ns[0] + pick->transfer_ns[0])
        ref = EventRef{0, static_cast<std::int32_t>(ti), static_cast<std::uint32_t>(i)};
  }
  ASSERT_TRUE(ref.has_value());
  w.session()->selectEvent(ref);
  w.resize(1600, 1000);
  w.show();
  w.tabs()->setCurrentWidget(w.details());
  shoot(&w, "straggler-details");
  const QStringList lines = w.details()->text().split('\n');
  const auto value = [&](const QString& label) {
    const auto k = lines.indexOf(label);
    return k < 0 || k + 1 >= lines.size() ? QString() : lines[k + 1].trimmed();
  };
  EXPECT_EQ(value(QStringLiteral("collective")), QStringLiteral("allreduce"));
  EXPECT_TRUE(value(QStringLiteral("classified by")).startsWith(QStringLiteral("built-in")));
  EXPECT_EQ(value(QStringLiteral("skew")), formatTime(pick->skew_ns));
  EXPECT_EQ(value(QStringLiteral("late rank")), QStringLiteral("rank 2"));
  EXPECT_TRUE(value(QStringLiteral("wait (this rank)")).startsWith(formatTime(pick->wait_ns[0])));
  EXPECT_TRUE(
      value(QStringLiteral("transfer (this rank)")).startsWith(formatTime(pick->transfer_ns[0])));
  // Every rank loaded: its bandwidth is over the transfer, the same figure as its bucket's row in
  // the Buckets table, unmarked; the collectives table says the same of its kind.
  EXPECT_EQ(value(QStringLiteral("bandwidth over")), QStringLiteral("transfer"));
  const analysis::BucketReport* bucket = nullptr;
  for (const auto& b : run->report.ranks[0].buckets)
    if (b.start_ns == start) bucket = &b;
  ASSERT_NE(bucket, nullptr);
  ASSERT_TRUE(bucket->bytes > 0 && bucket->busbw_gbps);
  EXPECT_EQ(bucket->bw_basis, analysis::BandwidthBasis::Transfer);
  const auto bw = analysis::collectiveBandwidth(analysis::CollectiveKind::AllReduce, bucket->bytes,
                                                pick->transfer_ns[0], 4);
  EXPECT_EQ(value(QStringLiteral("busbw")), formatBandwidth(bw.busbw_gbps));
  EXPECT_EQ(formatBandwidth(bucket->busbw_gbps, bucket->bw_basis), formatBandwidth(bw.busbw_gbps));
  EXPECT_FALSE(w.buckets()->noteText().contains(QStringLiteral("whole kernel")));
  EXPECT_TRUE(w.buckets()->noteText().contains(QStringLiteral("over each allreduce's transfer")))
      << w.buckets()->noteText().toStdString();
  auto* kinds = w.summary()->kindsTable()->model();
  for (int row = 0; row < kinds->rowCount(); ++row) {
    const QString cell = kinds->index(row, CollectivesModel::kBusbw).data().toString();
    EXPECT_FALSE(cell.endsWith(QStringLiteral("*"))) << cell.toStdString();
  }
  EXPECT_FALSE(w.summary()->kindsTitle()->text().contains(QStringLiteral("whole kernel")));
}

// The timeline of a run with a late rank: each rank's overlap strip splits its exposed
// communication into waiting for the last rank and transfer, summing to the headline's split, and
// the late rank's lanes say it is the late one; a single rank of a larger run does neither.
TEST(UiStragglers, TheOverlapStripSplitsWaitingFromTransferAndNamesTheLateRank) {
  QTemporaryDir dir;
  const auto run = load({simulate(dir.filePath(QStringLiteral("late")),
                                  {"--straggler-rank", "2", "--straggler-slowdown", "1.5"})});
  ASSERT_TRUE(run);
  const auto& tl = run->timeline;
  EXPECT_TRUE(tl.has_waiting);
  for (std::size_t r = 0; r < run->report.ranks.size(); ++r) {
    const auto& rr = run->report.ranks[r];
    const auto strips = tl.lanesOf(LaneKind::Overlap, rr.rank);
    ASSERT_EQ(strips.size(), 1u);
    EXPECT_EQ(strips.front()->label, kOverlapSplitLabel);
    trace::TimeNs waiting = 0, transfer = 0, hidden = 0;
    const auto& ev = strips.front()->events;
    for (std::size_t k = 0; k < ev.size(); ++k) {
      const trace::TimeNs len = ev.end(k) - ev.start(k);
      (ev.style(k) == kStyleCommWaiting   ? waiting
       : ev.style(k) == kStyleCommExposed ? transfer
                                          : hidden) += len;
    }
    ASSERT_TRUE(rr.exposed_wait_ns && rr.exposed_transfer_ns);
    EXPECT_EQ(waiting, *rr.exposed_wait_ns) << "rank " << rr.rank;
    EXPECT_EQ(transfer, *rr.exposed_transfer_ns) << "rank " << rr.rank;
    EXPECT_EQ(hidden, rr.whole.overlap_ns) << "rank " << rr.rank;
    if (rr.rank != 2) {
      EXPECT_GT(waiting, 0) << "rank " << rr.rank;
    }
    const auto steps = tl.lanesOf(LaneKind::Steps, rr.rank);
    ASSERT_EQ(steps.size(), 1u);
    EXPECT_EQ(steps.front()->label.find("late rank") != std::string::npos, rr.rank == 2)
        << steps.front()->label;
  }
  const auto resnet = load({kResnet});
  ASSERT_TRUE(resnet);
  EXPECT_FALSE(resnet->timeline.has_waiting);
  const auto strips = resnet->timeline.lanesOf(LaneKind::Overlap, 0);
  ASSERT_EQ(strips.size(), 1u);
  EXPECT_EQ(strips.front()->label, "overlap (hidden / exposed)");
}

// A run folder with one rank's file cut short: the app says which file and offers the others;
// declined, the error stands and nothing is loaded; accepted, the other ranks load and the run
// warns of the file left out, its rank missing.
TEST(UiLoading, ARunWithAnUnreadableFileOffersTheOthers) {
  QTemporaryDir dir;
  const QString run_dir = simulate(dir.filePath(QStringLiteral("cut")), kSmall);
  const QString cut = QDir(run_dir).filePath(QStringLiteral("rank-2.json.gz"));
  QFile f(cut);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QByteArray bytes = f.readAll();
  f.close();
  ASSERT_TRUE(f.open(QIODevice::WriteOnly | QIODevice::Truncate));
  f.write(bytes.left(bytes.size() / 3));
  f.close();
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  QString asked;
  bool answer = false;
  w.setSkipUnreadableAnswer([&](const QString& question) {
    asked = question;
    return answer;
  });
  bool done = false;
  QObject::connect(w.loader(), &RunLoadJob::finished, [&] { done = true; });
  w.openPaths({run_dir});
  ASSERT_TRUE(waitFor([&] { return done && !w.lastError().isEmpty(); }, 60000));
  EXPECT_TRUE(asked.contains(QStringLiteral("rank-2.json.gz"))) << asked.toStdString();
  EXPECT_TRUE(
      asked.contains(QStringLiteral("1 of the run's 4 trace files could not be read. "
                                    "Load the other 3")))
      << asked.toStdString();
  EXPECT_TRUE(w.session()->runs().empty());
  EXPECT_TRUE(w.lastError().startsWith(QStringLiteral("Could not open: ")))
      << w.lastError().toStdString();
  answer = true;
  done = false;
  w.openPaths({run_dir});
  ASSERT_TRUE(waitFor([&] { return !w.session()->runs().empty(); }, 60000));
  const auto run = w.session()->current();
  ASSERT_EQ(run->run.ranks.size(), 3u);
  EXPECT_EQ(run->report.completeness.missing_ranks, (std::vector<std::int32_t>{2}));
  const auto& warnings = run->report.warnings;
  EXPECT_TRUE(std::any_of(warnings.begin(), warnings.end(), [](const std::string& x) {
    return x.find("could not be read and was left out") != std::string::npos &&
           x.find("rank-2.json.gz") != std::string::npos;
  }));
  // With a rank of the world missing, a collective's late rank is of the loaded ranks only, and
  // its wait is not told from transfer; no lane calls itself the late rank.
  ASSERT_FALSE(run->report.matched.empty());
  const auto text = matchedCollectiveText(run->report, run->report.matched.front());
  EXPECT_FALSE(text.split_known);
  EXPECT_TRUE(
      text.late_rank.contains(QStringLiteral("among the loaded ranks (rank 2 has no trace)")))
      << text.late_rank.toStdString();
  EXPECT_EQ(text.split_unknown, QStringLiteral("not told apart: rank 2 has no trace"));
  for (const auto& lane : run->timeline.lanes)
    EXPECT_EQ(lane.label.find("late rank"), std::string::npos) << lane.label;
}

// One rank of two (the ResNet trace): the other's arrival is unknown, so every bandwidth is over
// the whole kernel, marked, and the tables' notes say what the mark means.
TEST(UiStragglers, BandwidthsOverWholeKernelsAreMarked) {
  const auto owner = resnetWindow();
  MainWindow& w = *owner;
  ASSERT_TRUE(w.session()->current());
  EXPECT_TRUE(w.buckets()->noteText().contains(QStringLiteral("waiting for the last rank")))
      << w.buckets()->noteText().toStdString();
  auto* buckets = w.buckets()->table()->model();
  ASSERT_GT(buckets->rowCount(), 0);
  EXPECT_TRUE(buckets->index(0, BucketsModel::kBusbw).data().toString().endsWith(" *"));
  EXPECT_TRUE(buckets->index(0, BucketsModel::kBusbw)
                  .data(Qt::ToolTipRole)
                  .toString()
                  .contains(QStringLiteral("not the network's")));
  EXPECT_TRUE(w.summary()->kindsTitle()->text().contains(QStringLiteral("waiting for the last")));
  auto* kinds = w.summary()->kindsTable()->model();
  bool marked = false;
  for (int row = 0; row < kinds->rowCount(); ++row)
    marked = marked || kinds->index(row, CollectivesModel::kAlgbw).data().toString().endsWith("*");
  EXPECT_TRUE(marked);
}

// Rules typed in the settings dialog: a bad line is refused with its number and OK is off; good
// rules are saved and the run open is analysed again with them, changing its communication.
TEST(UiRules, RulesEnteredInTheEditorReclassifyTheRunsOpen) {
  TestSettings settings;
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  const auto run = load({kResnet});
  ASSERT_TRUE(run);
  w.session()->addRun(run);
  constexpr auto kComm = static_cast<std::size_t>(analysis::ActivityClass::Communication);
  ASSERT_EQ(run->report.ranks[0].counts[kComm], 21);

  QString bad_status;
  bool ok_enabled_when_bad = true;
  QTimer::singleShot(0, [&] {
    ASSERT_TRUE(waitFor([] { return qobject_cast<QDialog*>(QApplication::activeModalWidget()); }));
    auto* dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
    auto* editor = dialog->findChild<QPlainTextEdit*>(QStringLiteral("rulesEditor"));
    auto* status = dialog->findChild<QLabel*>(QStringLiteral("rulesStatus"));
    auto* ok = dialog->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Ok);
    editor->setPlainText(
        QStringLiteral("# NCCL as computation\n{\"match\": \"([\", \"class\": "
                       "\"computation\"}\n"));
    bad_status = status->text();
    shoot(dialog, "settings-rules-bad");
    ok_enabled_when_bad = ok->isEnabled();
    editor->setPlainText(QStringLiteral(
        "# NCCL as computation\n{\"match\": \"^nccl\", \"class\": \"computation\"}\n"));
    shoot(dialog, "settings-rules");
    ok->click();
  });
  w.showSettingsDialog();
  EXPECT_FALSE(ok_enabled_when_bad);
  EXPECT_TRUE(bad_status.contains(QStringLiteral("rules in the settings:2:")))
      << bad_status.toStdString();
  EXPECT_TRUE(settings::userRules().contains(QStringLiteral("^nccl")));

  // Analysed again off the GUI thread, then put in the place of the old run.
  ASSERT_TRUE(waitFor([&] { return w.session()->current() != run; }, 60000));
  const auto now = w.session()->current();
  EXPECT_EQ(now->name, run->name);
  EXPECT_EQ(now->report.ranks[0].counts[kComm], 0);
  EXPECT_EQ(now->rules->description(), "rules in the settings (1 rule), then built-in");
  EXPECT_EQ(now->report.rules, now->rules->description());
  // A run opened later is classified by the saved rules too.
  const auto later = load({kResnet});
  ASSERT_TRUE(later);
  EXPECT_EQ(later->report.ranks[0].counts[kComm], 0);
}

// Sweep open runs: simulated runs at 16, 1 and 4 MiB and the ResNet trace (which does not record
// its bucket size) open; the Sweep tab sets the three side by side, by size, with the figures
// and sentence of analysis::measuredSweep over the same runs (what `ddpscope-cli sweep` prints),
// and names the trace it left out. A second run at 4 MiB is refused, and so is a single run.
TEST(Views, SweepOpenRunsSetsTheMeasuredRunsSideBySide) {
  app();
  QTemporaryDir dir;
  Session session;
  SweepPanel panel(&session, [] { return RunParameters{}; });
  panel.resize(1100, 640);
  panel.show();
  std::vector<analysis::MeasuredRun> want;
  for (const char* mb : {"16", "1", "4"}) {
    auto args = kSmall;
    args.insert(args.end(), {"--bucket-mb", mb, "--first-bucket-mb", "1"});
    const auto run = load({simulate(dir.filePath(QStringLiteral("b%1").arg(mb)), args)});
    ASSERT_TRUE(run);
    session.addRun(run);
    want.push_back(analysis::measuredRun(
        {&run->run, &run->report, &run->summary, run->name.toStdString()}, std::atof(mb)));
    if (want.size() == 1) {
      EXPECT_FALSE(panel.sweepOpenRuns());
      EXPECT_TRUE(panel.lineText().contains("1 usable")) << panel.lineText().toStdString();
    }
  }
  session.addRun(load({kResnet}));  // current: its size is not known, no current size
  ASSERT_TRUE(panel.sweepOpenRuns()) << panel.lineText().toStdString();
  std::string error;
  const auto expected = analysis::measuredSweep(want, -1, &error);
  ASSERT_TRUE(expected) << error;
  ASSERT_EQ(panel.points().size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(panel.points()[i].bucket_mb, expected->points[i].bucket_mb);
    EXPECT_EQ(panel.points()[i].summary.step_ns, expected->points[i].summary.step_ns);
  }
  EXPECT_EQ(panel.points()[0].bucket_mb, 1);
  EXPECT_EQ(panel.points()[2].bucket_mb, 16);
  EXPECT_EQ(panel.recommendationText().toStdString(), expected->text);
  EXPECT_EQ(panel.chart()->graph(0)->dataCount(), 3);
  EXPECT_TRUE(panel.lineText().startsWith("Measured, 3 open runs: "));
  EXPECT_TRUE(
      panel.lineText().contains("Left out: resnet50_ddp_rank0.json.gz (does not record its bucket "
                                "size)"))
      << panel.lineText().toStdString();
  shoot(&panel, "sweep-open-runs");

  auto args = kSmall;
  args.insert(args.end(), {"--bucket-mb", "4", "--seed", "7"});
  session.addRun(load({simulate(dir.filePath(QStringLiteral("again4")), args)}));
  EXPECT_FALSE(panel.sweepOpenRuns());
  EXPECT_TRUE(panel.lineText().contains("two runs at 4 MiB: ")) << panel.lineText().toStdString();
  EXPECT_TRUE(panel.lineText().contains("close one of them"));
}

// The design report of a run of ten ranks with rank 9 late: its figures pin rank 9's lanes while
// they are drawn, and the window is as it was after (no lane pinned, the same view range).
TEST(Views, TheReportPinsTheLateRankOnlyWhileItDraws) {
  app();
  QTemporaryDir dir;
  auto args = kSmall;
  args.insert(args.end(), {"--straggler-rank", "9", "--straggler-slowdown", "1.5"});
  const auto run = load({simulate(dir.filePath(QStringLiteral("late9")), args, 10)});
  ASSERT_TRUE(run);
  MainWindow window;
  window.setErrorDialogsEnabled(false);
  window.resize(1400, 900);
  window.show();
  window.session()->addRun(run);
  QApplication::processEvents();
  const TimeRange before = window.session()->viewRange();
  QString error;
  ASSERT_TRUE(window.exportReport(dir.filePath(QStringLiteral("report")), &error))
      << error.toStdString();
  EXPECT_TRUE(window.timeline()->pinnedLanes().empty());
  EXPECT_EQ(window.session()->viewRange().lo, before.lo);
  EXPECT_EQ(window.session()->viewRange().hi, before.hi);
  // Rank 9's lanes, pinned, lead the figures; without the pin they are not drawn at all.
  const QString unpinned_title = window.timeline()->exportTitleText();
  EXPECT_TRUE(unpinned_title.contains(QStringLiteral("lanes of ranks 0–7 shown (2 more below")))
      << unpinned_title.toStdString();
  // The figure names the late rank and the exposed split, as the window's headline does.
  EXPECT_TRUE(unpinned_title.contains(QStringLiteral("waiting for a late rank (rank 9, last at ")))
      << unpinned_title.toStdString();
  const auto pinned = window.timeline()->pinRankLanes(9);
  EXPECT_FALSE(pinned.empty());
  EXPECT_EQ(window.timeline()->pinnedLanes(), pinned);
  // Pinned, rank 9 is drawn and said: one rank left below.
  EXPECT_TRUE(window.timeline()->exportTitleText().contains(
      QStringLiteral("lanes of ranks 0–7 and, pinned above them, of rank 9 shown (1 more below")))
      << window.timeline()->exportTitleText().toStdString();
  // The report's timeline figure is the pinned one: taller than the one without the pin.
  QByteArray with_pin, without_pin;
  const QString note = QStringLiteral("rank 9, pinned at the top, is the late rank");
  ASSERT_TRUE(window.timeline()->renderImage(ExportFormat::Png, 1.0, &with_pin, &error, 0, note));
  window.timeline()->unpinLanes(pinned);
  ASSERT_TRUE(
      window.timeline()->renderImage(ExportFormat::Png, 1.0, &without_pin, &error, 0, note));
  const QImage report_timeline(
      QDir(dir.filePath(QStringLiteral("report"))).filePath(QStringLiteral("timeline.png")));
  EXPECT_GT(QImage::fromData(with_pin).height(), QImage::fromData(without_pin).height());
  // Rendered at 1.5 there (the window's layout then may differ by a title line): its height
  // over 1.5 is near the pinned figure's, far from the unpinned one's.
  const double report_h = report_timeline.height() / 1.5;
  const int pinned_h = QImage::fromData(with_pin).height();
  const int unpinned_h = QImage::fromData(without_pin).height();
  EXPECT_LT(std::abs(report_h - pinned_h), std::abs(report_h - unpinned_h))
      << report_h << " " << pinned_h << " " << unpinned_h;
  window.timeline()->pinRankLanes(9);
  window.timeline()->unpinLanes(pinned);
  EXPECT_TRUE(window.timeline()->pinnedLanes().empty());
  QFile md(QDir(dir.filePath(QStringLiteral("report"))).filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  EXPECT_TRUE(QString::fromUtf8(md.readAll())
                  .contains(QStringLiteral(
                      "and of rank 9, the late rank, pinned above them (of 10 ranks)")));
  // An exported timeline names rank 9 in its title too: rank 9's lanes are pinned above the
  // first eight while it draws (taller than the figure with the same title without them), and
  // unpinned after.
  const auto named = window.timeline()->namedRanksBeyondExport();
  ASSERT_EQ(named.size(), 1u);
  EXPECT_EQ(named[0].first, 9);
  EXPECT_EQ(named[0].second, QStringLiteral("rank 9, pinned at the top, is the late rank"));
  const QString path = dir.filePath(QStringLiteral("timeline.png"));
  ASSERT_TRUE(window.timeline()->exportImage(path, 1.0, &error)) << error.toStdString();
  EXPECT_TRUE(window.timeline()->pinnedLanes().empty());
  // Taller than the same figure, with the same title, without rank 9's lanes.
  QByteArray unpinned;
  ASSERT_TRUE(window.timeline()->renderImage(ExportFormat::Png, 1.0, &unpinned, &error, 0,
                                             named[0].second));
  EXPECT_GT(QImage(path).height(), QImage::fromData(unpinned).height() + 40);
}
