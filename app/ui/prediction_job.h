#pragma once
// The Sweep tab's what-if prediction (docs/WHATIF.md) for one loaded run, off the GUI thread:
// the predictor's model of the run, the replay of each bucket size and the recommendation
// (analysis::predictWhatIf, analysis::recommendWhatIf). Each start gets an id; only the latest
// start's result is delivered, the result of a superseded start is dropped.

#include <QObject>
#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "app/analysis/whatif.h"
#include "app/analysis/whatif_summary.h"

namespace ddpscope::ui {

struct LoadedRun;

struct PredictionResult {
  std::shared_ptr<const LoadedRun> run;  // the run predicted for
  std::vector<double> sizes;             // the bucket sizes asked for (MiB, 0 = per tensor)
  analysis::WhatIfResult whatif;
  std::optional<analysis::WhatIfRecommendation> recommendation;
  QString error;  // the predictor failed (an exception's message); "" otherwise
  double seconds = 0;
};

// Synchronous: what the worker thread runs. The run's activities are taken again with the
// rules its analysis used (a LoadedRun keeps only its overlap sets), so the model is the one
// `ddpscope-cli predict` builds for the same files and rules.
PredictionResult predictBlocking(std::shared_ptr<const LoadedRun> run,
                                 const std::vector<double>& sizes);

// A predicted size opened as a run: analysis::predictedRun of the prediction's model at
// `bucket_mb` (the other settings as predicted), analysed like a loaded run (prepareRun, with
// the recorded run's rules) and named "<run> predicted at 100 MiB". Runs on any thread.
struct PredictedRunResult {
  std::shared_ptr<LoadedRun> run;
  QString error;  // why it could not be made ("" when run is set)
};
PredictedRunResult predictedRunBlocking(std::shared_ptr<const PredictionResult> prediction,
                                        double bucket_mb);

class PredictionJob : public QObject {
  Q_OBJECT
 public:
  explicit PredictionJob(QObject* parent = nullptr);
  ~PredictionJob() override;

  // Predicts for `run` (null: drops any result still to come and predicts nothing).
  void start(std::shared_ptr<const LoadedRun> run, const std::vector<double>& sizes);
  // Drops the result of the running start, if any.
  void cancel();
  bool busy() const { return running_ > 0 && latest_running_; }
  // Whether any start is still computing (a superseded one holds its run until it ends).
  bool anyRunning() const { return running_ > 0; }

 signals:
  void predicted(std::shared_ptr<const ddpscope::ui::PredictionResult> result);

 private:
  std::uint64_t latest_ = 0;
  int running_ = 0;
  bool latest_running_ = false;
};

}  // namespace ddpscope::ui
