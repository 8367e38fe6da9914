#pragma once
// One run of ddpscope-agent (or of a launcher that starts it) as a QProcess: an argument list,
// never a shell string; started in its own process group so that Cancel ends the whole group
// (a launcher and every agent it started); progress from the agent's JSON lines on stdout; the tail
// of stderr kept for the error message.

#include <QObject>
#include <QProcess>
#include <QString>

#include "app/ui/app_settings.h"

class QTimer;

namespace ddpscope::ui {

struct AgentOutcome {
  QString command;  // as displayed (displayCommand)
  QString out_dir;
  int exit_code = -1;            // when crashed: the number of the signal that ended it
  bool crashed = false;          // killed by a signal
  bool cancelled = false;        // by cancel()
  bool failed_to_start = false;  // the program could not be started
  QString stderr_tail;           // the last lines of stderr
  bool ok() const { return !cancelled && !crashed && !failed_to_start && exit_code == 0; }
  // "exit status 2: <stderr tail>", "killed by signal 11 (SIGSEGV, segmentation fault)" and the
  // like, for the user.
  QString describe() const;
};

// "signal 11 (SIGSEGV, segmentation fault)".
QString describeSignal(int signal);

class AgentProcess : public QObject {
  Q_OBJECT
 public:
  explicit AgentProcess(QObject* parent = nullptr);
  ~AgentProcess() override;  // ends the process group if still running

  void start(const LaunchCommand& command, const QString& out_dir);
  // Ends the whole process group: SIGTERM, then SIGKILL after a grace period.
  void cancel();
  bool running() const;
  qint64 processGroup() const { return pgid_; }
  const LaunchCommand& command() const { return command_; }

  static constexpr int kStderrTailChars = 2000;
  static constexpr int kKillGraceMs = 1500;

 signals:
  void progress(int step, int steps);
  void finished(const ddpscope::ui::AgentOutcome& outcome);

 private:
  void readStdout();
  void readStderr();
  void onFinished(int exit_code, QProcess::ExitStatus status);
  void onError(QProcess::ProcessError error);
  void signalGroup(int sig);

  QProcess* process_;
  QTimer* kill_timer_;
  LaunchCommand command_;
  AgentOutcome outcome_;
  QByteArray stdout_buffer_;
  qint64 pgid_ = 0;
  bool done_ = false;
};

}  // namespace ddpscope::ui
