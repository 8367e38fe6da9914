#include "app/ui/prediction_job.h"

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QtConcurrent>
#include <algorithm>
#include <exception>

#include "app/analysis/predicted_run.h"
#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

PredictionResult predictBlocking(std::shared_ptr<const LoadedRun> run,
                                 const std::vector<double>& sizes) {
  PredictionResult out;
  out.run = run;
  out.sizes = sizes;
  if (!run) return out;
  QElapsedTimer timer;
  timer.start();
  try {
    analysis::AnalysisOptions options;
    options.rules = run->rules;
    std::vector<analysis::RankActivity> activities;
    activities.reserve(run->run.ranks.size());
    for (const auto& rank : run->run.ranks)
      activities.push_back(analysis::rankActivity(rank, options));
    out.whatif = analysis::predictWhatIf(
        run->run, run->report, activities,
        analysis::whatIfSweepConfigs(sizes, analysis::whatIfBase(run->run)));
    out.recommendation = analysis::recommendWhatIf(out.whatif);
  } catch (const std::exception& e) {
    out.error = QString::fromStdString(e.what());
  }
  out.seconds = static_cast<double>(timer.nsecsElapsed()) / 1e9;
  return out;
}

PredictedRunResult predictedRunBlocking(std::shared_ptr<const PredictionResult> prediction,
                                        double bucket_mb) {
  PredictedRunResult out;
  if (!prediction || !prediction->run) {
    out.error = QStringLiteral("no prediction to open");
    return out;
  }
  const auto& preds = prediction->whatif.predictions;
  const auto it = std::find_if(preds.begin(), preds.end(), [&](const analysis::Prediction& p) {
    return p.config.bucket_mb == bucket_mb;
  });
  if (it == preds.end()) {
    out.error = QStringLiteral("%1 was not predicted")
                    .arg(QString::fromStdString(analysis::bucketSizeText(bucket_mb)));
    return out;
  }
  try {
    auto run = analysis::predictedRun(prediction->run->run, prediction->whatif.model, it->config);
    run.name = analysis::predictedRunName(prediction->run->name.toStdString(), it->config);
    out.run = prepareRun(std::move(run), {}, prediction->run->rules);
  } catch (const std::exception& e) {
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

PredictionJob::PredictionJob(QObject* parent) : QObject(parent) {}

PredictionJob::~PredictionJob() = default;

void PredictionJob::start(std::shared_ptr<const LoadedRun> run, const std::vector<double>& sizes) {
  const std::uint64_t id = ++latest_;
  latest_running_ = false;
  if (!run) return;
  latest_running_ = true;
  ++running_;
  // A watcher per start: a superseded start finishes on its own and its result is dropped.
  auto* watcher = new QFutureWatcher<PredictionResult>(this);
  connect(watcher, &QFutureWatcher<PredictionResult>::finished, this, [this, watcher, id] {
    --running_;
    auto result = std::make_shared<const PredictionResult>(watcher->result());
    watcher->deleteLater();
    if (id != latest_) return;
    latest_running_ = false;
    emit predicted(std::move(result));
  });
  watcher->setFuture(
      QtConcurrent::run([run = std::move(run), sizes] { return predictBlocking(run, sizes); }));
}

void PredictionJob::cancel() {
  ++latest_;
  latest_running_ = false;
}

}  // namespace ddpscope::ui
