#include "app/ui/agent_process.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <QJsonDocument>
#include <QJsonObject>
#include <QTimer>

namespace ddpscope::ui {

QString describeSignal(int signal) {
  const char* name = ::sigabbrev_np(signal);
  const char* what = ::sigdescr_np(signal);
  QString text = QStringLiteral("signal %1").arg(signal);
  if (name && what)
    text += QStringLiteral(" (SIG%1, %2)")
                .arg(QString::fromLatin1(name), QString::fromLocal8Bit(what).toLower());
  return text;
}

QString AgentOutcome::describe() const {
  QString what;
  if (cancelled) {
    what = QStringLiteral("cancelled");
  } else if (failed_to_start) {
    what = QStringLiteral("could not start %1").arg(command);
  } else if (crashed) {
    what = QStringLiteral("the agent crashed: killed by %1").arg(describeSignal(exit_code));
  } else if (exit_code == 0) {
    what = QStringLiteral("finished");
  } else {
    what = QStringLiteral("exit status %1").arg(exit_code);
    if (exit_code == 2) what += QStringLiteral(" (bad arguments)");
    if (exit_code == 3) what += QStringLiteral(" (backend unavailable)");
  }
  const QString tail = stderr_tail.trimmed();
  return tail.isEmpty() ? what : what + QStringLiteral(":\n") + tail;
}

AgentProcess::AgentProcess(QObject* parent)
    : QObject(parent), process_(new QProcess(this)), kill_timer_(new QTimer(this)) {
  kill_timer_->setSingleShot(true);
  connect(kill_timer_, &QTimer::timeout, this, [this] { signalGroup(SIGKILL); });
  // A group of its own: cancel signals the launcher and everything it started.
  process_->setChildProcessModifier([] { ::setpgid(0, 0); });
  connect(process_, &QProcess::readyReadStandardOutput, this, &AgentProcess::readStdout);
  connect(process_, &QProcess::readyReadStandardError, this, &AgentProcess::readStderr);
  connect(process_, &QProcess::finished, this, &AgentProcess::onFinished);
  connect(process_, &QProcess::errorOccurred, this, &AgentProcess::onError);
}

AgentProcess::~AgentProcess() {
  if (running()) {
    disconnect(process_, nullptr, this, nullptr);
    signalGroup(SIGKILL);
    process_->waitForFinished(3000);
  }
}

void AgentProcess::start(const LaunchCommand& command, const QString& out_dir) {
  command_ = command;
  outcome_ = AgentOutcome{};
  outcome_.command = displayCommand(command);
  outcome_.out_dir = out_dir;
  stdout_buffer_.clear();
  done_ = false;
  pgid_ = 0;
  process_->start(command.program, command.arguments, QIODevice::ReadOnly);
  if (process_->waitForStarted(10000)) pgid_ = process_->processId();
}

bool AgentProcess::running() const {
  return process_->state() != QProcess::NotRunning;
}

void AgentProcess::signalGroup(int sig) {
  if (pgid_ > 0) ::kill(-static_cast<pid_t>(pgid_), sig);
}

void AgentProcess::cancel() {
  if (!running() || outcome_.cancelled) return;
  outcome_.cancelled = true;
  signalGroup(SIGTERM);
  kill_timer_->start(kKillGraceMs);
}

void AgentProcess::readStdout() {
  stdout_buffer_ += process_->readAllStandardOutput();
  for (qsizetype nl = stdout_buffer_.indexOf('\n'); nl >= 0; nl = stdout_buffer_.indexOf('\n')) {
    const QByteArray line = stdout_buffer_.left(nl).trimmed();
    stdout_buffer_.remove(0, nl + 1);
    if (!line.startsWith('{')) continue;
    const QJsonObject o = QJsonDocument::fromJson(line).object();
    if (o.value(QStringLiteral("event")).toString() == QLatin1String("progress"))
      emit progress(o.value(QStringLiteral("step")).toInt(),
                    o.value(QStringLiteral("steps")).toInt());
  }
}

void AgentProcess::readStderr() {
  outcome_.stderr_tail += QString::fromLocal8Bit(process_->readAllStandardError());
  if (outcome_.stderr_tail.size() > kStderrTailChars) {
    outcome_.stderr_tail = outcome_.stderr_tail.right(kStderrTailChars);
    // Start at a line boundary when one is near.
    const qsizetype nl = outcome_.stderr_tail.indexOf(QLatin1Char('\n'));
    if (nl >= 0 && nl < 200) outcome_.stderr_tail.remove(0, nl + 1);
  }
}

void AgentProcess::onFinished(int exit_code, QProcess::ExitStatus status) {
  if (done_) return;
  done_ = true;
  readStdout();
  readStderr();
  kill_timer_->stop();
  // Children the launcher left behind (its group) end with it.
  if (outcome_.cancelled) signalGroup(SIGKILL);
  outcome_.exit_code = exit_code;
  outcome_.crashed = status == QProcess::CrashExit && !outcome_.cancelled;
  emit finished(outcome_);
}

void AgentProcess::onError(QProcess::ProcessError error) {
  if (error != QProcess::FailedToStart || done_) return;
  done_ = true;
  outcome_.failed_to_start = true;
  outcome_.stderr_tail = process_->errorString();
  // Not from inside start(): callers see every outcome from the event loop.
  QTimer::singleShot(0, this, [this] { emit finished(outcome_); });
}

}  // namespace ddpscope::ui
