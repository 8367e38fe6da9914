// The app headless: opening a run, the numbers it shows, navigation keys, export and bad files.
#include <gtest/gtest.h>

#include <qcustomplot.h>
#include <QAbstractItemModelTester>
#include <QApplication>
#include <QClipboard>
#include <QElapsedTimer>
#include <QFile>
#include <QFontMetrics>
#include <QHeaderView>
#include <QImage>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QMouseEvent>
#include <QScrollBar>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTreeWidget>
#include <cmath>

#include "app/ui/buckets_model.h"
#include "app/ui/buckets_panel.h"
#include "app/ui/details_panel.h"
#include "app/ui/format.h"
#include "app/ui/headline_bar.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/main_window.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/run_list_panel.h"
#include "app/ui/run_load_job.h"
#include "app/ui/session.h"
#include "app/ui/summary_model.h"
#include "app/ui/summary_panel.h"
#include "app/ui/sweep_panel.h"
#include "app/ui/timeline_view.h"
#include "tests/common/trace_builder.h"
#include "tests/ui/ui_test_app.h"
#include "tracer/format/run_loader.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");

// A window with resnet50 rank 0 loaded through the GUI path (worker thread).
std::unique_ptr<MainWindow> openResnet() {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(1400, 900);
  w->show();
  w->openPaths({kResnet});
  EXPECT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  QApplication::processEvents();
  w->timeline()->plot()->replot();
  return w;
}

void key(QWidget* target, int k) {
  QKeyEvent press(QEvent::KeyPress, k, Qt::NoModifier);
  QApplication::sendEvent(target, &press);
}

int nonWhitePixels(const QImage& image) {
  int n = 0;
  for (int y = 0; y < image.height(); y += 2)
    for (int x = 0; x < image.width(); x += 2)
      if ((image.pixel(x, y) & 0xFFFFFF) != 0xFFFFFF) ++n;
  return n;
}
}  // namespace

TEST(UiApp, OpeningResnet50ShowsItsLanesAndOverlap) {
  auto w = openResnet();
  const auto& lanes = w->timeline()->lanes();
  QStringList labels;
  std::vector<std::int64_t> streams;
  for (auto* l : lanes) {
    labels << QString::fromStdString(l->lane().label);
    if (l->lane().kind == LaneKind::Stream) streams.push_back(l->lane().stream);
  }
  EXPECT_EQ(streams, (std::vector<std::int64_t>{7, 40}));
  EXPECT_TRUE(labels.contains("compute · stream 7")) << labels.join(", ").toStdString();
  EXPECT_TRUE(labels.contains("comm · stream 40"));
  // The headline covers steps 5–6 (step 4 is warm-up): from the reference's per-step figures,
  // (1760.420 + 3731.346) / (12300.029 + 22587.443) = 15.74 %; the whole file's 15.61 % is the
  // Summary table's per-rank figure.
  EXPECT_EQ(w->headline()->overlapText(), QStringLiteral("15.74 %"));
  EXPECT_EQ(w->headline()->scopeText(), QStringLiteral("steps 5–6; step 4 left out as warm-up"));
  EXPECT_EQ(w->headline()->badgeText(), QStringLiteral("IMPORTED"));
  // The lanes drew something in the full view: the compute lane has boxes.
  for (auto* l : lanes) {
    if (l->lane().kind == LaneKind::Stream) {
      EXPECT_FALSE(l->drawList().empty());
    }
  }
}

TEST(UiApp, NavigationKeysChangeTheRange) {
  auto w = openResnet();
  Session* s = w->session();
  QWidget* plot = w->timeline()->plot();
  QCursor::setPos(0, 0);  // outside the plot: keys anchor at the centre
  const TimeRange full = s->viewRange();
  key(plot, Qt::Key_W);
  TimeRange r = s->viewRange();
  EXPECT_NEAR(static_cast<double>(r.length()), 0.8 * static_cast<double>(full.length()), 2.0);
  EXPECT_NEAR(static_cast<double>(r.lo + r.length() / 2),
              static_cast<double>(full.lo + full.length() / 2), 2.0);
  const TimeRange zoomed = r;
  key(plot, Qt::Key_D);
  r = s->viewRange();
  EXPECT_EQ(r.length(), zoomed.length());
  EXPECT_NEAR(static_cast<double>(r.lo - zoomed.lo), 0.2 * static_cast<double>(zoomed.length()),
              1.0);
  key(plot, Qt::Key_A);
  EXPECT_EQ(s->viewRange(), zoomed);
  key(plot, Qt::Key_S);
  EXPECT_NEAR(static_cast<double>(s->viewRange().length()), static_cast<double>(full.length()),
              4.0);
  key(plot, Qt::Key_W);
  key(plot, Qt::Key_W);
  key(plot, Qt::Key_F);  // fit everything
  EXPECT_EQ(s->viewRange(), full);
  s->setSelection(TimeRange{1'000'000, 3'000'000});
  key(plot, Qt::Key_F);  // fit the selection
  EXPECT_EQ(s->viewRange(), (TimeRange{1'000'000, 3'000'000}));
  key(plot, Qt::Key_Escape);
  EXPECT_FALSE(s->selection().has_value());
  // The wheel zooms at the cursor: the time under it stays put.
  const TimeRange before = s->viewRange();
  auto* qcp = w->timeline()->plot();
  const QPointF at(qcp->axisRect()->left() + qcp->axisRect()->width() / 4.0,
                   qcp->axisRect()->top() + 20);
  const double t_before = qcp->xAxis2->pixelToCoord(at.x());
  QWheelEvent wheel(at, qcp->mapToGlobal(at), QPoint(), QPoint(0, 120), Qt::NoButton,
                    Qt::NoModifier, Qt::NoScrollPhase, false);
  QApplication::sendEvent(qcp, &wheel);
  EXPECT_LT(s->viewRange().length(), before.length());
  qcp->xAxis2->setRange(static_cast<double>(s->viewRange().lo),
                        static_cast<double>(s->viewRange().hi));
  EXPECT_NEAR(qcp->xAxis2->pixelToCoord(at.x()), t_before,
              static_cast<double>(before.length()) * 1e-3);
}

TEST(UiApp, SelectionShowsDurationAndOverlap) {
  auto w = openResnet();
  Session* s = w->session();
  const auto& b = w->session()->current()->report.ranks.front().buckets.front();
  s->setSelection(TimeRange{b.start_ns, b.end_ns});
  const auto overlap = s->selectionOverlap();
  ASSERT_EQ(overlap.size(), 1u);
  const auto expected = analysis::overlapPctWithin(
      analysis::rankActivity(s->current()->run.ranks.front()), b.start_ns, b.end_ns);
  EXPECT_EQ(overlap.front(), expected);
  // What the user reads on the timeline: the selection's duration and its overlap.
  QApplication::processEvents();
  const QString shown = w->timeline()->selectionText();
  EXPECT_TRUE(shown.contains(formatTime(b.end_ns - b.start_ns))) << shown.toStdString();
  EXPECT_TRUE(shown.contains(QStringLiteral("overlap ") + formatPct(expected, 1)))
      << shown.toStdString();
}

TEST(UiApp, ExportWritesNonBlankFilesOfTheRightSize) {
  auto w = openResnet();
  QTemporaryDir dir;
  QString error;
  const QString png = dir.filePath("t.png");
  ASSERT_TRUE(w->timeline()->exportImage(png, 2.0, &error, 1000)) << error.toStdString();
  QImage image(png);
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.width(), 2000);
  EXPECT_GT(image.height(), 2 * w->timeline()->contentHeight());
  EXPECT_GT(nonWhitePixels(image), 2000);
  EXPECT_EQ(image.pixel(5, image.height() - 3) & 0xFFFFFF, 0xFFFFFFu);  // light theme background

  const QString svg = dir.filePath("t.svg");
  ASSERT_TRUE(w->timeline()->exportImage(svg, 1.0, &error, 1000)) << error.toStdString();
  QFile f(svg);
  ASSERT_TRUE(f.open(QIODevice::ReadOnly));
  const QByteArray text = f.readAll();
  EXPECT_TRUE(text.contains("<svg"));
  EXPECT_TRUE(text.contains("width=\"1000"));
  EXPECT_GT(text.count("<path") + text.count("<rect") + text.count("<polyline"), 50);

  const QString pdf = dir.filePath("t.pdf");
  ASSERT_TRUE(w->timeline()->exportImage(pdf, 1.0, &error, 1000)) << error.toStdString();
  QFile p(pdf);
  ASSERT_TRUE(p.open(QIODevice::ReadOnly));
  const QByteArray bytes = p.readAll();
  EXPECT_TRUE(bytes.startsWith("%PDF"));
  EXPECT_GT(bytes.size(), 3000);
  EXPECT_TRUE(bytes.contains("/MediaBox [0 0 1000")) << bytes.left(2000).toStdString();

  EXPECT_FALSE(w->timeline()->exportImage(dir.filePath("t.bmp"), 1.0, &error));
  EXPECT_TRUE(error.contains(".png")) << error.toStdString();
  EXPECT_TRUE(w->exportView("chart", dir.filePath("chart.png"), 1.0, &error))
      << error.toStdString();
  EXPECT_GT(nonWhitePixels(QImage(dir.filePath("chart.png"))), 500);
}

TEST(UiApp, ExportCurrentChartWritesTheChartOfTheTabShowingWithTheRunTitle) {
  auto w = openResnet();
  QTemporaryDir dir;
  QString error;
  // Each tab's chart, as SVG so that its text can be read back.
  const auto exported = [&](QWidget* tab, const QString& name) -> QByteArray {
    w->tabs()->setCurrentWidget(tab);
    const QString path = dir.filePath(name);
    if (!w->exportView("chart", path, 1.0, &error)) return {};
    QFile f(path);
    EXPECT_TRUE(f.open(QIODevice::ReadOnly));
    return f.readAll();
  };
  const QByteArray summary = exported(w->summary(), "summary.svg");
  EXPECT_TRUE(summary.contains("Step time: exposed communication")) << error.toStdString();
  const QByteArray buckets = exported(w->buckets(), "buckets.svg");
  EXPECT_TRUE(buckets.contains("Allreduce per bucket")) << error.toStdString();
  // The run's title line: name, source, the ranks it covers and the headline numbers (as the
  // headline bar shows them: DP efficiency with one decimal).
  for (const QByteArray* svg : {&summary, &buckets}) {
    EXPECT_TRUE(svg->contains("resnet50_ddp_rank0.json.gz [IMPORTED · 1 of 2 ranks]"));
    EXPECT_TRUE(svg->contains("overlap 15.74 %"));
    EXPECT_TRUE(svg->contains("steps 5–6; step 4 left out as warm-up"));
    EXPECT_TRUE(svg->contains("DP eff. " + w->headline()->dpEfficiencyText().toUtf8()))
        << w->headline()->dpEfficiencyText().toStdString();
  }
  // The Details tab has no chart: said, and nothing written.
  const QString none = dir.filePath("details.png");
  w->tabs()->setCurrentWidget(w->details());
  EXPECT_FALSE(w->exportView("chart", none, 1.0, &error));
  EXPECT_TRUE(error.contains("Details tab has no chart")) << error.toStdString();
  EXPECT_FALSE(QFile::exists(none));
}

TEST(UiCharts, CategoryLabelsNeverCollideAndStopAtTheLastKey) {
  app();
  for (const int last : {4, 61, 148, 2999}) {
    for (const int width : {260, 560, 1400}) {
      QCustomPlot plot;
      plot.resize(width, 300);
      setIntegerTicker(plot.xAxis, QStringLiteral("b"), last);
      setCategoryRange(plot.xAxis, 0, last, 0.7);
      plot.replot();
      const auto ticks = plot.xAxis->tickVector();
      const auto labels = plot.xAxis->tickVectorLabels();
      ASSERT_FALSE(ticks.isEmpty()) << last << " @ " << width;
      const QFontMetrics fm(plot.xAxis->tickLabelFont());
      for (int i = 0; i < ticks.size(); ++i) {
        EXPECT_LE(ticks[i], last + 0.5) << labels[i].toStdString();
        EXPECT_EQ(ticks[i], std::round(ticks[i]));  // keys are integers
        if (i == 0) continue;
        const double gap =
            plot.xAxis->coordToPixel(ticks[i]) - plot.xAxis->coordToPixel(ticks[i - 1]);
        EXPECT_GT(gap,
                  0.5 * (fm.horizontalAdvance(labels[i]) + fm.horizontalAdvance(labels[i - 1])))
            << "labels " << labels[i - 1].toStdString() << " and " << labels[i].toStdString()
            << " overlap at width " << width;
      }
      // Few keys: every one labelled when there is room.
      if (last == 4 && width >= 560) {
        EXPECT_EQ(ticks.size(), 5);
      }
    }
  }
}

TEST(UiFormats, BytesInBinaryUnitsWithThreeSignificantDigits) {
  EXPECT_EQ(formatBytes(-1), "–");
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(3072), "3.00 KiB");  // a LayerNorm bias, not "0.00 MiB"
  EXPECT_EQ(formatBytes(28'351'488), "27.0 MiB");
  EXPECT_EQ(formatBytes(8'196'000), "7.82 MiB");
  EXPECT_EQ(formatBytes(154'140'672), "147 MiB");
  EXPECT_EQ(formatBytes(std::int64_t{3} << 30), "3.00 GiB");
}

TEST(UiApp, WarningsOfTheAnalysisAreShownAsTheCliPrintsThem) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.show();
  w.openPaths({QStringLiteral(DDPSCOPE_TEST_DATA "/hostile/dur_negative.json")});
  ASSERT_TRUE(waitFor([&] { return !w.session()->runs().empty(); }));
  QApplication::processEvents();
  const QString expected =
      QStringLiteral("rank 0: 2 events with a negative or impossible duration were skipped");
  EXPECT_TRUE(w.summary()->note()->text().contains("1 warning"))
      << w.summary()->note()->text().toStdString();
  EXPECT_TRUE(w.summary()->note()->toolTip().contains(expected))
      << w.summary()->note()->toolTip().toStdString();
  EXPECT_TRUE(w.statusText().contains("1 warning: " + expected)) << w.statusText().toStdString();
  // A run without warnings says none.
  w.openPaths({QStringLiteral(DDPSCOPE_TEST_DATA "/../../resources/sample")});
  ASSERT_TRUE(waitFor([&] { return w.session()->runs().size() == 2; }));
  QApplication::processEvents();
  EXPECT_FALSE(w.summary()->note()->text().contains("warning"));
  EXPECT_TRUE(w.statusText().contains("loaded in")) << w.statusText().toStdString();
  EXPECT_FALSE(w.statusText().contains("warning")) << w.statusText().toStdString();
}

TEST(UiApp, TimelineExportOfManyRanksShowsTheFirstEightAndSaysSo) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.show();
  trace::Run run;
  for (int rank = 0; rank < 12; ++rank) {
    auto b = ddpscope::testing::twoBuckets();
    b.trace().rank = rank;
    b.trace().world_size = 12;
    run.ranks.push_back(b.build());
  }
  w.session()->addRun(prepareRun(std::move(run), {QStringLiteral("twelve")}));
  QApplication::processEvents();
  QString error;
  QByteArray svg;
  ASSERT_TRUE(w.timeline()->renderImage(ExportFormat::Svg, 1.0, &svg, &error))
      << error.toStdString();
  EXPECT_TRUE(
      svg.contains("lanes of ranks 0–7 shown (4 more below them in the app); the numbers "
                   "cover all 12"));
  EXPECT_TRUE(svg.contains("rank 7 · steps"));
  EXPECT_FALSE(svg.contains("rank 8 · steps"));
  // Eight of twelve rank groups: about two thirds of the lanes' height, plus axis and title.
  QByteArray png;
  ASSERT_TRUE(w.timeline()->renderImage(ExportFormat::Png, 1.0, &png, &error));
  const QImage image = QImage::fromData(png);
  EXPECT_LT(image.height(), w.timeline()->contentHeight() * 8 / 12 + 200);
  EXPECT_GT(image.height(), w.timeline()->contentHeight() * 8 / 12);
}

TEST(UiApp, EmptyPlotsSayWhyTheyAreEmpty) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 900);
  w.show();
  auto* timeline = w.timeline()->plot();
  auto* steps = w.summary()->chart();
  auto* buckets = w.buckets()->chart();
  // Nothing loaded.
  EXPECT_TRUE(emptyNote(timeline).contains("No run loaded")) << emptyNote(timeline).toStdString();
  EXPECT_TRUE(emptyNote(steps).contains("No run loaded"));
  EXPECT_TRUE(emptyNote(buckets).contains("No run loaded"));
  EXPECT_FALSE(timeline->xAxis2->tickLabels());  // no meaningless -1 ns .. 1 ns axis
  // A trace of host events only: no stream, no step, no bucket.
  QTemporaryDir dir;
  QFile f(dir.filePath("rank-0.json"));
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(R"({"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1,
              "tid": 1, "ts": 10, "dur": 5}]})");
  f.close();
  w.openPaths({f.fileName()});
  ASSERT_TRUE(waitFor([&] { return !w.session()->runs().empty(); }));
  QApplication::processEvents();
  EXPECT_TRUE(emptyNote(timeline).contains("No GPU activity")) << emptyNote(timeline).toStdString();
  EXPECT_TRUE(emptyNote(steps).contains("No training steps")) << emptyNote(steps).toStdString();
  // The note is wrapped to the chart's width (it was clipped on both sides beside the table).
  steps->setFixedWidth(300);
  steps->replot(QCustomPlot::rpImmediateRefresh);
  int notes = 0;
  for (int i = 0; i < steps->itemCount(); ++i) {
    if (auto* text = qobject_cast<QCPItemText*>(steps->item(i))) {
      ++notes;
      EXPECT_TRUE(text->text().contains(QLatin1Char('\n')));
      const QFontMetrics fm(text->font());
      for (const auto& line : text->text().split(QLatin1Char('\n')))
        EXPECT_LE(fm.horizontalAdvance(line), steps->axisRect()->width()) << line.toStdString();
    }
  }
  EXPECT_EQ(notes, 1);
  steps->setMinimumWidth(0);
  steps->setMaximumWidth(QWIDGETSIZE_MAX);
  EXPECT_TRUE(emptyNote(buckets).contains("No gradient buckets"));
  EXPECT_FALSE(steps->legend->visible());
  // A trace of no events at all says that, not that CUDA activities were off.
  QFile nothing(dir.filePath("empty.json"));
  ASSERT_TRUE(nothing.open(QIODevice::WriteOnly));
  nothing.write(R"({"traceEvents": []})");
  nothing.close();
  w.openPaths({nothing.fileName()});
  ASSERT_TRUE(waitFor([&] { return w.session()->runs().size() == 2; }));
  QApplication::processEvents();
  EXPECT_TRUE(emptyNote(timeline).contains("no events at all"))
      << emptyNote(timeline).toStdString();
  // The lanes take the plot's whole width: an empty legend left in the layout capped it, and
  // the note was drawn over the lane labels.
  const auto fullWidth = [](QCustomPlot* plot) {
    plot->replot(QCustomPlot::rpImmediateRefresh);
    return plot->axisRect()->outerRect().width() >= plot->width() - 2;
  };
  EXPECT_FALSE(timeline->legend->visible());
  EXPECT_TRUE(fullWidth(timeline))
      << timeline->axisRect()->outerRect().width() << " of " << timeline->width();
  // A real run: the notes go and the axes have numbers again.
  w.openPaths({kResnet});
  ASSERT_TRUE(waitFor([&] { return w.session()->runs().size() == 3; }));
  QApplication::processEvents();
  EXPECT_EQ(emptyNote(timeline), QString());
  EXPECT_EQ(emptyNote(steps), QString());
  EXPECT_EQ(emptyNote(buckets), QString());
  EXPECT_TRUE(timeline->xAxis2->tickLabels());
  EXPECT_TRUE(steps->yAxis->tickLabels());
  EXPECT_TRUE(steps->legend->visible());
  EXPECT_TRUE(timeline->legend->visible());  // back in the layout, under the lanes
  EXPECT_TRUE(fullWidth(timeline));
  EXPECT_GT(timeline->legend->outerRect().top(), timeline->axisRect()->outerRect().top());
}

TEST(UiApp, MalformedFileLeavesEarlierRunsOpen) {
  auto w = openResnet();
  QTemporaryDir dir;
  const QString bad = dir.filePath("rank-0.json");
  QFile f(bad);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(R"({"traceEvents": [{"ph": "X", "ts": "soon"})");
  f.close();
  bool failed = false;
  QObject::connect(w->loader(), &RunLoadJob::failed, [&] { failed = true; });
  w->openPaths({bad});
  ASSERT_TRUE(waitFor([&] { return failed; }));
  EXPECT_TRUE(w->lastError().contains("rank-0.json")) << w->lastError().toStdString();
  ASSERT_EQ(w->session()->runs().size(), 1u);
  EXPECT_EQ(w->session()->currentIndex(), 0);
  EXPECT_EQ(w->headline()->overlapText(), QStringLiteral("15.74 %"));
  // A missing path too.
  failed = false;
  w->openPaths({dir.filePath("does-not-exist.json.gz")});
  ASSERT_TRUE(waitFor([&] { return failed; }));
  EXPECT_EQ(w->session()->runs().size(), 1u);
}

TEST(UiApp, HoverDescribesTheEventUnderTheCursor) {
  auto w = openResnet();
  auto* qcp = w->timeline()->plot();
  const auto& b = w->session()->current()->report.ranks.front().buckets.front();
  w->session()->setViewRange({b.start_ns - 1000, b.end_ns + 1000});
  qcp->xAxis2->setRange(static_cast<double>(b.start_ns - 1000),
                        static_cast<double>(b.end_ns + 1000));
  qcp->replot();
  const LanePlottable* comm = nullptr;
  for (auto* l : w->timeline()->lanes())
    if (l->lane().kind == LaneKind::Stream && l->lane().stream == 40) comm = l;
  ASSERT_NE(comm, nullptr);
  const double x =
      qcp->xAxis2->coordToPixel(static_cast<double>(b.start_ns + (b.end_ns - b.start_ns) / 2));
  const double y = qcp->yAxis->coordToPixel((comm->top() + comm->bottom()) / 2);
  const QString text = w->timeline()->hoverText(QPointF(x, y));
  EXPECT_TRUE(text.contains("nccl")) << text.toStdString();
  EXPECT_TRUE(text.contains("stream")) << text.toStdString();
  EXPECT_TRUE(text.contains("bucket")) << text.toStdString();
  EXPECT_TRUE(text.contains("GB/s")) << text.toStdString();
}

TEST(UiApp, SimulatedRunsAreLabelledSimulated) {
  app();
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 0, 1000).comm(500, 1000);
  trace::Run run;
  run.ranks.push_back(b.build());
  run.ranks.front().ddpscope.present = true;
  run.ranks.front().ddpscope.source = "sim";
  MainWindow w;
  w.session()->addRun(prepareRun(std::move(run), {QStringLiteral("sim-run")}));
  EXPECT_EQ(w.headline()->badgeText(), QStringLiteral("SIMULATED"));
  EXPECT_TRUE(w.buckets()->noteText().contains("SIMULATED"))
      << w.buckets()->noteText().toStdString();
  EXPECT_TRUE(w.windowTitle().contains("SIMULATED"));
  EXPECT_EQ(w.headline()->overlapText(), QStringLiteral("50.00 %"));
}

TEST(UiApp, LoadingCanBeCancelledAndKeepsEarlierRuns) {
  auto w = openResnet();
  bool done = false, cancelled = false;
  QObject::connect(w->loader(), &RunLoadJob::cancelled, [&] { cancelled = true; });
  QObject::connect(w->loader(), &RunLoadJob::finished, [&] { done = true; });
  const auto before = w->session()->runs();
  w->openPaths({QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_world1_rank0.json.gz")});
  w->loader()->cancel();
  ASSERT_TRUE(waitFor([&] { return done; }));
  // A load cancelled before its result arrived is dropped, however far the worker got: the run
  // list is exactly what it was, and the status bar says so.
  EXPECT_TRUE(cancelled);
  EXPECT_EQ(w->session()->runs(), before);
  EXPECT_EQ(w->session()->currentIndex(), 0);
  EXPECT_TRUE(w->statusText().contains("cancelled")) << w->statusText().toStdString();
  EXPECT_FALSE(w->loader()->busy());
}

TEST(UiApp, SummaryRanksSortByTheNumberBehindTheText) {
  app();
  // Rank r communicates for comm[r]: as text, "2 ms" < "300 µs" < "40 µs"; as numbers the
  // reverse of that.
  const trace::TimeNs comm[] = {2'000'000, 40'000, 300'000};
  trace::Run run;
  for (int r = 0; r < 3; ++r) {
    ddpscope::testing::TraceBuilder b;
    b.kernel("gemm", 0, 5'000'000).comm(1'000'000, comm[r]);
    run.ranks.push_back(b.build());
    run.ranks.back().rank = r;
    run.ranks.back().world_size = 3;
  }
  MainWindow w;
  w.session()->addRun(prepareRun(std::move(run), {QStringLiteral("three ranks")}));
  QTableView* view = w.summary()->table();
  const QAbstractItemModel* table = view->model();
  ASSERT_EQ(table->rowCount(), 3);
  ASSERT_TRUE(view->isSortingEnabled());
  for (int r = 0; r < 3; ++r)  // by rank at first
    EXPECT_EQ(table->index(r, 0).data().toString(), QString::number(r));
  int comm_col = -1;
  for (int c = 0; c < table->columnCount(); ++c)
    if (table->headerData(c, Qt::Horizontal).toString() == QStringLiteral("comm")) comm_col = c;
  ASSERT_GE(comm_col, 0);
  view->sortByColumn(comm_col, Qt::DescendingOrder);
  EXPECT_EQ(table->index(0, 0).data().toString(), "0");  // 2 ms
  EXPECT_EQ(table->index(1, 0).data().toString(), "2");  // 300 µs
  EXPECT_EQ(table->index(2, 0).data().toString(), "1");  // 40 µs
}

// The Summary model passes Qt's model checks, and its cells are the analysis's figures: whole
// trace for overlap and comm, the run summary's per-rank figures for the step columns, kernels
// counting kernels only (not copies or syncs), and a row per rank without a trace.
TEST(UiApp, SummaryModelIsAModelOfTheAnalysisFigures) {
  app();
  MainWindow w;
  const auto run =
      loadRunBlocking({QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz")});
  ASSERT_TRUE(run.run) << run.error.toStdString();
  SummaryModel model;
  QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::Fatal);
  model.setRun(run.run);
  ASSERT_EQ(model.rowCount(), 2);  // rank 0, and rank 1 of the two-rank job: no trace
  const auto cell = [&](int row, int column) { return model.index(row, column).data().toString(); };
  EXPECT_EQ(cell(0, SummaryModel::kOverlap), QStringLiteral("15.61 %"));  // the whole file
  // Steps 5–6: (219726.905 + 224936.243) / 2 µs, exposed (10539.609 + 18856.097) / 2 µs.
  EXPECT_EQ(cell(0, SummaryModel::kStep), QStringLiteral("222 ms"));
  EXPECT_EQ(cell(0, SummaryModel::kExposedPerStep), QStringLiteral("14.7 ms"));
  EXPECT_EQ(cell(0, SummaryModel::kDpEfficiency), QStringLiteral("93.4 %"));
  // 21 communication + 2679 computation kernels; the 1074 copies are not kernels.
  EXPECT_EQ(cell(0, SummaryModel::kKernels), QLocale().toString(2700));
  EXPECT_EQ(cell(1, SummaryModel::kSource), QStringLiteral("no trace"));
  EXPECT_DOUBLE_EQ(model.index(0, SummaryModel::kComm).data(SummaryModel::kSortRole).toDouble(),
                   static_cast<double>(run.run->report.ranks[0].whole.comm_ns));
  model.setRun(nullptr);
  EXPECT_EQ(model.rowCount(), 0);
}

// Inferred buckets have no parameter list: no column of dashes, no empty pane; the table gets
// the room and shows its last column (exposed) whole.
TEST(UiApp, InferredBucketsGiveTheirParameterPaneToTheTable) {
  auto w = openResnet();
  w->resize(1600, 1000);
  QTableView* table = w->buckets()->table();
  EXPECT_TRUE(w->buckets()->noteText().contains("inferred"));
  EXPECT_TRUE(w->buckets()->params()->isHidden());
  EXPECT_TRUE(table->isColumnHidden(BucketsModel::kTensors));
  ASSERT_GT(table->model()->rowCount(), 0);
  w->tabs()->setCurrentWidget(w->buckets());
  QApplication::processEvents();
  const int right = table->columnViewportPosition(BucketsModel::kExposed) +
                    table->columnWidth(BucketsModel::kExposed);
  EXPECT_LE(right, table->viewport()->width()) << "exposed is cut off";
}

TEST(UiApp, SelectingABucketListsItsParametersAndDrawsItsFlows) {
  app();
  auto b = ddpscope::testing::twoBuckets();
  trace::Run run;
  run.ranks.push_back(b.build());
  MainWindow w;
  w.resize(1200, 800);
  w.show();
  w.session()->addRun(prepareRun(std::move(run), {QStringLiteral("two-buckets")}));
  QTableView* table = w.buckets()->table();
  ASSERT_EQ(table->model()->rowCount(), 2);
  EXPECT_FALSE(w.buckets()->noteText().contains("inferred"));
  // Select the row of bucket 0 (the table may be sorted): the session follows, params are listed.
  int row0 = -1;
  for (int r = 0; r < table->model()->rowCount(); ++r)
    if (table->model()->index(r, 2).data().toString() == "0") row0 = r;
  ASSERT_GE(row0, 0);
  table->selectRow(row0);
  ASSERT_TRUE(w.session()->selectedBucket().has_value());
  EXPECT_EQ(w.session()
                ->current()
                ->report.ranks[0]
                .buckets[static_cast<std::size_t>(w.session()->selectedBucket()->report_index)]
                .id,
            0);
  QTreeWidget* params = w.buckets()->params();
  EXPECT_FALSE(params->isHidden());  // planned buckets: their parameters are listed
  EXPECT_FALSE(table->isColumnHidden(BucketsModel::kTensors));
  ASSERT_EQ(params->topLevelItemCount(), 2);
  EXPECT_EQ(params->topLevelItem(0)->text(0), "fc2.weight");
  EXPECT_EQ(params->topLevelItem(0)->text(1), "2.86 MiB");
  // The timeline outlines the bucket and its allreduce and draws ready -> allreduce -> optimizer.
  auto* plot = w.timeline()->plot();
  int rects = 0, lines = 0;
  for (int i = 0; i < plot->itemCount(); ++i) {
    if (qobject_cast<QCPItemLine*>(plot->item(i))) ++lines;
    if (qobject_cast<QCPItemRect*>(plot->item(i)) && plot->item(i)->visible()) ++rects;
  }
  EXPECT_EQ(lines, 2);
  EXPECT_GE(rects, 3);  // bucket, allreduce, optimizer kernel
  // Esc clears it everywhere.
  QKeyEvent esc(QEvent::KeyPress, Qt::Key_Escape, Qt::NoModifier);
  QApplication::sendEvent(plot, &esc);
  EXPECT_FALSE(w.session()->selectedBucket().has_value());
}

TEST(UiApp, ClickingAKernelShowsItsDetails) {
  auto w = openResnet();
  auto* qcp = w->timeline()->plot();
  const auto& b = w->session()->current()->report.ranks.front().buckets.front();
  w->session()->setViewRange({b.start_ns - 1000, b.end_ns + 1000});
  qcp->replot();
  const LanePlottable* comm = nullptr;
  for (auto* l : w->timeline()->lanes())
    if (l->lane().kind == LaneKind::Stream && l->lane().stream == 40) comm = l;
  ASSERT_NE(comm, nullptr);
  const QPointF at(
      qcp->xAxis2->coordToPixel(static_cast<double>(b.start_ns + (b.end_ns - b.start_ns) / 2)),
      qcp->yAxis->coordToPixel((comm->top() + comm->bottom()) / 2));
  QMouseEvent press(QEvent::MouseButtonPress, at, qcp->mapToGlobal(at), Qt::LeftButton,
                    Qt::LeftButton, Qt::NoModifier);
  QApplication::sendEvent(qcp, &press);
  QMouseEvent release(QEvent::MouseButtonRelease, at, qcp->mapToGlobal(at), Qt::LeftButton,
                      Qt::NoButton, Qt::NoModifier);
  QApplication::sendEvent(qcp, &release);
  ASSERT_TRUE(w->session()->selectedEvent().has_value());
  const QString text = w->details()->text();
  EXPECT_TRUE(text.contains("nccl")) << text.toStdString();
  EXPECT_TRUE(text.contains("hidden under compute")) << text.toStdString();
  // An allreduce says which bandwidth it gives: algbw, and busbw as the Buckets table (world
  // size 2: 2(p-1)/p = 1, the same number).
  // The panel's plain text has each label on a line and its value on the next.
  const QStringList lines = text.split('\n');
  const auto value = [&](const QString& label) {
    const auto k = lines.indexOf(label);
    return k < 0 || k + 1 >= lines.size() ? QString() : lines[k + 1].trimmed();
  };
  EXPECT_TRUE(value("algbw").endsWith("GB/s")) << text.toStdString();
  EXPECT_EQ(value("busbw"), value("algbw")) << text.toStdString();
  EXPECT_EQ(value("busbw"), formatBandwidth(b.busbw_gbps));
  // One rank of two: the other's arrival is unknown, so the bandwidth is over the whole kernel,
  // and says so.
  EXPECT_EQ(b.bw_basis, analysis::BandwidthBasis::Kernel);
  EXPECT_EQ(value("bandwidth over"), "kernel time, waits included") << text.toStdString();
  EXPECT_FALSE(lines.contains("bandwidth")) << "a copy's label" << text.toStdString();
  EXPECT_EQ(w->tabs()->currentWidget(), static_cast<QWidget*>(w->details()));
}

TEST(UiApp, CopyToClipboardPutsTheTimelineImageThere) {
  auto w = openResnet();
  QApplication::clipboard()->clear();
  w->timeline()->copyToClipboard(1.0);
  const QImage image = QApplication::clipboard()->image();
  ASSERT_FALSE(image.isNull());
  EXPECT_EQ(image.width(), w->timeline()->plot()->width());
  EXPECT_GT(nonWhitePixels(image), 1000);
}

TEST(UiApp, DragPansAndShiftDragMeasuresARange) {
  auto w = openResnet();
  Session* s = w->session();
  auto* qcp = w->timeline()->plot();
  const QRect rect = qcp->axisRect()->rect();
  const double y = rect.top() + 30;
  auto mouse = [&](QEvent::Type type, double x, Qt::MouseButtons buttons,
                   Qt::KeyboardModifiers mods) {
    const QPointF p(x, y);
    QMouseEvent e(type, p, qcp->mapToGlobal(p), Qt::LeftButton, buttons, mods);
    QApplication::sendEvent(qcp, &e);
  };
  // Drag 100 px to the right: the view moves 100 px worth of time to the left.
  const TimeRange before = s->viewRange();
  const double ns_per_px = static_cast<double>(before.length()) / rect.width();
  const double x0 = rect.left() + rect.width() / 2.0;
  mouse(QEvent::MouseButtonPress, x0, Qt::LeftButton, Qt::NoModifier);
  mouse(QEvent::MouseMove, x0 + 100, Qt::LeftButton, Qt::NoModifier);
  mouse(QEvent::MouseButtonRelease, x0 + 100, Qt::NoButton, Qt::NoModifier);
  EXPECT_EQ(s->viewRange().length(), before.length());
  EXPECT_NEAR(static_cast<double>(before.lo - s->viewRange().lo), 100 * ns_per_px, 1.0);
  // Shift-drag from a quarter to the half of the plot: a selection, measured.
  qcp->xAxis2->setRange(static_cast<double>(s->viewRange().lo),
                        static_cast<double>(s->viewRange().hi));
  const double xa = rect.left() + rect.width() / 4.0, xb = rect.left() + rect.width() / 2.0;
  mouse(QEvent::MouseButtonPress, xa, Qt::LeftButton, Qt::ShiftModifier);
  mouse(QEvent::MouseMove, xb, Qt::LeftButton, Qt::ShiftModifier);
  mouse(QEvent::MouseButtonRelease, xb, Qt::NoButton, Qt::ShiftModifier);
  ASSERT_TRUE(s->selection().has_value());
  EXPECT_NEAR(static_cast<double>(s->selection()->length()), (xb - xa) * ns_per_px, 2 * ns_per_px);
  const auto overlap = s->selectionOverlap();
  ASSERT_EQ(overlap.size(), 1u);
  EXPECT_EQ(overlap.front(),
            analysis::overlapPctWithin(analysis::rankActivity(s->current()->run.ranks.front()),
                                       s->selection()->lo, s->selection()->hi));
  // F zooms to it (box zoom).
  QKeyEvent f(QEvent::KeyPress, Qt::Key_F, Qt::NoModifier);
  QApplication::sendEvent(qcp, &f);
  EXPECT_EQ(s->viewRange(), *s->selection());
}

// Closing a run frees it: no view keeps it alive (the weak pointer expires), the run list and
// the headline follow, and closing the last run leaves an empty window.
TEST(UiApp, ClosingARunFreesItAndItsViews) {
  auto w = openResnet();
  auto second = prepareRun(
      trace::loadRun({std::string(DDPSCOPE_TEST_DATA) + "/resnet50_world1_rank0.json.gz"}),
      {QStringLiteral("world1")});
  second->name = QStringLiteral("world1");
  w->session()->addRun(second);
  ASSERT_EQ(w->session()->runs().size(), 2u);
  // Every tab sees the second run once; then it is closed.
  for (int i = 0; i < w->tabs()->count(); ++i) {
    w->tabs()->setCurrentIndex(i);
    QApplication::processEvents();
  }
  std::weak_ptr<const LoadedRun> closed = second;
  second.reset();
  w->session()->closeRun(1);
  QApplication::processEvents();
  EXPECT_TRUE(closed.expired()) << "a view still holds the closed run";
  ASSERT_EQ(w->session()->runs().size(), 1u);
  EXPECT_EQ(w->session()->currentIndex(), 0);
  EXPECT_EQ(w->session()->current()->name, QStringLiteral("resnet50_ddp_rank0.json.gz"));
  EXPECT_EQ(w->headline()->overlapText(), QStringLiteral("15.74 %"));
  auto* list = w->findChild<RunListPanel*>()->list();
  EXPECT_EQ(list->count(), 1);
  // The last run: nothing current, the headline hidden, the Summary empty.
  std::weak_ptr<const LoadedRun> first = w->session()->current();
  w->session()->closeRun(0);
  QApplication::processEvents();
  // A prediction of the run still under way holds it until it ends (its result is dropped);
  // then nothing may.
  auto* sweep = w->findChild<SweepPanel*>();
  ASSERT_NE(sweep, nullptr);
  QElapsedTimer waited;
  waited.start();
  while (sweep->predictionRunning() && waited.elapsed() < 30'000)
    QApplication::processEvents(QEventLoop::AllEvents, 50);
  QApplication::processEvents();
  QCoreApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
  EXPECT_TRUE(first.expired()) << "a view still holds the last run";
  EXPECT_EQ(w->session()->currentIndex(), -1);
  EXPECT_EQ(list->count(), 0);
  EXPECT_FALSE(w->headline()->isVisibleTo(w.get()));
  EXPECT_EQ(w->summary()->table()->model()->rowCount(), 0);
}

// The Summary tab gives its per-rank table the width its columns take, the chart the rest (at
// least its minimum), on every resize, until the user moves the divider; then it stays theirs.
TEST(UiApp, SummaryTableTakesTheWidthOfItsColumnsUntilTheDividerIsMoved) {
  auto w = openResnet();
  w->tabs()->setCurrentWidget(w->summary());
  QApplication::processEvents();
  QTableView* table = w->summary()->table();
  QCustomPlot* chart = w->summary()->chart();
  // The tables (per rank, per collective kind) on the left of the divider, the chart right.
  auto* split = qobject_cast<QSplitter*>(chart->parentWidget());
  ASSERT_NE(split, nullptr);
  ASSERT_TRUE(split->isAncestorOf(table));
  // What the columns take: every column, the frame and a vertical scroll bar's room.
  const auto wanted = [&] {
    return table->horizontalHeader()->length() + 2 * table->frameWidth() +
           table->verticalScrollBar()->sizeHint().width();
  };
  // Window widths where the columns fit beside the chart's minimum with room to spare, and
  // where they do not, whatever the fonts make of the columns.
  const int around = w->width() - split->width() + split->handleWidth();
  const int fit = around + wanted() + chart->minimumWidth();
  int fitted = 0, squeezed = 0;
  for (int width : {fit + 300, fit + 800, fit - 150}) {
    w->resize(width, 900);
    QApplication::processEvents();
    const int total = split->width() - split->handleWidth();
    SCOPED_TRACE(std::to_string(width) + ": table " + std::to_string(table->width()) +
                 ", columns " + std::to_string(wanted()) + ", room " + std::to_string(total));
    if (total - wanted() >= chart->minimumWidth()) {
      ++fitted;
      EXPECT_NEAR(table->width(), wanted(), 2);  // the columns whole, the chart the rest
      EXPECT_EQ(table->horizontalScrollBar()->maximum(), 0);
    } else {
      ++squeezed;
      EXPECT_NEAR(chart->width(), chart->minimumWidth(), 2);  // the chart keeps its minimum
    }
  }
  EXPECT_EQ(fitted, 2);
  EXPECT_EQ(squeezed, 1);
  // The user drags the divider far left: no refit after it, whatever the window's size (the
  // splitter only scales the panes with the window).
  w->resize(fit + 300, 900);
  QApplication::processEvents();
  split->setSizes({200, split->width() - 200 - split->handleWidth()});
  emit split->splitterMoved(200, 1);
  w->resize(fit + 800, 900);
  QApplication::processEvents();
  EXPECT_LT(table->width(), wanted() / 2) << table->width();
}
