#pragma once
// One agent run from parameters to a loaded run: makes a fresh trace folder under the traces
// folder, starts the agent (directly or through the launcher template) with AgentProcess, then
// loads the folder with RunLoadJob. The run panel and the sweep both use it.

#include <QObject>
#include <QString>
#include <memory>

#include "app/ui/agent_process.h"
#include "app/ui/app_settings.h"

namespace ddpscope::ui {

struct LoadedRun;
class RunLoadJob;

class AgentRunJob : public QObject {
  Q_OBJECT
 public:
  explicit AgentRunJob(QObject* parent = nullptr);

  // use_launcher: through settings::launcherTemplate() (when set). Emits exactly one of loaded,
  // failed or cancelled, then finished.
  void start(const RunParameters& params, bool use_launcher);
  // When on, an agent that fails (an exit status, a crash) after writing traces still has them
  // loaded: `loaded` comes with warning() set to the failure, and the run is marked incomplete
  // (LoadedRun::completeness.producer_error). Off (the sweep): a failed run is only `failed`.
  void setLoadPartialRuns(bool on) { load_partial_ = on; }
  // The failure of the agent whose partial traces were just loaded ("" when it succeeded).
  QString warning() const { return warning_; }
  void cancel();
  bool busy() const { return busy_; }
  const RunParameters& parameters() const { return params_; }
  QString command() const { return command_; }  // the exact command, as displayed
  QString outDir() const { return out_dir_; }

 signals:
  void started(const QString& command);
  void progress(int step, int steps);
  void loading();
  void loaded(std::shared_ptr<ddpscope::ui::LoadedRun> run);
  void failed(const QString& message);
  void cancelled();
  void finished();

 private:
  void onAgentFinished(const AgentOutcome& outcome);
  void fail(const QString& message);

  AgentProcess* agent_;
  RunLoadJob* loader_;
  RunParameters params_;
  QString command_;
  QString out_dir_;
  QString warning_;
  QString agent_failure_;  // the agent's outcome, described, while its partial traces load
  bool load_partial_ = false;
  bool busy_ = false;
  bool cancelled_ = false;
};

}  // namespace ddpscope::ui
