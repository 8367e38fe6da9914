// The Sweep tab's predicted U-curve (docs/UI.md "Sweep", docs/WHATIF.md), headless: for the run
// selected in the session, whatever made it, the panel predicts the step time at the sweep's
// sizes off the GUI thread, draws one predicted point per size with its band, marks the recorded
// configuration and states the recommendation with the figures analysis::predictWhatIf and
// analysis::recommendWhatIf give for the same run; a run without communication gets the
// predictor's note instead of a curve; a prediction for a run no longer selected is never shown.
#include <gtest/gtest.h>

#include <qcustomplot.h>

#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFileInfo>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QListWidget>
#include <QProcess>
#include <QPushButton>
#include <QTemporaryDir>
#include <QThreadPool>
#include <QTimer>
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "app/analysis/report_json.h"
#include "app/analysis/sweep.h"
#include "app/analysis/whatif.h"
#include "app/analysis/whatif_summary.h"
#include "app/ui/compare_panel.h"
#include "app/ui/main_window.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"
#include "app/ui/prediction_job.h"
#include "app/ui/run_list_panel.h"
#include "app/ui/run_load_job.h"
#include "app/ui/session.h"
#include "app/ui/sweep_panel.h"
#include "app/ui/timeline_view.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");
const QString kResnetOneRank = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_world1_rank0.json.gz");

std::shared_ptr<LoadedRun> load(const QStringList& paths) {
  app();
  RunLoadResult r = loadRunBlocking(paths);
  EXPECT_TRUE(r.run) << r.error.toStdString();
  return r.run;
}

// What the analysis predicts for the run on its own: the same rules, the sweep's sizes.
analysis::WhatIfResult expectedWhatIf(const LoadedRun& run) {
  analysis::AnalysisOptions options;
  options.rules = run.rules;
  std::vector<analysis::RankActivity> activities;
  const auto report = analysis::analyzeRun(run.run, options, &activities);
  return analysis::predictWhatIf(
      run.run, report, activities,
      analysis::whatIfSweepConfigs(analysis::defaultSweepSizes(), analysis::whatIfBase(run.run)));
}

// The report's predicted figure (the Sweep tab's chart off-screen): pixels of the predicted band's
// fill (kPredictedBand over white) and of the predicted curve's colour in the plot area, below the
// PREDICTED badge (its frame has the curve's colour) and above the legend (its swatches).
struct FigurePixels {
  int band = 0, curve = 0;
};
FigurePixels predictedPixels(const QImage& img) {
  const QColor band = colours::kPredictedBand;
  const double a = band.alphaF();
  const auto over_white = [&](int c) {
    return static_cast<int>(std::lround(c * a + 255 * (1 - a)));
  };
  const QColor band_on_white(over_white(band.red()), over_white(band.green()),
                             over_white(band.blue()));
  const auto near = [](QRgb p, const QColor& c, int tol) {
    return std::abs(qRed(p) - c.red()) <= tol && std::abs(qGreen(p) - c.green()) <= tol &&
           std::abs(qBlue(p) - c.blue()) <= tol;
  };
  FigurePixels n;
  const QImage rgb = img.convertToFormat(QImage::Format_RGB32);
  for (int y = rgb.height() / 8; y < rgb.height() * 3 / 4; ++y)
    for (int x = 0; x < rgb.width(); ++x) {
      const QRgb p = rgb.pixel(x, y);
      n.band += near(p, band_on_white, 3);
      n.curve += near(p, colours::kPredicted, 3);
    }
  return n;
}
constexpr int kBandPixels = 2000, kCurvePixels = 150;  // ResNet-50: about 20000 and 450

// A PNG of a chart's size that shows the band and the curve: a blank or empty chart fails.
void checkPredictedFigure(const QString& path) {
  QImage img(path);
  ASSERT_FALSE(img.isNull()) << path.toStdString();
  EXPECT_GE(img.width(), 900);
  EXPECT_GE(img.height(), 450);
  const auto n = predictedPixels(img);
  EXPECT_GT(n.band, kBandPixels) << "no predicted band in " << path.toStdString();
  EXPECT_GT(n.curve, kCurvePixels) << "no predicted curve in " << path.toStdString();
}

struct Panel {
  Session session;
  SweepPanel panel{&session, [] { return RunParameters{}; }};
  Panel() {
    panel.resize(1100, 640);
    panel.show();
  }
  bool waitForPrediction() {
    return waitFor([&] { return panel.prediction() && !panel.predictionPending(); }, 120000);
  }
};

// The curve's and the band's values, in chart order.
std::vector<double> values(QCPCurve* c) {
  std::vector<double> out;
  for (auto it = c->data()->constBegin(); it != c->data()->constEnd(); ++it)
    out.push_back(it->value);
  return out;
}
std::vector<double> keys(QCPCurve* c) {
  std::vector<double> out;
  for (auto it = c->data()->constBegin(); it != c->data()->constEnd(); ++it)
    out.push_back(it->key);
  return out;
}

// The predicted curve of `run` in the panel against the analysis's own prediction.
void checkCurve(Panel& f, const LoadedRun& run, const analysis::WhatIfResult& expected) {
  const auto sizes = analysis::defaultSweepSizes();
  ASSERT_TRUE(expected.model.usable);
  const std::size_t predictable =
      sizes.size() - (expected.model.per_tensor_known
                          ? 0
                          : static_cast<std::size_t>(std::count(sizes.begin(), sizes.end(), 0.0)));
  // One point per sweep size the run can predict, at that size, with the analysis's value.
  QCPCurve* curve = f.panel.predictedCurve();
  ASSERT_EQ(static_cast<std::size_t>(curve->dataCount()), predictable);
  ASSERT_EQ(expected.predictions.size(), predictable);
  const auto xs = keys(curve), ys = values(curve);
  for (std::size_t i = 0; i < predictable; ++i) {
    const auto& p = expected.predictions[i];  // in the order of the sizes, ascending
    EXPECT_DOUBLE_EQ(xs[i], f.panel.chartX(p.config.bucket_mb)) << i;
    EXPECT_DOUBLE_EQ(ys[i], p.step_us / 1e3) << i;
  }
  for (double s : sizes)
    if (s > 0) {
      EXPECT_NE(std::find(xs.begin(), xs.end(), s), xs.end()) << s << " MiB not drawn";
    }
  // The band: lows left to right then highs right to left, around the curve.
  QCPCurve* band = f.panel.predictedBand();
  ASSERT_EQ(static_cast<std::size_t>(band->dataCount()), 2 * predictable);
  const auto bs = values(band);
  for (std::size_t i = 0; i < predictable; ++i) {
    EXPECT_DOUBLE_EQ(bs[i], expected.predictions[i].step_us_low / 1e3);
    EXPECT_DOUBLE_EQ(bs[2 * predictable - 1 - i], expected.predictions[i].step_us_high / 1e3);
    EXPECT_LE(bs[i], ys[i]);
    EXPECT_GE(bs[2 * predictable - 1 - i], ys[i]);
  }
  // The predicted best is one filled point at its size, named in the legend; every host-bound
  // size has its square, and no other size does.
  QCPCurve* best = f.panel.predictedBestCurve();
  ASSERT_TRUE(expected.best);
  ASSERT_EQ(best->dataCount(), 1);
  EXPECT_DOUBLE_EQ(keys(best).front(),
                   f.panel.chartX(expected.predictions[*expected.best].config.bucket_mb));
  // Named by its mark, as the CLI's table and the report mark it.
  const auto mark = analysis::predictionMark(analysis::recommendWhatIf(expected), *expected.best);
  ASSERT_TRUE(mark.rfind("predicted ", 0) == 0) << mark;
  EXPECT_TRUE(best->name().startsWith(QString::fromStdString(mark + " (")))
      << best->name().toStdString();
  const auto host_bound =
      static_cast<int>(std::count_if(expected.predictions.begin(), expected.predictions.end(),
                                     [](const auto& p) { return p.host_bound; }));
  EXPECT_EQ(f.panel.hostBoundCurve()->dataCount(), host_bound);
  EXPECT_EQ(f.panel.chart()->legend->hasItemWithPlottable(f.panel.hostBoundCurve()),
            host_bound > 0);
  // The recorded step is the run summary's, as every other view shows it.
  EXPECT_NEAR(expected.base_step_us, static_cast<double>(run.summary.step_ns) / 1e3, 1e-3);
  QCPCurve* recorded = f.panel.recordedCurve();
  ASSERT_GT(recorded->dataCount(), 0);
  for (double v : values(recorded))
    EXPECT_DOUBLE_EQ(v, expected.base_step_us / 1e3);
  if (expected.base_bucket_mb) {
    ASSERT_EQ(recorded->dataCount(), 1);
    EXPECT_DOUBLE_EQ(keys(recorded).front(), f.panel.chartX(*expected.base_bucket_mb));
  } else {
    EXPECT_EQ(recorded->dataCount(), 2);  // a line across the chart at the recorded step
    EXPECT_TRUE(recorded->name().contains(QStringLiteral("not in the trace")));
  }
  // Every series of the prediction is labelled so in the legend; the curve is dashed.
  for (QCPCurve* c : {curve, band})
    EXPECT_TRUE(c->name().contains(QStringLiteral("predicted"))) << c->name().toStdString();
  EXPECT_TRUE(f.panel.chart()->legend->hasItemWithPlottable(curve));
  EXPECT_TRUE(f.panel.chart()->legend->hasItemWithPlottable(band));
  EXPECT_EQ(curve->pen().style(), Qt::DashLine);
  EXPECT_TRUE(emptyNote(f.panel.chart()).isEmpty());
  // The sentence: the analysis's recommendation, naming its size and its figures.
  const auto rec = analysis::recommendWhatIf(expected);
  ASSERT_TRUE(rec.has_value());
  const QString text = f.panel.predictionText();
  EXPECT_EQ(text.toStdString(), rec->text);
  EXPECT_TRUE(text.startsWith(QStringLiteral("Predicted: ")));
  EXPECT_TRUE(text.contains(QString::fromStdString(analysis::bucketSizeText(rec->bucket_mb))));
  const auto us = [](double v) {
    return QString::fromStdString(
        analysis::formatDuration(static_cast<trace::TimeNs>(std::llround(v * 1e3))));
  };
  EXPECT_TRUE(text.contains(QStringLiteral("would take %1 per step").arg(us(rec->step_us))));
  EXPECT_TRUE(text.contains(QStringLiteral("the recorded %1").arg(us(expected.base_step_us))));
  // Its band, or why it has none (never a "±0.0 %", which would read as an exact prediction).
  if (const auto why = analysis::noBandReason(expected.predictions[rec->prediction])) {
    EXPECT_TRUE(text.contains(QStringLiteral("(%1)").arg(QString::fromStdString(*why))))
        << text.toStdString();
    EXPECT_FALSE(text.contains(QStringLiteral("±"))) << text.toStdString();
  } else if (QStringLiteral("%1").arg(rec->band_pct, 0, 'f', 1) == QStringLiteral("0.0")) {
    EXPECT_TRUE(text.contains(QStringLiteral("(a band under ±0.05 %)"))) << text.toStdString();
  } else {
    EXPECT_TRUE(text.contains(QStringLiteral("(±%1 %").arg(rec->band_pct, 0, 'f', 1)));
  }
  // The best is the fastest predicted size.
  for (const auto& p : expected.predictions)
    EXPECT_GE(p.step_us, rec->step_us);
}

// Keeps a picture of the panel when DDPSCOPE_TEST_PNGS names a folder (nothing is written
// otherwise: the tests leave no files behind).
void save(QWidget* w, const char* name) {
  QApplication::processEvents();
  const QByteArray dir = qgetenv("DDPSCOPE_TEST_PNGS");
  if (dir.isEmpty()) return;
  const QString path = QDir(QString::fromLocal8Bit(dir)).filePath(QString::fromUtf8(name));
  EXPECT_TRUE(w->grab().save(path));
  std::printf("rendered %s\n", qPrintable(path));
}
}  // namespace

TEST(SweepPrediction, ImportedPyTorchTrace) {
  auto run = load({kResnet});
  ASSERT_TRUE(run);
  Panel f;
  EXPECT_FALSE(f.panel.prediction());
  f.session.addRun(run);
  // Computed off the GUI thread: nothing is delivered before the event loop runs.
  EXPECT_TRUE(f.panel.predictionPending());
  EXPECT_FALSE(f.panel.prediction());
  EXPECT_TRUE(f.panel.predictionText().startsWith(QStringLiteral("Predicting")));
  ASSERT_TRUE(f.waitForPrediction());
  ASSERT_EQ(f.panel.prediction()->run, run);
  ASSERT_TRUE(f.panel.prediction()->error.isEmpty()) << f.panel.prediction()->error.toStdString();
  const auto expected = expectedWhatIf(*run);
  // An imported trace: bucket sizes inferred from its allreduce kernels, no parameter list, so
  // per tensor is left out and the notes say so.
  EXPECT_FALSE(expected.model.per_tensor_known);
  EXPECT_TRUE(f.panel.predictionNotes().contains(
      QStringLiteral("one allreduce per tensor (bucket size 0) left out")))
      << f.panel.predictionNotes().toStdString();
  // Host-bound above 1 MiB with no band there: the reason is given once, with every size it
  // holds for, not for the first of them alone.
  const auto reasons = analysis::noBandReasons(expected);
  ASSERT_FALSE(reasons.empty());
  for (const auto& why : reasons) {
    QStringList at;
    for (const auto& p : expected.predictions)
      if (analysis::noBandReason(p) == why)
        at << QString::fromStdString(analysis::bucketSizeText(p.config.bucket_mb));
    EXPECT_GE(at.size(), 2);
    const QString line = QStringLiteral("No band at %1: %2")
                             .arg(at.join(QStringLiteral(", ")), QString::fromStdString(why));
    EXPECT_EQ(f.panel.predictionNotes().count(QString::fromStdString(why)), 1)
        << f.panel.predictionNotes().toStdString();
    EXPECT_TRUE(f.panel.predictionNotes().contains(line))
        << f.panel.predictionNotes().toStdString();
  }
  checkCurve(f, *run, expected);
  save(&f.panel, "sweep_prediction_resnet50.png");
  // The chart exports in the light theme with the prediction on it.
  QByteArray png;
  QString error;
  ASSERT_TRUE(f.panel.renderChart(ExportFormat::Png, 1, &png, &error)) << error.toStdString();
  EXPECT_GT(png.size(), 20000);
  EXPECT_EQ(f.panel.predictedCurve()->dataCount(), static_cast<int>(expected.predictions.size()));
  // The legend fits the width a figure is rendered at, in the render's own replots too (fitted
  // to a wide window, it was cut off in a figure 900 pixels wide).
  QCustomPlot* chart = f.panel.chart();
  f.panel.resize(1800, 700);
  chart->replot();
  const int wide = chart->legend->wrap();
  {
    const LegendRenderWidth narrow(chart, 520);
    chart->replot();
    EXPECT_GT(chart->legend->itemCount(), 3);
    EXPECT_LT(chart->legend->wrap(), wide);
  }
  chart->replot();
  EXPECT_EQ(chart->legend->wrap(), wide);
}

TEST(SweepPrediction, AgentRunWithBucketMetadata) {
  auto run = load({QStringLiteral(DDPSCOPE_SAMPLE_DIR)});
  ASSERT_TRUE(run);
  Panel f;
  f.session.addRun(run);
  ASSERT_TRUE(f.waitForPrediction());
  const auto expected = expectedWhatIf(*run);
  // ddpscope's own trace: every size including per tensor, the recorded cap known and marked.
  EXPECT_TRUE(expected.model.per_tensor_known);
  ASSERT_TRUE(expected.base_bucket_mb.has_value());
  checkCurve(f, *run, expected);
  EXPECT_EQ(f.panel.chartX(0), f.panel.predictedCurve()->data()->constBegin()->key);
  save(&f.panel, "sweep_prediction_sample.png");
}

TEST(SweepPrediction, RunWithoutCommunicationShowsTheNote) {
  auto run = load({kResnetOneRank});
  ASSERT_TRUE(run);
  Panel f;
  f.session.addRun(run);
  ASSERT_TRUE(f.waitForPrediction());
  const auto expected = expectedWhatIf(*run);
  ASSERT_FALSE(expected.model.usable);
  ASSERT_FALSE(expected.notes.empty());
  EXPECT_FALSE(f.panel.prediction()->recommendation.has_value());
  // No curve, no band, no recorded mark: the predictor's note instead, on the chart a pointer.
  EXPECT_EQ(f.panel.predictedCurve()->dataCount(), 0);
  EXPECT_EQ(f.panel.predictedBand()->dataCount(), 0);
  EXPECT_EQ(f.panel.recordedCurve()->dataCount(), 0);
  EXPECT_FALSE(f.panel.chart()->legend->hasItemWithPlottable(f.panel.predictedCurve()));
  const QString text = f.panel.predictionText();
  EXPECT_TRUE(text.startsWith(QStringLiteral("No prediction for this run")));
  for (const auto& n : expected.notes)
    EXPECT_TRUE(text.contains(QString::fromStdString(n))) << text.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("one rank")));
  EXPECT_FALSE(emptyNote(f.panel.chart()).isEmpty());
  save(&f.panel, "sweep_prediction_one_rank.png");
}

TEST(SweepPrediction, OnlyTheSelectedRunsPredictionIsShown) {
  auto resnet = load({kResnet});
  auto one_rank = load({kResnetOneRank});
  ASSERT_TRUE(resnet && one_rank);
  Panel f;
  f.session.addRun(resnet);
  f.session.addRun(one_rank);  // current: its prediction replaces ResNet-50's, which is dropped
  f.session.setCurrent(0);     // and back: the one-rank prediction must never show
  ASSERT_TRUE(f.waitForPrediction());
  EXPECT_EQ(f.panel.prediction()->run, resnet);
  // Wait for every start to finish: the late one-rank result is not taken.
  QThreadPool::globalInstance()->waitForDone();
  QApplication::processEvents();
  EXPECT_EQ(f.panel.prediction()->run, resnet);
  EXPECT_GT(f.panel.predictedCurve()->dataCount(), 0);
  // Closing the run clears the curve.
  f.session.closeRun(1);
  f.session.closeRun(0);
  QApplication::processEvents();
  EXPECT_FALSE(f.panel.prediction());
  EXPECT_EQ(f.panel.predictedCurve()->dataCount(), 0);
}

// "Open prediction as run": the predicted size becomes a run of the session (made off the GUI
// thread), listed with its PREDICTED badge, whose figures are the prediction's, shown by the
// timeline and by Compare beside the recorded run. The views are written to PNG files
// (DDPSCOPE_TEST_PNGS names the folder) to be looked at.
TEST(SweepPredictionRun, PredictedSizeOpensAsARunBesideTheRecordedOne) {
  const auto run = load({kResnet});
  ASSERT_TRUE(run);
  Panel f;
  RunListPanel list(&f.session);
  ComparePanel compare(&f.session);
  TimelineView timeline(&f.session);
  compare.resize(1200, 700);
  timeline.resize(1400, 500);
  f.session.addRun(run);
  ASSERT_TRUE(f.waitForPrediction());
  auto* box = f.panel.openSizeBox();
  const int at = box->findData(100.0);
  ASSERT_GE(at, 0);
  box->setCurrentIndex(at);
  EXPECT_TRUE(f.panel.openPredictionButton()->isEnabled());
  std::shared_ptr<const LoadedRun> opened;
  bool done = false;
  QObject::connect(&f.panel, &SweepPanel::predictionOpened,
                   [&](std::shared_ptr<const LoadedRun> r) {
                     opened = std::move(r);
                     done = true;
                   });
  // The pictures go to DDPSCOPE_TEST_PNGS when it names a folder, else to a folder removed after.
  QTemporaryDir scratch;
  const QString dir = qEnvironmentVariableIsSet("DDPSCOPE_TEST_PNGS")
                          ? qEnvironmentVariable("DDPSCOPE_TEST_PNGS")
                          : scratch.path();
  f.panel.grab().save(QDir(dir).filePath("predicted-sweep.png"));
  // The prediction opened (the panel then turns to the new current run: a predicted run is
  // not predicted again).
  const auto prediction = f.panel.prediction();
  f.panel.openPredictionButton()->click();
  EXPECT_TRUE(f.panel.openingPrediction());
  ASSERT_TRUE(waitFor([&] { return done; }, 120000));
  ASSERT_TRUE(opened) << f.panel.openError().toStdString();
  ASSERT_EQ(f.session.runs().size(), 2u);
  EXPECT_EQ(f.session.runs()[1], opened);
  EXPECT_EQ(f.session.current(), opened);
  EXPECT_EQ(opened->name, run->name + QStringLiteral(" predicted at 100 MiB"));
  EXPECT_EQ(opened->source(), "predicted");
  // The run list names it with its badge.
  ASSERT_EQ(list.list()->count(), 2);
  EXPECT_TRUE(list.list()->item(1)->text().contains(QStringLiteral("PREDICTED")))
      << list.list()->item(1)->text().toStdString();
  EXPECT_TRUE(list.list()->item(1)->text().contains(opened->name));
  // Its figures are the prediction's (analysis::predictedRun's equality, through the app).
  const auto& preds = prediction->whatif.predictions;
  const auto p = std::find_if(preds.begin(), preds.end(), [](const analysis::Prediction& x) {
    return x.config.bucket_mb == 100;
  });
  ASSERT_NE(p, preds.end());
  EXPECT_NEAR(static_cast<double>(opened->summary.step_ns) * 1e-3, p->step_us, 0.002);
  ASSERT_TRUE(opened->summary.overlap_pct && p->overlap_pct);
  EXPECT_NEAR(*opened->summary.overlap_pct, *p->overlap_pct, 1e-3);
  ASSERT_TRUE(f.waitForPrediction());
  EXPECT_FALSE(f.panel.prediction()->whatif.model.usable);
  EXPECT_TRUE(f.panel.predictionText().contains(QStringLiteral("not predicted again")))
      << f.panel.predictionText().toStdString();
  EXPECT_FALSE(f.panel.openPredictionButton()->isEnabled());
  // Compare: the recorded run against the predicted one.
  compare.setRuns(0, 1);
  ASSERT_EQ(compare.runA(), run);
  ASSERT_EQ(compare.runB(), opened);
  ASSERT_FALSE(compare.rows().empty());
  bool step_row = false;
  for (const auto& r : compare.rows())
    if (r.metric.rfind("step time", 0) == 0) {
      step_row = true;
      EXPECT_DOUBLE_EQ(r.a_value, static_cast<double>(run->summary.step_ns));
      EXPECT_DOUBLE_EQ(r.b_value, static_cast<double>(opened->summary.step_ns));
    }
  EXPECT_TRUE(step_row);
  EXPECT_TRUE(compare.runBoxB()->currentText().contains(QStringLiteral("[PREDICTED]")))
      << compare.runBoxB()->currentText().toStdString();
  // The views, to look at.
  QByteArray png;
  QString error;
  ASSERT_TRUE(compare.renderChart(ExportFormat::Png, 1, &png, &error)) << error.toStdString();
  EXPECT_TRUE(QImage::fromData(png).save(QDir(dir).filePath("predicted-compare.png")));
  ASSERT_TRUE(timeline.renderImage(ExportFormat::Png, 1, &png, &error)) << error.toStdString();
  EXPECT_TRUE(QImage::fromData(png).save(QDir(dir).filePath("predicted-timeline.png")));
}

// `ddpscope --report DIR PATH` on the reference trace: the report has the prediction section, every
// figure labelled predicted, and its numbers are those of `ddpscope-cli predict --json` for the
// same run (same default sizes): step time, overlap, exposed communication per size, the base
// replay's error and the fitted α and β.
TEST(SweepPredictionReport, ReportStatesTheCliPrediction) {
  app();
  QTemporaryDir dir;
  const QString out = dir.filePath(QStringLiteral("report"));
  QProcess report;
  report.start(QStringLiteral(DDPSCOPE_APP), {QStringLiteral("--report"), out, kResnet});
  ASSERT_TRUE(report.waitForFinished(240'000));
  ASSERT_EQ(report.exitCode(), 0) << report.readAllStandardError().toStdString();
  QFile md(QDir(out).filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md.readAll());
  QProcess cli;
  cli.start(QStringLiteral(DDPSCOPE_CLI),
            {QStringLiteral("predict"), QStringLiteral("--json"), kResnet});
  ASSERT_TRUE(cli.waitForFinished(240'000));
  ASSERT_EQ(cli.exitCode(), 0);
  const auto doc = QJsonDocument::fromJson(cli.readAllStandardOutput());
  ASSERT_TRUE(doc.isObject());
  const auto json = doc.object();

  EXPECT_TRUE(text.contains(QStringLiteral("## Predicted: step time per bucket size (what-if)")));
  EXPECT_TRUE(
      text.contains(QStringLiteral("Every figure in this section is predicted, not measured")));
  const auto ms = [](double us) {
    return QString::number(us / 1e3, 'f', 3) + QStringLiteral(" ms");
  };
  const auto preds = json.value("predictions").toArray();
  ASSERT_FALSE(preds.isEmpty());
  const double best = json.value("best").toObject().value("bucket_mb").toDouble(-1);
  for (const auto& v : preds) {
    const auto p = v.toObject();
    const double mb = p.value("bucket_mb").toDouble();
    QString size = mb == 0 ? QStringLiteral("one allreduce per tensor")
                           : QString::number(mb, 'g', 6) + QStringLiteral(" MiB");
    // The mark `predict --json` gives the size (the best's, and those tied with it).
    if (const auto mark = p.value("mark").toString(); !mark.isEmpty())
      size += QStringLiteral(" (%1)").arg(mark);
    if (mb == best) {
      EXPECT_TRUE(p.value("mark").toString().startsWith("predicted "));
    }
    if (p.value("host_bound").toBool()) size += QStringLiteral(" (host-bound)");
    const QString row = QStringLiteral("| %1 | %2 | ").arg(size, ms(p.value("step_us").toDouble()));
    EXPECT_TRUE(text.contains(row)) << row.toStdString() << "\n" << text.toStdString();
    // The JSON's overlap has three decimals, the report's two from the full value: 19.345 in
    // the JSON may be 19.35 or 19.34 in the report, so either rounding of the JSON's is the same.
    const auto tail = [&](double overlap) {
      return QStringLiteral(" | %1 %2 | %3 | ")
          .arg(QString::number(overlap, 'f', 2), QStringLiteral("%"),
               ms(p.value("exposed_comm_us").toDouble()));
    };
    const double overlap = p.value("overlap_pct").toDouble();
    EXPECT_TRUE(text.contains(tail(overlap - 5e-4)) || text.contains(tail(overlap + 5e-4)))
        << tail(overlap).toStdString();
  }
  const auto base = json.value("base").toObject();
  const QString err =
      QStringLiteral("base replay error ") +
      QString::fromStdString(analysis::signedText(base.value("replay_error_pct").toDouble(), 2));
  EXPECT_TRUE(text.contains(err)) << err.toStdString();
  const auto fit = json.value("fit").toObject().value("communication").toArray().first().toObject();
  const QString fit_row =
      QStringLiteral("| allreduce | %1 | %2 | %3 | ")
          .arg(fit.value("ranks").toInt())
          .arg(QString::number(fit.value("alpha_us").toDouble(), 'f', 2),
               QString::number(fit.value("beta_us_per_mib").toDouble(), 'f', 3));
  EXPECT_TRUE(text.contains(fit_row)) << fit_row.toStdString();
  EXPECT_TRUE(text.contains(QStringLiteral("**Predicted recommendation.** Predicted: ")));

  // The predicted figure: referenced in the section by both formats, and drawn (not blank).
  const int section = static_cast<int>(text.indexOf(QStringLiteral("## Predicted:")));
  const int figure = static_cast<int>(text.indexOf(QStringLiteral("](predicted.png)")));
  EXPECT_GT(figure, section);
  EXPECT_LT(figure, text.indexOf(QStringLiteral("Fitted network costs")));
  QFile html(QDir(out).filePath(QStringLiteral("report.html")));
  ASSERT_TRUE(html.open(QIODevice::ReadOnly));
  EXPECT_TRUE(html.readAll().contains("<img src=\"predicted.png\" alt=\"PREDICTED"));
  checkPredictedFigure(QDir(out).filePath(QStringLiteral("predicted.png")));
}

// Export report while the Sweep tab still predicts the run: the prediction is awaited off the GUI
// thread (the event loop runs meanwhile: a timer ticks) and the report has its section and figure.
TEST(SweepPredictionReport, ExportAwaitsThePredictionWithoutBlockingTheWindow) {
  app();
  QTemporaryDir dir;
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 900);
  w.show();
  w.session()->addRun(load({kResnet}));
  ASSERT_TRUE(w.sweepPanel()->predictionPending());
  int ticks = 0;
  QTimer timer;
  QObject::connect(&timer, &QTimer::timeout, [&] { ++ticks; });
  timer.start(1);
  const QString out = dir.filePath(QStringLiteral("report"));
  QString error;
  ASSERT_TRUE(w.exportReport(out, &error)) << error.toStdString();
  EXPECT_GT(ticks, 0) << "the window's event loop did not run while the prediction was computed";
  EXPECT_FALSE(w.sweepPanel()->predictionPending());
  QFile md(QDir(out).filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md.readAll());
  EXPECT_TRUE(text.contains(QStringLiteral("| bucket size | predicted step time |")));
  EXPECT_TRUE(text.contains(QStringLiteral("](predicted.png)")));
  checkPredictedFigure(QDir(out).filePath(QStringLiteral("predicted.png")));
}

// Another run made current while the report waits for its prediction (the dialog is modal, but
// a run can still arrive, e.g. from a load started before): nothing is written, and the error
// says why, rather than one run's text with the other's figures.
TEST(SweepPredictionReport, RunChangedWhileWaitingWritesNothing) {
  app();
  QTemporaryDir dir;
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.show();
  w.session()->addRun(load({kResnet}));
  ASSERT_TRUE(w.sweepPanel()->predictionPending());
  QTimer::singleShot(0, &w, [&] { w.session()->addRun(load({kResnet})); });
  const QString out = dir.filePath(QStringLiteral("changed"));
  QString error;
  EXPECT_FALSE(w.exportReport(out, &error));
  EXPECT_EQ(error, QStringLiteral("the run changed while the report waited for its prediction; "
                                  "nothing was written"));
  EXPECT_FALSE(QFileInfo::exists(out));
}

// A prediction cancelled while the report waits for it: the report is written without the
// section's figures and says why; the next export predicts again.
TEST(SweepPredictionReport, CancelledPredictionStillWritesTheReport) {
  app();
  QTemporaryDir dir;
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.show();
  auto run = load({kResnet});
  // The cancel is posted before the run starts its prediction, so it reaches the report's wait
  // ahead of the prediction's result, however fast the prediction is (posted events keep their
  // order).
  QMetaObject::invokeMethod(
      w.sweepPanel(), [&] { w.sweepPanel()->cancelPrediction(); }, Qt::QueuedConnection);
  w.session()->addRun(std::move(run));
  ASSERT_TRUE(w.sweepPanel()->predictionPending());
  const QString out = dir.filePath(QStringLiteral("cancelled"));
  QString error;
  ASSERT_TRUE(w.exportReport(out, &error)) << error.toStdString();
  QFile md(QDir(out).filePath(QStringLiteral("report.md")));
  ASSERT_TRUE(md.open(QIODevice::ReadOnly));
  const QString text = QString::fromUtf8(md.readAll());
  EXPECT_TRUE(text.contains(QStringLiteral("## Predicted: step time per bucket size (what-if)")));
  EXPECT_TRUE(text.contains(QStringLiteral(
      "No prediction in this report: the prediction was cancelled. The report was written "
      "without it.")))
      << text.toStdString();
  EXPECT_FALSE(text.contains(QStringLiteral("| bucket size | predicted step time |")));
  EXPECT_FALSE(QFile::exists(QDir(out).filePath(QStringLiteral("predicted.png"))));
  EXPECT_TRUE(w.sweepPanel()->predictionText().contains(QStringLiteral("cancelled")));
  EXPECT_TRUE(w.statusText().contains(
      QStringLiteral("without its prediction: the prediction was cancelled")))
      << w.statusText().toStdString();
  // The figure check tells a chart without a prediction from one with it.
  QByteArray png;
  ASSERT_TRUE(w.sweepPanel()->renderChart(ExportFormat::Png, 1.5, &png, &error));
  const auto empty = predictedPixels(QImage::fromData(png));
  EXPECT_LT(empty.band, kBandPixels);
  EXPECT_LT(empty.curve, kCurvePixels);
  // Exported again: predicted anew.
  const QString again = dir.filePath(QStringLiteral("again"));
  ASSERT_TRUE(w.exportReport(again, &error)) << error.toStdString();
  EXPECT_TRUE(QFile::exists(QDir(again).filePath(QStringLiteral("predicted.png"))));
}
