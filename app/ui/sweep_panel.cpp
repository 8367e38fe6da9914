#include "app/ui/sweep_panel.h"

#include <qcustomplot.h>
#include <QComboBox>
#include <QEventLoop>
#include <QFutureWatcher>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QProgressBar>
#include <QProgressDialog>
#include <QPushButton>
#include <QVBoxLayout>
#include <QtConcurrent>
#include <algorithm>
#include <cmath>

#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"
#include "app/ui/agent_run_job.h"
#include "app/ui/format.h"
#include "app/ui/loaded_run.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/plot_style.h"
#include "app/ui/prediction_job.h"
#include "app/ui/session.h"

namespace ddpscope::ui {

namespace {
QString sizesText(const std::vector<double>& mb) {
  QStringList parts;
  for (double v : mb)
    parts << QString::fromStdString(analysis::mibNumberText(v));
  return parts.join(QStringLiteral(", "));
}

QString mbLabel(double mb) {
  return mb == 0 ? QStringLiteral("per tensor")
                 : QString::fromStdString(analysis::mibNumberText(mb));
}

double ms(trace::TimeNs ns) {
  return static_cast<double>(ns) / 1e6;
}

QString usText(double us) {
  return QString::fromStdString(
      analysis::formatDuration(static_cast<trace::TimeNs>(std::llround(us * 1e3))));
}
}  // namespace

SweepPanel::SweepPanel(Session* session, std::function<RunParameters()> base, QWidget* parent)
    : QWidget(parent), session_(session), base_(std::move(base)) {
  auto* layout = new QVBoxLayout(this);
  auto* row = new QHBoxLayout;
  row->addWidget(new QLabel(tr("Bucket sizes (MiB):"), this));
  sizes_edit_ = new QLineEdit(sizesText(analysis::defaultSweepSizes()), this);
  sizes_edit_->setToolTip(
      tr("Comma-separated bucket caps in MiB (as --bucket-mb and PyTorch's bucket_cap_mb); 0 = one "
         "allreduce per tensor. The other settings "
         "come from the run panel."));
  row->addWidget(sizes_edit_, 1);
  start_ = new QPushButton(tr("Run sweep"), this);
  sweep_open_ = new QPushButton(tr("Sweep open runs"), this);
  sweep_open_->setToolTip(
      tr("Sets the open runs side by side by the bucket size each records: measured points, the "
         "fastest, and the sizes their step-time noise does not tell apart (as ddpscope-cli "
         "sweep)"));
  cancel_ = new QPushButton(tr("Cancel"), this);
  cancel_->setEnabled(false);
  progress_ = new QProgressBar(this);
  progress_->setFormat(QStringLiteral("%v/%m runs"));
  progress_->setVisible(false);
  row->addWidget(start_);
  row->addWidget(sweep_open_);
  row->addWidget(cancel_);
  row->addWidget(progress_);
  layout->addLayout(row);
  recommendation_ = new QLabel(tr("Run a sweep to see which bucket size is fastest."), this);
  recommendation_->setWordWrap(true);
  recommendation_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(recommendation_);
  prediction_label_ = new QLabel(this);
  prediction_label_->setWordWrap(true);
  prediction_label_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  layout->addWidget(prediction_label_);
  prediction_notes_ = new QLabel(this);
  prediction_notes_->setWordWrap(true);
  prediction_notes_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  prediction_notes_->setStyleSheet(QStringLiteral("color: %1;").arg(colours::kLabelGrey.name()));
  layout->addWidget(prediction_notes_);
  {
    auto* open_row = new QHBoxLayout;
    open_row->addWidget(new QLabel(tr("Predicted size:"), this));
    open_size_ = new QComboBox(this);
    open_size_->setToolTip(tr("A predicted bucket size of the current run"));
    open_row->addWidget(open_size_);
    open_prediction_ = new QPushButton(tr("Open prediction as run"), this);
    open_prediction_->setToolTip(
        tr("Adds the replay of this size to the open runs (badge PREDICTED): its timeline, "
           "tables and Compare beside the recorded run"));
    open_prediction_->setEnabled(false);
    open_row->addWidget(open_prediction_);
    open_row->addStretch(1);
    layout->addLayout(open_row);
    connect(open_prediction_, &QPushButton::clicked, this, [this] {
      if (open_size_->currentIndex() >= 0)
        openPredictionAsRun(open_size_->currentData().toDouble());
    });
  }
  chart_ = new QCustomPlot(this);
  chart_->setMinimumHeight(220);
  layout->addWidget(chart_, 1);

  chart_->xAxis->setScaleType(QCPAxis::stLogarithmic);
  chart_->xAxis->setLabel(tr("bucket size (MiB, log scale)"));
  chart_->yAxis->setLabel(tr("time per step (ms)"));
  chart_->yAxis2->setLabel(tr("communication hidden (%)"));
  chart_->yAxis2->setVisible(true);
  chart_->yAxis2->setRange(0, 105);
  auto addGraph = [&](QCPAxis* value, const QString& name, const QColor& colour,
                      QCPScatterStyle::ScatterShape shape) {
    QCPGraph* g = chart_->addGraph(chart_->xAxis, value);
    g->setName(name);
    g->setPen(QPen(colour, 2));
    g->setScatterStyle(QCPScatterStyle(shape, colour, colour, 7));
    return g;
  };
  addGraph(chart_->yAxis, tr("measured step time"), colours::kCompute, QCPScatterStyle::ssDisc);
  addGraph(chart_->yAxis, tr("exposed communication"), colours::kCommExposed,
           QCPScatterStyle::ssSquare);
  addGraph(chart_->yAxis2, tr("overlap %"), colours::kCommHidden, QCPScatterStyle::ssTriangle);
  // The prediction: its band under its dashed curve, and the recorded configuration.
  predicted_band_ = new QCPCurve(chart_->xAxis, chart_->yAxis);
  predicted_band_->setName(tr("predicted band"));
  predicted_band_->setPen(Qt::NoPen);
  predicted_band_->setBrush(colours::kPredictedBand);
  predicted_curve_ = new QCPCurve(chart_->xAxis, chart_->yAxis);
  predicted_curve_->setName(tr("predicted step time"));
  predicted_curve_->setPen(QPen(colours::kPredicted, 2, Qt::DashLine));
  predicted_curve_->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(colours::kPredicted, 1.5), Qt::NoBrush, 7));
  recorded_curve_ = new QCPCurve(chart_->xAxis, chart_->yAxis);
  recorded_curve_->setName(tr("recorded"));
  // A host-bound size: the host's own time sets its step, not the GPU model (a square around
  // the point); the predicted best: a filled point.
  host_bound_curve_ = new QCPCurve(chart_->xAxis, chart_->yAxis);
  host_bound_curve_->setName(tr("host-bound (the host's time sets the step)"));
  host_bound_curve_->setLineStyle(QCPCurve::lsNone);
  host_bound_curve_->setScatterStyle(
      QCPScatterStyle(QCPScatterStyle::ssSquare, QPen(colours::kPredicted, 1), Qt::NoBrush, 12));
  predicted_best_curve_ = new QCPCurve(chart_->xAxis, chart_->yAxis);
  predicted_best_curve_->setLineStyle(QCPCurve::lsNone);
  predicted_best_curve_->setScatterStyle(QCPScatterStyle(
      QCPScatterStyle::ssCircle, QPen(colours::kPredicted, 1.5), QBrush(colours::kPredicted), 9));
  // The legend in a row of its own under the chart, so it never hides a point or the best mark.
  chart_->legend->setVisible(true);
  putLegendBelow(chart_);
  // Three entries a row (up to eight: three rows), fewer where the chart or a figure is too
  // narrow for them whole.
  setLegendColumns(chart_, 3);
  applyPlotTheme(chart_, PlotTheme::System);
  replot();

  connect(start_, &QPushButton::clicked, this, &SweepPanel::start);
  connect(sweep_open_, &QPushButton::clicked, this, &SweepPanel::sweepOpenRuns);
  connect(cancel_, &QPushButton::clicked, this, &SweepPanel::cancel);

  prediction_job_ = new PredictionJob(this);
  connect(prediction_job_, &PredictionJob::predicted, this, &SweepPanel::onPredicted);
  connect(session_, &Session::currentRunChanged, this, &SweepPanel::predictCurrent);
  connect(session_, &Session::runsChanged, this, &SweepPanel::predictCurrent);
  connect(sizes_edit_, &QLineEdit::editingFinished, this, &SweepPanel::predictCurrent);
  predictCurrent();
}

void SweepPanel::predictCurrent() {
  auto run = session_->current();
  const auto list = sizes();
  if (run == predicted_for_ && list == predicted_sizes_ && !prediction_cancelled_) return;
  const bool superseded = prediction_job_->busy();
  predicted_for_ = run;
  predicted_sizes_ = list;
  prediction_cancelled_ = false;
  prediction_.reset();  // a prediction of another run or other sizes is never shown
  prediction_job_->start(run, list);
  prediction_label_->setText(predictionText());
  prediction_notes_->clear();
  refreshOpenSizes();
  replot();
  if (superseded || !run) emit predictionEnded();
}

void SweepPanel::onPredicted(std::shared_ptr<const PredictionResult> result) {
  if (!result || result->run != predicted_for_ || result->sizes != predicted_sizes_) return;
  prediction_ = std::move(result);
  prediction_label_->setText(predictionText());
  prediction_notes_->setText(predictionNotes());
  refreshOpenSizes();
  replot();
  emit predictionEnded();
}

void SweepPanel::cancelPrediction() {
  if (!prediction_job_->busy()) return;
  prediction_job_->cancel();
  prediction_cancelled_ = true;
  prediction_label_->setText(predictionText());
  replot();
  emit predictionEnded();
}

std::shared_ptr<const PredictionResult> SweepPanel::awaitPrediction(
    const std::shared_ptr<const LoadedRun>& run, QString* why) {
  auto none = [&](const QString& reason) {
    if (why) *why = reason;
    return std::shared_ptr<const PredictionResult>();
  };
  if (awaiting_) return none(tr("another report is already waiting for the prediction"));
  if (!run || run != session_->current())
    return none(tr("the run is not the one the Sweep tab predicts for"));
  predictCurrent();  // starts one when none is under way for this run and these sizes
  const auto ready = [&] {
    return prediction_ && prediction_->run == run && prediction_->sizes == predicted_sizes_;
  };
  if (!ready() && prediction_job_->busy()) {
    awaiting_ = true;
    QEventLoop loop;
    connect(this, &SweepPanel::predictionEnded, &loop, &QEventLoop::quit);
    QProgressDialog progress(tr("Predicting the step time of %1 per bucket size for the "
                                "report…")
                                 .arg(run->name),
                             tr("Cancel prediction"), 0, 0, window());
    progress.setWindowTitle(tr("Design report"));
    // Modal to the window: the report's run must stay the current one while it waits.
    progress.setWindowModality(Qt::WindowModal);
    progress.setMinimumDuration(400);
    connect(&progress, &QProgressDialog::canceled, this, &SweepPanel::cancelPrediction);
    progress.setValue(0);
    loop.exec();
    awaiting_ = false;
  }
  if (ready()) return prediction_;
  if (prediction_cancelled_) return none(tr("the prediction was cancelled"));
  return none(tr("the run or the bucket sizes changed while the prediction was computed"));
}

void SweepPanel::refreshOpenSizes() {
  const QVariant keep = open_size_->currentData();
  open_size_->clear();
  if (prediction_ && prediction_->whatif.model.usable) {
    for (const auto& p : prediction_->whatif.predictions)
      open_size_->addItem(QString::fromStdString(analysis::bucketSizeText(p.config.bucket_mb)),
                          p.config.bucket_mb);
    // The recommended size first in mind: selected unless the user had picked another.
    int pick = keep.isValid() ? open_size_->findData(keep) : -1;
    if (pick < 0 && prediction_->whatif.best) pick = static_cast<int>(*prediction_->whatif.best);
    open_size_->setCurrentIndex(pick);
  }
  open_prediction_->setEnabled(open_size_->count() > 0 && !opening_);
}

bool SweepPanel::openPredictionAsRun(double bucket_mb) {
  if (opening_ || !prediction_ || !prediction_->whatif.model.usable) return false;
  const auto& preds = prediction_->whatif.predictions;
  if (std::none_of(preds.begin(), preds.end(),
                   [&](const analysis::Prediction& p) { return p.config.bucket_mb == bucket_mb; }))
    return false;
  opening_ = true;
  open_error_.clear();
  open_prediction_->setEnabled(false);
  auto* watcher = new QFutureWatcher<PredictedRunResult>(this);
  connect(watcher, &QFutureWatcher<PredictedRunResult>::finished, this, [this, watcher] {
    const auto result = watcher->result();
    watcher->deleteLater();
    opening_ = false;
    open_prediction_->setEnabled(open_size_->count() > 0);
    if (result.run) {
      session_->addRun(result.run);
    } else {
      open_error_ = tr("The prediction could not be opened as a run: %1").arg(result.error);
      prediction_notes_->setText(open_error_);
    }
    emit predictionOpened(result.run);
  });
  watcher->setFuture(QtConcurrent::run([prediction = prediction_, bucket_mb] {
    return predictedRunBlocking(prediction, bucket_mb);
  }));
  return true;
}

bool SweepPanel::predictionPending() const {
  return prediction_job_->busy();
}

bool SweepPanel::predictionRunning() const {
  return prediction_job_->anyRunning();
}

QString SweepPanel::predictionText() const {
  if (!predicted_for_) return tr("Open a run to see its predicted step time per bucket size.");
  if (!prediction_) {
    if (predicted_sizes_.empty()) return tr("Give at least one bucket size to predict.");
    if (prediction_cancelled_)
      return tr("Prediction of %1 cancelled: edit the sizes to predict again.")
          .arg(predicted_for_->name);
    return tr("Predicting the step time of %1 at %2 bucket sizes…")
        .arg(predicted_for_->name)
        .arg(predicted_sizes_.size());
  }
  const auto& p = *prediction_;
  if (!p.error.isEmpty()) return tr("No prediction: the predictor failed: %1").arg(p.error);
  if (p.recommendation) return QString::fromStdString(p.recommendation->text);
  QStringList notes;
  for (const auto& n : p.whatif.notes)
    notes << QString::fromStdString(n);
  if (notes.isEmpty()) notes << tr("no bucket size was given");
  return tr("No prediction for this run: %1.").arg(notes.join(QStringLiteral("; ")));
}

QString SweepPanel::predictionNotes() const {
  if (!prediction_ || !prediction_->recommendation) return {};
  const auto& w = prediction_->whatif;
  QStringList lines;
  if (const auto err = analysis::replayErrorPct(w.base_predicted_step_us, w.base_step_us))
    lines << tr("Check of the model: the replay of the recorded configuration predicts %1 per "
                "step (recorded %2, %3), overlap %4 (recorded %5), exposed %6 per step "
                "(recorded %7).")
                 .arg(
                     usText(w.base_predicted_step_us), usText(w.base_step_us),
                     QString::fromStdString(analysis::signedText(*err, 2)),
                     QString::fromStdString(analysis::percentText(w.base_predicted_overlap_pct, 2)),
                     QString::fromStdString(analysis::percentText(w.model.recorded_overlap_pct, 2)),
                     usText(w.base_predicted_exposed_us), usText(w.model.recorded_exposed_us));
  // Each reason once, with the sizes it holds for (the CLI's footnote and the report's notes
  // give the same reasons).
  for (const auto& why : analysis::noBandReasons(w)) {
    QStringList at;
    for (const auto& p : w.predictions)
      if (analysis::noBandReason(p) == why)
        at << QString::fromStdString(analysis::bucketSizeText(p.config.bucket_mb));
    lines
        << tr("No band at %1: %2").arg(at.join(QStringLiteral(", ")), QString::fromStdString(why));
  }
  for (const auto& n : w.notes)
    lines << tr("Note: %1").arg(QString::fromStdString(n));
  return lines.join(QStringLiteral("\n"));
}

std::vector<double> SweepPanel::sizes() const {
  std::vector<double> out;
  for (const QString& part : sizes_edit_->text().split(
           QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts)) {
    bool ok = false;
    const double v = part.toDouble(&ok);
    if (ok && v >= 0 && std::find(out.begin(), out.end(), v) == out.end()) out.push_back(v);
  }
  std::sort(out.begin(), out.end());
  return out;
}

void SweepPanel::setSizes(const std::vector<double>& mb) {
  sizes_edit_->setText(sizesText(mb));
}

int SweepPanel::parallelism() const {
  return sweep_base_.backend == QLatin1String("sim") ? 2 : 1;
}

void SweepPanel::start() {
  if (busy()) return;
  const auto list = sizes();
  if (list.empty()) {
    recommendation_->setText(tr("Give at least one bucket size."));
    return;
  }
  sweep_base_ = base_();
  current_mb_ = sweep_base_.bucket_mb;
  queue_.assign(list.begin(), list.end());
  order_ = list;
  finished_runs_.clear();
  next_to_add_ = 0;
  total_ = static_cast<int>(list.size());
  points_.clear();
  rec_.reset();
  errors_.clear();
  cancelled_ = false;
  start_->setEnabled(false);
  sweep_open_->setEnabled(false);
  cancel_->setEnabled(true);
  progress_->setRange(0, total_);
  progress_->setValue(0);
  progress_->setVisible(true);
  recommendation_->setText(tr("Sweeping %1 bucket sizes…").arg(total_));
  replot();
  while (static_cast<int>(active_.size()) < parallelism() && !queue_.empty())
    launchNext();
}

bool SweepPanel::sweepOpenRuns() {
  if (busy()) return false;
  const auto say = [this](const QString& text, bool error) {
    recommendation_->setText(text);
    recommendation_->setStyleSheet(
        error ? QStringLiteral("color: %1;").arg(colours::kErrorText.name()) : QString());
  };
  std::vector<analysis::MeasuredRun> runs;
  QStringList left_out;
  const auto current = session_->current();
  double current_mb = -1;
  for (const auto& run : session_->runs()) {
    if (run->source() == "predicted") {
      left_out << tr("%1 (a prediction, not a measurement)").arg(run->name);
      continue;
    }
    const auto mb = analysis::recordedBucketMb(run->run);
    if (!mb) {
      left_out << tr("%1 (does not record its bucket size)").arg(run->name);
      continue;
    }
    if (!run->summary.hasSteps()) {
      left_out << tr("%1 (no training steps)").arg(run->name);
      continue;
    }
    if (run == current) current_mb = *mb;
    runs.push_back(analysis::measuredRun(
        {&run->run, &run->report, &run->summary, run->name.toStdString()}, *mb));
  }
  const QString left = left_out.isEmpty()
                           ? QString()
                           : tr("\nLeft out: %1.").arg(left_out.join(QStringLiteral("; ")));
  if (runs.size() < 2) {
    say(tr("Sweep open runs needs two or more open runs at different bucket sizes that record "
           "their size and have training steps (open them with File ▸ Open, or run the agent "
           "at other sizes); %1 usable.")
                .arg(runs.size()) +
            left,
        true);
    return false;
  }
  std::string error;
  auto sweep = analysis::measuredSweep(std::move(runs), current_mb, &error);
  if (!sweep) {
    say(tr("Sweep open runs: %1; close one of them.").arg(QString::fromStdString(error)) + left,
        true);
    return false;
  }
  current_mb_ = current_mb;  // -1: no open run is current, no "current" mark
  points_ = sweep->points;
  rec_ = sweep->recommendation;
  rec_->text = sweep->text + (sweep->warning.empty() ? std::string() : " " + sweep->warning);
  errors_.clear();
  say(tr("Measured, %1 open runs: ").arg(points_.size()) + QString::fromStdString(rec_->text) +
          left,
      !sweep->warning.empty());
  replot();
  emit finished(true);
  return true;
}

void SweepPanel::launchNext() {
  RunParameters p = sweep_base_;
  p.bucket_mb = queue_.front();
  p.first_bucket_mb = std::min(sweep_base_.first_bucket_mb, p.bucket_mb);
  queue_.pop_front();
  auto* job = new AgentRunJob(this);
  active_.push_back(job);
  connect(job, &AgentRunJob::loaded, this, [this, job](std::shared_ptr<LoadedRun> run) {
    analysis::SweepPoint point;
    point.bucket_mb = job->parameters().bucket_mb;
    point.summary = run->summary;
    point.configuration = analysis::runConfigurationText(run->run, false);
    run->name = tr("sweep %1").arg(run->name);
    point.label = job->outDir().toStdString();
    points_.push_back(std::move(point));
    finished_runs_[job->parameters().bucket_mb] = std::move(run);
  });
  connect(job, &AgentRunJob::failed, this, [this, job](const QString& message) {
    errors_ << tr("%1 MB: %2").arg(job->parameters().bucket_mb).arg(message);
  });
  connect(job, &AgentRunJob::finished, this, [this, job] { onJobDone(job); });
  job->start(p, false);
}

void SweepPanel::onJobDone(AgentRunJob* job) {
  active_.erase(std::remove(active_.begin(), active_.end(), job), active_.end());
  finished_runs_.try_emplace(job->parameters().bucket_mb, nullptr);
  addFinishedRunsInOrder(false);
  job->deleteLater();
  progress_->setValue(total_ - static_cast<int>(queue_.size()) - static_cast<int>(active_.size()));
  if (!cancelled_ && !queue_.empty()) launchNext();
  if (active_.empty() && queue_.empty()) finish();
}

void SweepPanel::cancel() {
  if (!busy()) return;
  cancelled_ = true;
  queue_.clear();
  for (auto* job : std::vector<AgentRunJob*>(active_))
    job->cancel();
}

void SweepPanel::addFinishedRunsInOrder(bool all) {
  while (next_to_add_ < order_.size()) {
    const auto it = finished_runs_.find(order_[next_to_add_]);
    if (it == finished_runs_.end()) {
      if (!all) break;
    } else if (it->second) {
      session_->addRun(std::move(it->second));
    }
    ++next_to_add_;
  }
}

void SweepPanel::finish() {
  addFinishedRunsInOrder(true);
  start_->setEnabled(true);
  sweep_open_->setEnabled(true);
  cancel_->setEnabled(false);
  progress_->setVisible(false);
  if (!points_.empty()) rec_ = analysis::recommendBucketSize(points_, current_mb_);
  QString text;
  if (rec_) text = QString::fromStdString(rec_->text);
  if (cancelled_) text = tr("Sweep cancelled after %1 runs. ").arg(points_.size()) + text;
  if (!errors_.isEmpty()) text += QStringLiteral("\n") + errors_.join(QStringLiteral("\n"));
  if (text.isEmpty()) text = tr("No run of the sweep finished.");
  recommendation_->setText(text);
  recommendation_->setStyleSheet(
      errors_.isEmpty() ? QString() : QStringLiteral("color: %1;").arg(colours::kErrorText.name()));
  replot();
  emit finished(!cancelled_ && errors_.isEmpty() && !points_.empty());
}

QString SweepPanel::lineText() const {
  return recommendation_->text();
}

QString SweepPanel::recommendationText() const {
  return rec_ ? QString::fromStdString(rec_->text) : QString();
}

double SweepPanel::chartX(double mb) const {
  return mb > 0 ? mb : zero_x_;
}

void SweepPanel::replot() {
  // 0 MB has no place on a log axis: put it a factor of 4 left of the smallest positive size.
  double min_positive = 0;
  auto consider = [&](double mb) {
    if (mb > 0 && (min_positive == 0 || mb < min_positive)) min_positive = mb;
  };
  for (const auto& p : points_)
    consider(p.bucket_mb);
  if (prediction_)
    for (const auto& p : prediction_->whatif.predictions)
      consider(p.config.bucket_mb);
  zero_x_ = min_positive > 0 ? min_positive / 4 : 0.25;
  plotPoints();
  plotPrediction();
  // The measured series (in the legend) and the overlap axis when a sweep measured something or
  // nothing is predicted either (the empty chart keeps its usual frame).
  const bool measured = !points_.empty() || predicted_curve_->dataCount() == 0;
  for (int g = 0; g < 3; ++g) {
    if (measured)
      chart_->graph(g)->addToLegend();
    else
      chart_->graph(g)->removeFromLegend();
  }
  chart_->yAxis2->setVisible(measured);
  setLegendColumns(chart_, 3);  // other items: fitted again
  chart_->clearItems();
  predicted_badge_ = nullptr;
  markCurrentAndBest();
  if (predicted_curve_->dataCount() > 0 && prediction_->recommendation) {
    // The sizes under this line are closer to the predicted best than the model's own error: the
    // prediction does not rank them (the recommendation's sentence names them).
    const auto& rec = *prediction_->recommendation;
    const double y = rec.step_us * (1 + rec.model_error_pct / 100) / 1e3;
    auto* line = new QCPItemStraightLine(chart_);
    line->point1->setCoords(0, y);
    line->point2->setCoords(1, y);
    line->setPen(QPen(colours::kPredicted, 1, Qt::DotLine));
    auto* label = new QCPItemText(chart_);
    label->position->setTypeX(QCPItemPosition::ptAxisRectRatio);
    label->position->setTypeY(QCPItemPosition::ptPlotCoords);
    label->position->setCoords(0.99, y);
    label->setPositionAlignment(Qt::AlignRight | Qt::AlignBottom);
    label->setText(tr("within the model's error (%1 %) of the fastest predicted size")
                       .arg(rec.model_error_pct, 0, 'f', 1));
    label->setFont(QFont(font().family(), 8));
    label->setColor(colours::kPredicted);
  }
  if (predicted_curve_->dataCount() > 0) {
    // Every prediction carries its label: this chart is also the report's predicted figure.
    auto* badge = predicted_badge_ = new QCPItemText(chart_);
    badge->position->setType(QCPItemPosition::ptAxisRectRatio);
    badge->position->setCoords(0.5, 0.02);
    badge->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
    badge->setTextAlignment(Qt::AlignLeft);
    badge->setText(tr("PREDICTED (what-if replay of %1, not a measurement)")
                       .arg(prediction_->run ? prediction_->run->name : QString()));
    badge->setFont(QFont(font().family(), 9, QFont::Bold));
    badge->setColor(colours::kPredicted);
    badge->setPen(QPen(colours::kPredicted));
    badge->setPadding(QMargins(4, 2, 4, 2));
    badge->setBrush(palette().color(QPalette::Base));  // over the lines it crosses
  }
  QString note;
  if (points_.empty() && predicted_curve_->dataCount() == 0) {
    if (prediction_)
      note = tr("No predicted curve for this run: the line above says why.\n");
    else if (predicted_for_)
      note = tr("Predicting…\n");
    note +=
        tr("Sweep… (Run panel) runs the agent at several bucket sizes\nand plots the measured "
           "step time and exposed communication per size here.");
  }
  setEmptyNote(chart_, note, {chart_->xAxis, chart_->yAxis, chart_->yAxis2});
  applyPlotTheme(chart_, PlotTheme::System);
  chart_->replot(QCustomPlot::rpQueuedReplot);
}

void SweepPanel::plotPoints() {
  QVector<double> x, step, exposed, overlap_x, overlap;
  auto ticker = QSharedPointer<QCPAxisTickerText>::create();
  double lo = 0, hi = 0;
  for (const auto& p : points_) {
    const double px = chartX(p.bucket_mb);
    x << px;
    step << ms(p.summary.step_ns);
    exposed << ms(p.summary.exposed_ns_per_step);
    if (p.summary.overlap_pct) {
      overlap_x << px;
      overlap << *p.summary.overlap_pct;
    }
    ticker->addTick(px, mbLabel(p.bucket_mb));
    lo = lo == 0 ? px : std::min(lo, px);
    hi = std::max(hi, px);
  }
  chart_->graph(0)->setData(x, step, true);
  chart_->graph(1)->setData(x, exposed, true);
  chart_->graph(2)->setData(overlap_x, overlap, true);
  // The predicted sizes, and the predicted band's extent.
  double p_lo = 0, p_hi = 0;
  const bool predicted = prediction_ && !prediction_->whatif.predictions.empty();
  if (predicted) {
    for (const auto& p : prediction_->whatif.predictions) {
      const double px = chartX(p.config.bucket_mb);
      ticker->addTick(px, mbLabel(p.config.bucket_mb));
      lo = lo == 0 ? px : std::min(lo, px);
      hi = std::max(hi, px);
      p_lo = p_lo == 0 ? p.step_us_low / 1e3 : std::min(p_lo, p.step_us_low / 1e3);
      p_hi = std::max(p_hi, p.step_us_high / 1e3);
    }
    const double recorded = prediction_->whatif.base_step_us / 1e3;
    if (recorded > 0) {
      p_lo = std::min(p_lo, recorded);
      p_hi = std::max(p_hi, recorded);
    }
  }
  chart_->xAxis->setTicker(ticker);
  if (points_.empty() && !predicted) {
    chart_->xAxis->setRange(0.1, 1000);
    chart_->yAxis->setRange(0, 1);
  } else {
    chart_->xAxis->setRange(lo / 1.8, hi * 1.8);
    double top = p_hi;
    for (double v : step)
      top = std::max(top, v);
    if (points_.empty()) {
      // The predicted curve alone: its range, with a margin, so that the U shows.
      const double margin = std::max((p_hi - p_lo) * 0.15, p_hi * 0.02);
      chart_->yAxis->setRange(std::max(0.0, p_lo - margin), p_hi + margin);
    } else {
      chart_->yAxis->setRange(0, top * 1.15);
    }
  }
}

void SweepPanel::plotPrediction() {
  QVector<double> t, x, y, bt, bx, by, rt, rx, ry;
  const bool usable = prediction_ && prediction_->whatif.model.usable;
  if (usable) {
    auto preds = prediction_->whatif.predictions;
    std::sort(preds.begin(), preds.end(),
              [](const auto& a, const auto& b) { return a.config.bucket_mb < b.config.bucket_mb; });
    for (const auto& p : preds) {
      t << t.size();
      x << chartX(p.config.bucket_mb);
      y << p.step_us / 1e3;
    }
    // The band as one closed outline: the lows left to right, the highs right to left.
    for (const auto& p : preds) {
      bt << bt.size();
      bx << chartX(p.config.bucket_mb);
      by << p.step_us_low / 1e3;
    }
    for (auto it = preds.rbegin(); it != preds.rend(); ++it) {
      bt << bt.size();
      bx << chartX(it->config.bucket_mb);
      by << it->step_us_high / 1e3;
    }
  }
  predicted_curve_->setData(t, x, y, true);
  predicted_band_->setData(bt, bx, by, true);
  QVector<double> ht, hx, hy, pt, px, py;
  if (usable) {
    for (const auto& p : prediction_->whatif.predictions)
      if (p.host_bound) {
        ht << ht.size();
        hx << chartX(p.config.bucket_mb);
        hy << p.step_us / 1e3;
      }
    if (const auto& best = prediction_->whatif.best;
        best && *best < prediction_->whatif.predictions.size()) {
      const auto& p = prediction_->whatif.predictions[*best];
      pt << 0;
      px << chartX(p.config.bucket_mb);
      py << p.step_us / 1e3;
      // The mark the CLI and the report give it: "predicted best" only when it ranks first.
      const auto mark = analysis::predictionMark(prediction_->recommendation, *best);
      predicted_best_curve_->setName(
          tr("%1 (%2)").arg(QString::fromStdString(mark.empty() ? "predicted fastest" : mark),
                            QString::fromStdString(analysis::bucketSizeText(p.config.bucket_mb))));
    }
  }
  host_bound_curve_->setData(ht, hx, hy, true);
  predicted_best_curve_->setData(pt, px, py, true);
  // The recorded configuration: a point at its bucket size, or (the trace does not say its
  // cap) a dotted line at its step time across the chart.
  static const analysis::WhatIfResult kNone;
  const auto& w = prediction_ ? prediction_->whatif : kNone;
  const bool recorded = usable && w.base_step_us > 0 && !x.isEmpty();
  if (recorded && w.base_bucket_mb) {
    rt << 0;
    rx << chartX(*w.base_bucket_mb);
    ry << w.base_step_us / 1e3;
    recorded_curve_->setName(
        tr("recorded (%1, %2)")
            .arg(QString::fromStdString(analysis::bucketSizeText(*w.base_bucket_mb)),
                 usText(w.base_step_us)));
    recorded_curve_->setLineStyle(QCPCurve::lsNone);
    recorded_curve_->setPen(QPen(colours::kStep, 2));
    recorded_curve_->setScatterStyle(
        QCPScatterStyle(QCPScatterStyle::ssCrossCircle, QPen(colours::kStep, 2), Qt::NoBrush, 13));
  } else if (recorded) {
    const auto range = chart_->xAxis->range();
    rt << 0 << 1;
    rx << range.lower << range.upper;
    ry << w.base_step_us / 1e3 << w.base_step_us / 1e3;
    recorded_curve_->setName(
        tr("recorded step %1 (bucket cap not in the trace)").arg(usText(w.base_step_us)));
    recorded_curve_->setLineStyle(QCPCurve::lsLine);
    recorded_curve_->setPen(QPen(colours::kStep, 1.5, Qt::DotLine));
    recorded_curve_->setScatterStyle(QCPScatterStyle());
  }
  recorded_curve_->setData(rt, rx, ry, true);
  for (QCPCurve* c : {predicted_band_, predicted_curve_, predicted_best_curve_, host_bound_curve_,
                      recorded_curve_}) {
    if (c->dataCount() > 0)
      c->addToLegend();
    else
      c->removeFromLegend();
  }
  setLegendColumns(chart_, 3);  // other items: fitted again
}

QCPItemText* SweepPanel::addMarker(double x, const QPen& pen, double label_y,
                                   Qt::Alignment label_side, const QString& text) {
  auto* line = new QCPItemStraightLine(chart_);
  line->point1->setCoords(x, 0);
  line->point2->setCoords(x, 1);
  line->setPen(pen);
  auto* label = new QCPItemText(chart_);
  label->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  label->position->setCoords(x, label_y);
  label->setPositionAlignment(Qt::AlignLeft | label_side);
  label->setPadding(QMargins(6, 0, 0, 0));
  label->setTextAlignment(Qt::AlignLeft);
  label->setText(text);
  label->setColor(palette().color(QPalette::WindowText));
  return label;
}

void SweepPanel::markCurrentAndBest() {
  // The current setting, when it was swept and is not the best.
  const bool current_swept = std::any_of(points_.begin(), points_.end(),
                                         [&](const auto& p) { return p.bucket_mb == current_mb_; });
  if (rec_ && current_swept && rec_->best_mb != current_mb_)
    addMarker(chartX(current_mb_), QPen(colours::kStep, 1, Qt::DotLine), 0.94, Qt::AlignBottom,
              tr("current"));
  if (rec_ && rec_->best < points_.size()) {
    const auto& best = points_[rec_->best];
    QCPItemText* label = addMarker(
        chartX(best.bucket_mb), QPen(colours::kBestMark, 1.5, Qt::DashLine), 0.06, Qt::AlignTop,
        tr("best: %1%2\n%3 / step")
            .arg(mbLabel(best.bucket_mb), best.bucket_mb > 0 ? tr(" MiB") : QString(),
                 formatTime(best.summary.step_ns)));
    label->setFont(QFont(font().family(), 9, QFont::Bold));
  }
}

bool SweepPanel::exportChart(const QString& path, double scale, QString* error) {
  return exportRendered(path, error, [&](ExportFormat format, QByteArray* out, QString* why) {
    return renderChart(format, scale, out, why);
  });
}

bool SweepPanel::renderChart(ExportFormat format, double scale, QByteArray* out, QString* error) {
  applyPlotTheme(chart_, PlotTheme::Light);
  for (auto* item : chart_->selectedItems())
    item->setSelected(false);
  // The label follows the theme too.
  for (int i = 0; i < chart_->itemCount(); ++i)
    if (auto* t = qobject_cast<QCPItemText*>(chart_->item(i)); t && t != predicted_badge_)
      t->setColor(colours::kExportLabel);
  if (predicted_badge_) predicted_badge_->setBrush(Qt::white);  // the light theme's background
  const bool ok = renderPlot(chart_, format, std::max(chart_->width(), 900),
                             std::max(chart_->height(), 450), scale, out, error);
  applyPlotTheme(chart_, PlotTheme::System);
  replot();
  return ok;
}

}  // namespace ddpscope::ui
