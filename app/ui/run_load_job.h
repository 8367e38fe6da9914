#pragma once
// Loads a run off the GUI thread (loadRun + analysis + timeline model) with progress and cancel.
// Each start gets an id; the result of a job that was superseded or cancelled is dropped.

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>

#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

struct RunLoadResult {
  std::shared_ptr<LoadedRun> run;  // null on failure or cancel
  QString error;                   // a message a user can act on
  bool cancelled = false;
};

// Synchronous: what the worker thread runs (also used by --export).
RunLoadResult loadRunBlocking(const QStringList& paths, const std::atomic<bool>* cancel = nullptr,
                              std::function<void(double)> progress = {});

class RunLoadJob : public QObject {
  Q_OBJECT
 public:
  explicit RunLoadJob(QObject* parent = nullptr);
  ~RunLoadJob() override;

  void start(const QStringList& paths);
  void cancel();
  bool busy() const { return busy_; }

 signals:
  void started(const QStringList& paths);
  void progress(double fraction);
  void loaded(std::shared_ptr<ddpscope::ui::LoadedRun> run);
  void failed(const QString& message);
  void cancelled();
  void finished();

 private:
  void onFinished();

  QFutureWatcher<RunLoadResult> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  std::uint64_t job_id_ = 0;
  std::uint64_t running_id_ = 0;
  bool busy_ = false;
};

}  // namespace ddpscope::ui
