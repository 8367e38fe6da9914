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
  bool busy_ = false;
  bool cancelled_ = false;
};

}  // namespace ddpscope::ui
