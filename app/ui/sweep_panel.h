#pragma once
// The Sweep tab: runs the agent once per bucket size (the run panel's other settings; simulated
// runs two at a time), plots step time, exposed communication and overlap % against bucket size on
// a log axis (0 MB = "per tensor" at the left), marks the best size and states the recommendation
// (analysis::recommendBucketSize) with its gains over the current size and over DDP's 25 MB.
// For the session's current run, whatever made it (the agent, an imported PyTorch trace), it
// also draws the predicted U-curve of step time against bucket size with its band (the what-if
// replay, docs/WHATIF.md; computed off the GUI thread by PredictionJob), marks the recorded
// configuration and states the predicted recommendation (analysis::recommendWhatIf), or the
// predictor's notes when it cannot predict. The chart, rendered off-screen, is also the design
// report's predicted figure.

#include <QWidget>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include "app/analysis/sweep.h"
#include "app/ui/app_settings.h"
#include "app/ui/plot_export.h"

class QCPCurve;
class QCPItemText;
class QComboBox;
class QCustomPlot;
class QLabel;
class QPen;
class QLineEdit;
class QProgressBar;
class QPushButton;

namespace ddpscope::ui {

class AgentRunJob;
class PredictionJob;
struct PredictionResult;
class Session;
struct LoadedRun;

class SweepPanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  // `base` gives the run panel's current parameters (all but the bucket size).
  SweepPanel(Session* session, std::function<RunParameters()> base, QWidget* parent = nullptr);

  std::vector<double> sizes() const;  // parsed from the sizes field
  void setSizes(const std::vector<double>& mb);
  void start();
  void cancel();
  // The session's open runs set side by side by the bucket size each records, as measured points
  // (analysis::measuredSweep, as `ddpscope-cli sweep`): the chart and the recommendation, with
  // the sizes the runs do not tell apart and the like-for-like warning. Predicted runs, runs that
  // do not record their size (an imported trace) and runs without steps are left out and named.
  // False, the line above the chart saying why, while a sweep runs, with fewer than two runs
  // left, or with two at one size.
  bool sweepOpenRuns();
  QPushButton* sweepOpenButton() const { return sweep_open_; }
  // The line above the chart: the recommendation, the sweep's progress, or why there is none.
  QString lineText() const;
  bool busy() const { return !active_.empty() || !queue_.empty(); }
  // How many runs go at once: 2 for simulated runs, 1 on a real backend.
  int parallelism() const;

  QCustomPlot* chart() const { return chart_; }
  // The finished sweep, sorted by bucket size.
  const std::vector<analysis::SweepPoint>& points() const { return points_; }
  const std::optional<analysis::SweepRecommendation>& recommendation() const { return rec_; }
  double currentMb() const { return current_mb_; }
  QString recommendationText() const;
  // The prediction for the current run: null before the first one arrives and while none is
  // loaded; predictionPending() while one is computed for the current run or sizes.
  const std::shared_ptr<const PredictionResult>& prediction() const { return prediction_; }
  bool predictionPending() const;
  // Whether a prediction, current or superseded, is still being computed.
  bool predictionRunning() const;
  // The prediction of `run` for a design report: the one shown when it is of `run`, else the
  // one under way (started when none is: after cancelPrediction, or not yet asked), waited for
  // in a local event loop, so the window stays responsive while PredictionJob computes it off
  // the GUI thread; a progress dialog offers to cancel it. Null when `run` is not the session's
  // current run, or the prediction was cancelled or superseded (the run or the sizes changed)
  // while it was awaited: *why then says so. A failed prediction is returned (its error says
  // why). One wait at a time (awaitingPrediction()).
  std::shared_ptr<const PredictionResult> awaitPrediction(
      const std::shared_ptr<const LoadedRun>& run, QString* why);
  bool awaitingPrediction() const { return awaiting_; }
  // Drops the prediction under way: its result is never shown, the line above the chart says it
  // was cancelled; a change of run or sizes, or awaitPrediction, starts another.
  void cancelPrediction();
  // The predicted recommendation in one sentence, or why nothing could be predicted.
  QString predictionText() const;
  // The notes of the predictor shown under it ("" when none).
  QString predictionNotes() const;
  // The predicted step time (ms) per predicted size (x as chartX), its band (a closed outline:
  // the lows left to right, then the highs right to left) and the recorded configuration (one
  // point at its size, or a line across the chart at its step time when the trace does not say
  // its bucket cap). Empty while there is no prediction.
  QCPCurve* predictedCurve() const { return predicted_curve_; }
  QCPCurve* predictedBand() const { return predicted_band_; }
  QCPCurve* recordedCurve() const { return recorded_curve_; }
  // The predicted sizes whose step is host-bound, and the predicted best (scatter only).
  QCPCurve* hostBoundCurve() const { return host_bound_curve_; }
  QCPCurve* predictedBestCurve() const { return predicted_best_curve_; }
  QStringList errors() const { return errors_; }
  // Opens the prediction at `bucket_mb` (one of the predicted sizes) as a run of the session,
  // made off the GUI thread (predictedRunBlocking) and added like a loaded run (it becomes
  // current). False when there is no such prediction or one is being opened.
  bool openPredictionAsRun(double bucket_mb);
  bool openingPrediction() const { return opening_; }
  QString openError() const { return open_error_; }
  // The predicted sizes the "Open prediction as run" button offers, and its button.
  QComboBox* openSizeBox() const { return open_size_; }
  QPushButton* openPredictionButton() const { return open_prediction_; }
  // The chart's x position of a bucket size (0 MB sits left of the smallest positive size).
  double chartX(double mb) const;
  // Writes the chart in the light theme (PNG/SVG/PDF by extension).
  bool exportChart(const QString& path, double scale, QString* error) override;
  bool renderChart(ExportFormat format, double scale, QByteArray* out, QString* error);

 signals:
  void finished(bool ok);
  // A predicted size was opened as a run (null: it could not be made; openError() says why).
  void predictionOpened(std::shared_ptr<const ddpscope::ui::LoadedRun> run);
  // The prediction under way ended: it arrived, was cancelled or was superseded by another.
  void predictionEnded();

 private:
  void launchNext();
  void onJobDone(AgentRunJob* job);
  void finish();
  void replot();
  void plotPoints();          // step time, exposed communication and overlap per size
  void markCurrentAndBest();  // the current size (when not the best) and the best
  // A vertical line at bucket-size position x, its label beside it at label_y (0 top, 1 bottom).
  QCPItemText* addMarker(double x, const QPen& pen, double label_y, Qt::Alignment label_side,
                         const QString& text);
  void addFinishedRunsInOrder(bool all);
  // Starts the prediction for the session's current run at the sizes of the field.
  void predictCurrent();
  void onPredicted(std::shared_ptr<const PredictionResult> result);
  void plotPrediction();  // the predicted curve, its band and the recorded configuration

  Session* session_;
  std::function<RunParameters()> base_;
  QLineEdit* sizes_edit_;
  QPushButton* start_;
  QPushButton* sweep_open_;
  QPushButton* cancel_;
  QProgressBar* progress_;
  QLabel* recommendation_;
  QLabel* prediction_label_;
  QLabel* prediction_notes_;
  QComboBox* open_size_;
  QPushButton* open_prediction_;
  bool opening_ = false;
  QString open_error_;
  void refreshOpenSizes();
  PredictionJob* prediction_job_;
  std::shared_ptr<const PredictionResult> prediction_;
  std::shared_ptr<const LoadedRun> predicted_for_;  // the run of the prediction under way
  std::vector<double> predicted_sizes_;
  bool prediction_cancelled_ = false;
  bool awaiting_ = false;
  QCPCurve* predicted_band_;
  QCPCurve* predicted_curve_;
  QCPCurve* recorded_curve_;
  QCPCurve* host_bound_curve_;
  QCPCurve* predicted_best_curve_;
  QCPItemText* predicted_badge_ = nullptr;  // "PREDICTED …" over the predicted curve
  QCustomPlot* chart_;
  std::deque<double> queue_;
  // Runs open in the session in bucket-size order, whichever of two parallel runs ends first.
  std::vector<double> order_;
  std::map<double, std::shared_ptr<LoadedRun>> finished_runs_;  // null: failed or cancelled
  std::size_t next_to_add_ = 0;
  std::vector<AgentRunJob*> active_;
  RunParameters sweep_base_;
  std::vector<analysis::SweepPoint> points_;
  std::optional<analysis::SweepRecommendation> rec_;
  QStringList errors_;
  double current_mb_ = 25;
  double zero_x_ = 0.25;
  int total_ = 0;
  bool cancelled_ = false;
};

}  // namespace ddpscope::ui
