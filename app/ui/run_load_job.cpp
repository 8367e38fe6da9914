#include "app/ui/run_load_job.h"

#include <QElapsedTimer>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent>

#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"

namespace ddpscope::ui {

RunLoadResult loadRunBlocking(const QStringList& paths, const std::atomic<bool>* cancel,
                              std::function<void(double)> progress, bool skip_unreadable) {
  RunLoadResult out;
  QElapsedTimer clock;
  clock.start();
  try {
    std::vector<std::string> files;
    for (const auto& p : paths)
      files.push_back(p.toStdString());
    trace::RunLoadOptions options;
    options.cancel = cancel;
    options.skip_unreadable = skip_unreadable;
    if (progress) options.progress = [&](double f) { progress(0.9 * f); };
    trace::Run run = trace::loadRun(files, options);
    if (cancel && cancel->load()) throw trace::LoadCancelled();
    out.run = prepareRun(std::move(run), paths);
    out.run->load_seconds = static_cast<double>(clock.elapsed()) / 1000.0;
    if (progress) progress(1.0);
  } catch (const trace::LoadCancelled&) {
    out.cancelled = true;
  } catch (const trace::UnreadableRunFiles& e) {
    out.error = QString::fromStdString(e.what());
    out.read_files = e.read;
    out.unreadable_files = e.unreadable;
  } catch (const std::exception& e) {
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

RunLoadJob::RunLoadJob(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<RunLoadResult>::finished, this, &RunLoadJob::onFinished);
}

RunLoadJob::~RunLoadJob() {
  if (cancel_) cancel_->store(true);
  watcher_.waitForFinished();
}

void RunLoadJob::start(const QStringList& paths, bool skip_unreadable) {
  if (busy_) cancel();
  watcher_.waitForFinished();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  running_id_ = ++job_id_;
  busy_ = true;
  emit started(paths);
  const auto id = running_id_;
  auto flag = cancel_;
  QPointer<RunLoadJob> self(this);
  auto report = [self, id](double f) {
    // From worker threads: hop to the GUI thread; drop reports of a superseded job.
    QMetaObject::invokeMethod(
        self.data(),
        [self, id, f] {
          if (self && self->running_id_ == id && self->busy_) emit self->progress(f);
        },
        Qt::QueuedConnection);
  };
  watcher_.setFuture(QtConcurrent::run([paths, flag, report, skip_unreadable] {
    return loadRunBlocking(paths, flag.get(), report, skip_unreadable);
  }));
}

void RunLoadJob::cancel() {
  if (cancel_) cancel_->store(true);
}

void RunLoadJob::onFinished() {
  if (!busy_) return;  // the emptied future's finished(), after the result was delivered
  busy_ = false;
  RunLoadResult r = watcher_.result();
  // A result left in the finished future would keep the run alive after the user closes it:
  // the watcher lets go of it once its finished() has been handled (not from inside it).
  QMetaObject::invokeMethod(
      this,
      [this] {
        if (!busy_) watcher_.setFuture(QFuture<RunLoadResult>());
      },
      Qt::QueuedConnection);
  if (r.cancelled || (cancel_ && cancel_->load())) {
    emit cancelled();
  } else if (r.run) {
    emit loaded(r.run);
  } else {
    last_unreadable_ = {r.read_files, r.unreadable_files};
    emit failed(r.error);
  }
  emit finished();
}

}  // namespace ddpscope::ui
