#pragma once
// The run panel (left column, under the runs list): the agent's knobs, Run / Cancel, progress from
// the agent's JSON lines, the exact command and, for a failed run, its exit status and the tail of
// its stderr. A finished run opens as a new run in the session; nothing already open is touched.

#include <QWidget>
#include <memory>

#include "app/ui/app_settings.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QProgressBar;
class QPushButton;
class QSpinBox;
class QVBoxLayout;

namespace ddpscope::ui {

class AgentProcess;
class AgentRunJob;
class Session;

class RunPanel : public QWidget {
  Q_OBJECT
 public:
  explicit RunPanel(Session* session, QWidget* parent = nullptr);
  ~RunPanel() override;

  RunParameters parameters() const;
  void setParameters(const RunParameters& p);
  // Through the launcher template of the settings (multi-node), when one is set.
  bool useLauncher() const;
  void setUseLauncher(bool on);

  void startRun();
  void cancelRun();
  // Sets the knobs to those the current run was made with (a run the agent made); false, with
  // the reason in the status line, when it has none to give.
  bool takeCurrentRunsSettings();
  QPushButton* fromRunButton() const { return from_run_; }
  bool busy() const;

  // What the panel shows, for tests.
  QString lastError() const { return last_error_; }
  QString lastCommand() const { return last_command_; }
  QString statusText() const;
  QPushButton* runButton() const { return run_; }
  QPushButton* cancelButton() const { return cancel_; }
  QProgressBar* progressBar() const { return progress_; }
  QComboBox* backendBox() const { return backend_; }
  // Finished CUDA probe: true when the agent can run on a GPU here.
  bool cudaAvailable() const { return cuda_available_; }
  bool probing() const { return probe_ != nullptr; }

  // Re-reads the launcher setting (after the settings dialog).
  void refreshFromSettings();

 signals:
  void runFinished(bool ok);
  void sweepRequested();

 private:
  QFormLayout* buildForm();  // the agent's knobs
  // Run, Cancel and Sweep… (returned), the progress bar, the status and the command line.
  QPushButton* buildControls(QVBoxLayout* layout);
  void connectJob();  // the job's progress and outcome, shown here
  void showEvent(QShowEvent* event) override;
  void probeCuda();
  void setBusy(bool busy);
  void showStatus(const QString& text, bool error);
  void updateFromRunButton();  // enabled while the current run has the agent's settings

  Session* session_;
  AgentRunJob* job_;
  AgentProcess* probe_ = nullptr;
  QString probe_dir_;
  QComboBox* backend_;
  QSpinBox* world_;
  QDoubleSpinBox* bucket_;
  QDoubleSpinBox* first_bucket_;
  QCheckBox* overlap_;
  QComboBox* fusion_;
  QComboBox* model_;
  QSpinBox* layers_;
  QSpinBox* hidden_;
  QSpinBox* steps_;
  QCheckBox* launcher_;
  QPushButton* run_;
  QPushButton* cancel_;
  QPushButton* from_run_;
  QProgressBar* progress_;
  QLabel* status_;
  QLabel* command_;
  QString last_error_;
  QString last_command_;
  bool cuda_available_ = false;
  bool probed_ = false;
};

}  // namespace ddpscope::ui
