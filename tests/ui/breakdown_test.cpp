// The Steps tab (where each step's time went) and the headline's idle reading on the ResNet-50
// reference, and everyday habits of the window: the timeline's divider remembered, a run opened
// twice shown instead of loaded again, `--compare A B`, the dark theme on every chart, a binary
// file refused as no trace.
#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QScopeGuard>
#include <QSettings>
#include <QSplitter>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <memory>

#include "app/ui/app_settings.h"
#include "app/ui/breakdown_panel.h"
#include "app/ui/compare_panel.h"
#include "app/ui/headline_bar.h"
#include "app/ui/main_window.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/session.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {

const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");
const QString kWorld1 = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_world1_rank0.json.gz");

std::unique_ptr<MainWindow> openWindow(const QStringList& paths) {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(1500, 950);
  w->show();
  if (!paths.isEmpty()) {
    w->openPaths(paths);
    EXPECT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  }
  return w;
}

QCPBars* barsOf(QCustomPlot* chart, int k) {
  return qobject_cast<QCPBars*>(chart->plottable(k));
}

}  // namespace

TEST(StepsTab, EachStepsBarStacksItsPartsUpToItsStepTime) {
  auto w = openWindow({kResnet});
  auto* p = w->breakdownPanel();
  ASSERT_EQ(p->rows().size(), 3u);
  // One rank: nothing matched across ranks, so exposed communication is not split; the trace has
  // launches, so the idle time is.
  EXPECT_EQ(p->seriesNames(),
            QStringList({"compute", "hidden communication", "exposed communication",
                         "memory (copies, sets)", "other kernels", "idle: launch pending",
                         "idle: data loader", "idle: host-bound"}));
  // The reference's step times (ms), and step 4's host-bound idle time computed from the file by
  // a separate script: idle 173.003270 ms − launch pending 10.553622 ms.
  const double kStepMs[] = {222.442191, 219.726905, 224.936243};
  QCustomPlot* chart = p->chart();
  ASSERT_EQ(chart->plottableCount(), 8);
  // Every step's bar is named on the axis (not every other one).
  const auto steps_axis = chart->xAxis->ticker().dynamicCast<QCPAxisTickerText>();
  ASSERT_TRUE(steps_axis);
  EXPECT_EQ(steps_axis->ticks().keys(), QList<double>({4, 5, 6}));
  for (int i = 0; i < 3; ++i) {
    double sum = 0;
    for (int k = 0; k < chart->plottableCount(); ++k)
      sum += barsOf(chart, k)->data()->at(i)->value;
    EXPECT_NEAR(sum, kStepMs[i], 1e-6) << i;
  }
  EXPECT_NEAR(barsOf(chart, 7)->data()->at(0)->value, 162.449648, 1e-6);
  EXPECT_NEAR(barsOf(chart, 5)->data()->at(0)->value, 10.553622, 1e-6);
  const QString hover = p->rowText(0);
  EXPECT_TRUE(hover.startsWith(QStringLiteral("step 4 · 222 ms"))) << hover.toStdString();
  EXPECT_TRUE(hover.contains(QStringLiteral("idle: host-bound: 162 ms"))) << hover.toStdString();
  EXPECT_TRUE(hover.contains(QStringLiteral("idle: launch pending: 10.6 ms")))
      << hover.toStdString();

  // Clicking step 5's bar zooms the timeline to step 5.
  w->tabs()->setCurrentWidget(p);
  ASSERT_TRUE(waitFor([&] { return chart->isVisible(); }));
  chart->replot();
  const QPoint on5(static_cast<int>(chart->xAxis->coordToPixel(5)),
                   static_cast<int>(chart->yAxis->coordToPixel(100)));
  EXPECT_EQ(p->rowAt(on5), 1);
  EXPECT_EQ(p->rowAt(QPoint(on5.x(), static_cast<int>(chart->yAxis->coordToPixel(235)))), -1);
  const auto before = w->session()->viewRange();
  QTest::mouseClick(chart, Qt::LeftButton, {}, on5);
  const auto v = w->session()->viewRange();
  const auto& step5 = w->session()->current()->report.ranks[0].steps[1];
  ASSERT_EQ(step5.step, 5);
  EXPECT_LE(v.lo, step5.start_ns);
  EXPECT_GE(v.hi, step5.start_ns + step5.dur_ns);
  EXPECT_LT(v.length(), before.length());
  EXPECT_LT(v.length(), 2 * step5.dur_ns);

  // The tab as it looks, for the docs, and its chart exported with the run's title.
  QByteArray png;
  QString error;
  ASSERT_TRUE(renderWidget(w.get(), ExportFormat::Png, 1.0, &png, &error)) << error.toStdString();
  QFile shot(QDir::temp().filePath(QStringLiteral("ddpscope-steps-tab.png")));
  ASSERT_TRUE(shot.open(QIODevice::WriteOnly));
  shot.write(png);
  shot.close();
  const QString chart_file = QDir::temp().filePath(QStringLiteral("ddpscope-steps-chart.png"));
  ASSERT_TRUE(p->exportChart(chart_file, 1.0, &error)) << error.toStdString();
  EXPECT_GT(QFileInfo(chart_file).size(), 5000);
}

TEST(StepsTab, HeadlineReadsTheIdleTime) {
  auto w = openWindow({kResnet});
  // GPU idle 75.7 % of the steps used (the run summary's figure); of the idle time 93.9 % had no
  // launch pending (the separate script's figures above): mostly host-bound.
  EXPECT_EQ(w->headline()->gpuIdleText(), QStringLiteral("75.7 %"));
  EXPECT_EQ(w->headline()->readingText(),
            QStringLiteral("GPU idle 75.7 %: mostly host-bound (no launch pending)"));
}

TEST(WindowHabits, TheTimelinesDividerIsRememberedAndTheTimelineGrowsWithTheWindow) {
  app();
  // A settings file of this process only (ctest runs the UI tests in parallel processes); the
  // environment is put back as it was however the test ends.
  static QTemporaryDir settings_dir;
  const QString ini = settings_dir.filePath(QStringLiteral("ddpscope.ini"));
  const QByteArray previous = qgetenv("DDPSCOPE_SETTINGS");
  const bool had_previous = qEnvironmentVariableIsSet("DDPSCOPE_SETTINGS");
  qputenv("DDPSCOPE_SETTINGS", ini.toLocal8Bit());
  const auto restore = qScopeGuard([&] {
    settings::setCentreSplitterState({});
    if (had_previous)
      qputenv("DDPSCOPE_SETTINGS", previous);
    else
      qunsetenv("DDPSCOPE_SETTINGS");
  });
  settings::setCentreSplitterState({});
  // What the user's own settings hold, read only: the test must leave it as it is.
  const QVariant users_own = QSettings(QStringLiteral("ddpscope"), QStringLiteral("ddpscope"))
                                 .value(QStringLiteral("centreSplitter"));
  {
    auto w = openWindow({});
    QSplitter* split = w->centreSplitter();
    ASSERT_TRUE(waitFor([&] { return split->height() > 600; }));
    const int total = split->sizes()[0] + split->sizes()[1];
    split->setSizes({total / 4, total - total / 4});
    emit split->splitterMoved(total / 4, 1);  // what dragging the divider says
  }
  // The divider went to the file DDPSCOPE_SETTINGS names, not to the user's own settings.
  EXPECT_FALSE(QSettings(ini, QSettings::IniFormat)
                   .value(QStringLiteral("centreSplitter"))
                   .toByteArray()
                   .isEmpty());
  EXPECT_EQ(QSettings(QStringLiteral("ddpscope"), QStringLiteral("ddpscope"))
                .value(QStringLiteral("centreSplitter")),
            users_own);
  auto w = openWindow({});
  QSplitter* split = w->centreSplitter();
  ASSERT_TRUE(waitFor([&] { return split->height() > 600; }));
  const int total = split->sizes()[0] + split->sizes()[1];
  EXPECT_NEAR(split->sizes()[0], total / 4, 3);
  // Loading a run keeps the place the user chose: the tabs keep their height (the timeline gives
  // up what the headline's second line takes).
  const int tabs = split->sizes()[1];
  w->openPaths({kResnet});
  ASSERT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  EXPECT_NEAR(split->sizes()[1], tabs, 10);  // give or take the timeline's minimum height
  // A taller window gives the new height to the timeline.
  const QList<int> before = split->sizes();
  w->resize(1500, 1350);
  ASSERT_TRUE(waitFor([&] { return split->sizes()[0] + split->sizes()[1] > total + 300; }));
  const int grown = split->sizes()[0] + split->sizes()[1] - before[0] - before[1];
  EXPECT_GE(split->sizes()[0] - before[0], grown * 9 / 10);
  EXPECT_NEAR(split->sizes()[1], before[1], 10);
}

TEST(WindowHabits, ARunOpenedAgainIsShownNotLoadedTwice) {
  auto w = openWindow({kResnet});
  w->openPaths({kWorld1});
  ASSERT_TRUE(waitFor([&] { return w->session()->runs().size() == 2; }));
  ASSERT_EQ(w->session()->currentIndex(), 1);
  // The same file again, by another spelling of its path.
  w->openPaths({QDir(QStringLiteral(DDPSCOPE_TEST_DATA "/.."))
                    .filePath(QStringLiteral("data/resnet50_ddp_rank0.json.gz"))});
  QTest::qWait(200);
  EXPECT_EQ(w->session()->runs().size(), 2u);
  EXPECT_EQ(w->session()->currentIndex(), 0);
  EXPECT_TRUE(w->statusText().contains(QStringLiteral("already open")))
      << w->statusText().toStdString();
  EXPECT_EQ(w->openRunIndex({kWorld1}), 1);
  EXPECT_EQ(w->openRunIndex({kResnet, kWorld1}), -1);
}

TEST(WindowHabits, CompareOpensBothRunsInTheCompareTab) {
  auto w = openWindow({});
  w->openForComparison(kResnet, kWorld1);
  ASSERT_TRUE(waitFor([&] {
    return w->session()->runs().size() == 2 && w->tabs()->currentWidget() == w->comparePanel();
  }));
  ASSERT_TRUE(w->comparePanel()->runA() && w->comparePanel()->runB());
  EXPECT_EQ(w->comparePanel()->runA()->paths, QStringList{kResnet});
  EXPECT_EQ(w->comparePanel()->runB()->paths, QStringList{kWorld1});
  // Both open already: nothing is loaded again, the order is the one asked for.
  w->tabs()->setCurrentIndex(0);
  w->openForComparison(kWorld1, kResnet);
  ASSERT_TRUE(waitFor([&] { return w->tabs()->currentWidget() == w->comparePanel(); }));
  EXPECT_EQ(w->session()->runs().size(), 2u);
  EXPECT_EQ(w->comparePanel()->runA()->paths, QStringList{kWorld1});
}

TEST(WindowHabits, TheDarkThemeReachesEveryChartAndGoesBack) {
  auto w = openWindow({kResnet});
  const QColor system_base = QApplication::palette().color(QPalette::Base);
  applyAppTheme(QStringLiteral("dark"));
  const QPalette pal = QApplication::palette();
  EXPECT_EQ(pal.color(QPalette::Base), colours::kDarkThemeBase);
  EXPECT_EQ(pal.color(QPalette::ToolTipBase), colours::kDarkThemeButton);
  EXPECT_EQ(pal.color(QPalette::ToolTipText), colours::kDarkThemeText);
  EXPECT_NE(pal.color(QPalette::Disabled, QPalette::Text), colours::kDarkThemeText);
  const auto plots = w->findChildren<QCustomPlot*>();
  ASSERT_GE(plots.size(), 5);
  for (QCustomPlot* plot : plots) {
    EXPECT_EQ(plot->axisRect()->backgroundBrush().color(), colours::kDarkThemeBase)
        << plot->parentWidget()->metaObject()->className();
    EXPECT_EQ(plot->xAxis->tickLabelColor(), colours::kDarkThemeText);
  }
  applyAppTheme(QStringLiteral("system"));
  EXPECT_EQ(QApplication::palette().color(QPalette::Base), system_base);
  EXPECT_EQ(w->breakdownPanel()->chart()->axisRect()->backgroundBrush().color(), system_base);
}

TEST(WindowHabits, ABinaryFileIsNotATrace) {
  auto w = openWindow({});
  w->openPaths({QStringLiteral(DDPSCOPE_TEST_DATA "/../../docs/screenshots/compare.png")});
  ASSERT_TRUE(waitFor([&] { return !w->lastError().isEmpty(); }));
  EXPECT_TRUE(w->lastError().contains(QStringLiteral("not a trace (binary content)")))
      << w->lastError().toStdString();
  EXPECT_TRUE(w->session()->runs().empty());
}
