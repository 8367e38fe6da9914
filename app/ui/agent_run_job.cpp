#include "app/ui/agent_run_job.h"

#include <QDateTime>
#include <QDir>
#include <QTimer>
#include <atomic>

#include "app/ui/loaded_run.h"
#include "app/ui/run_load_job.h"

namespace ddpscope::ui {

namespace {
// A fresh folder for one run: <traces>/<time>-<label>, unique even for runs started together.
QString makeRunFolder(const RunParameters& p, QString* error) {
  static std::atomic<int> counter{0};
  QString label = runLabel(p);
  label.replace(QLatin1Char(' '), QLatin1Char('-'));
  const QString name =
      QStringLiteral("%1-%2-%3")
          .arg(QDateTime::currentDateTime().toString(QStringLiteral("yyyyMMdd-hhmmss")))
          .arg(++counter)
          .arg(label);
  QDir root(settings::tracesFolder());
  if (!root.mkpath(name)) {
    *error = QStringLiteral("cannot create the trace folder %1").arg(root.filePath(name));
    return {};
  }
  return root.filePath(name);
}
}  // namespace

AgentRunJob::AgentRunJob(QObject* parent)
    : QObject(parent), agent_(new AgentProcess(this)), loader_(new RunLoadJob(this)) {
  connect(agent_, &AgentProcess::progress, this, &AgentRunJob::progress);
  connect(agent_, &AgentProcess::finished, this, &AgentRunJob::onAgentFinished);
  connect(loader_, &RunLoadJob::loaded, this, [this](std::shared_ptr<LoadedRun> run) {
    run->name = runLabel(params_);
    run->completeness.producer_error = agent_failure_;
    busy_ = false;
    emit loaded(std::move(run));
    emit finished();
  });
  connect(loader_, &RunLoadJob::failed, this, [this](const QString& message) {
    if (!warning_.isEmpty()) {
      fail(tr("%1\nThe traces it left could not be loaded either: %2").arg(warning_, message));
      return;
    }
    fail(tr("The agent finished but its traces could not be loaded: %1").arg(message));
  });
  connect(loader_, &RunLoadJob::cancelled, this, [this] {
    busy_ = false;
    emit cancelled();
    emit finished();
  });
}

void AgentRunJob::start(const RunParameters& params, bool use_launcher) {
  params_ = params;
  busy_ = true;
  cancelled_ = false;
  command_.clear();
  warning_.clear();
  agent_failure_.clear();
  QString error;
  out_dir_ = makeRunFolder(params, &error);
  if (out_dir_.isEmpty()) {
    QTimer::singleShot(0, this, [this, error] { fail(error); });
    return;
  }
  const auto command = expandLauncher(use_launcher ? settings::launcherTemplate() : QString(),
                                      settings::agentPath(), agentArguments(params, out_dir_),
                                      params.world_size, settings::hostfile(), out_dir_, &error);
  if (!command) {
    QTimer::singleShot(0, this, [this, error] { fail(error); });
    return;
  }
  command_ = displayCommand(*command);
  emit started(command_);
  agent_->start(*command, out_dir_);
}

void AgentRunJob::cancel() {
  if (!busy_) return;
  cancelled_ = true;
  if (agent_->running()) {
    agent_->cancel();
  } else {
    loader_->cancel();
  }
}

void AgentRunJob::onAgentFinished(const AgentOutcome& outcome) {
  if (outcome.cancelled || cancelled_) {
    // A cancelled run leaves no half-written folder behind (the folder is ours, made for it).
    QDir(out_dir_).removeRecursively();
    busy_ = false;
    emit cancelled();
    emit finished();
    return;
  }
  if (!outcome.ok()) {
    const QString message =
        tr("The agent failed: %1\nCommand: %2").arg(outcome.describe(), outcome.command);
    // What it wrote before failing (each trace file is written whole or not at all) is loaded and
    // shown as incomplete; nothing written, nothing opened.
    const bool has_traces =
        !QDir(out_dir_)
             .entryList({QStringLiteral("*.json"), QStringLiteral("*.json.gz")}, QDir::Files)
             .isEmpty();
    if (load_partial_ && !outcome.failed_to_start && has_traces) {
      warning_ = message;
      agent_failure_ = outcome.describe();
      emit loading();
      loader_->start({out_dir_});
      return;
    }
    QDir().rmdir(out_dir_);  // the folder made for the run, when the agent left nothing in it
    fail(message);
    return;
  }
  emit loading();
  loader_->start({out_dir_});
}

void AgentRunJob::fail(const QString& message) {
  busy_ = false;
  emit failed(message);
  emit finished();
}

}  // namespace ddpscope::ui
