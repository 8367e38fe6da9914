#pragma once
// Loads a run off the GUI thread (loadRun + analysis + timeline model) with progress and cancel.
// Each start gets an id; the result of a job that was superseded or cancelled is dropped.

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>
#include <utility>

#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

struct RunLoadResult {
  std::shared_ptr<LoadedRun> run;  // null on failure or cancel
  QString error;                   // a message a user can act on
  bool cancelled = false;
  // When some of the run's files could not be read (trace::UnreadableRunFiles): how many were
  // read and not; the run can be loaded without them (skip_unreadable).
  std::size_t read_files = 0, unreadable_files = 0;
};

// Synchronous: what the worker thread runs (also used by --export). `skip_unreadable`: leave out
// the files that cannot be read (trace::RunLoadOptions::skip_unreadable).
RunLoadResult loadRunBlocking(const QStringList& paths, const std::atomic<bool>* cancel = nullptr,
                              std::function<void(double)> progress = {},
                              bool skip_unreadable = false);

class RunLoadJob : public QObject {
  Q_OBJECT
 public:
  explicit RunLoadJob(QObject* parent = nullptr);
  ~RunLoadJob() override;

  void start(const QStringList& paths, bool skip_unreadable = false);
  void cancel();
  bool busy() const { return busy_; }
  // Of the last job that failed because some of its files could not be read: how many were read
  // and not (both 0 for any other failure).
  std::pair<std::size_t, std::size_t> lastUnreadable() const { return last_unreadable_; }

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
  std::pair<std::size_t, std::size_t> last_unreadable_{0, 0};
};

}  // namespace ddpscope::ui
