#include "app/ui/digest_job.h"

#include <QElapsedTimer>
#include <QFileInfo>
#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent>
#include <stdexcept>

#include "tracer/format/run_loader.h"

namespace ddpscope::ui {

DigestResult openDigestBlocking(const QStringList& paths, bool make,
                                std::function<void(double)> progress,
                                const std::atomic<bool>* cancel) {
  DigestResult out;
  QElapsedTimer clock;
  clock.start();
  try {
    if (paths.isEmpty())
      throw std::runtime_error(make ? "no trace files or run folders given to digest"
                                    : "no digest file given to read");
    if (!make) {
      const QString path = paths.value(0);
      out.name = QFileInfo(path).fileName();
      out.file = path;
      out.folders = {QFileInfo(path).absolutePath()};
      out.digest =
          std::make_shared<const analysis::Digest>(analysis::readDigest(path.toStdString()));
      out.seconds = static_cast<double>(clock.elapsed()) / 1000.0;
      return out;
    }
    std::vector<std::string> inputs;
    for (const auto& p : paths)
      inputs.push_back(p.toStdString());
    const auto files = trace::expandTracePaths(inputs);
    if (files.empty()) throw std::runtime_error("no trace files in " + inputs.front());
    // The digest names files without their folder: they are looked for in the folders they
    // came from.
    for (const auto& f : files) {
      const QString folder = QFileInfo(QString::fromStdString(f)).absolutePath();
      if (!out.folders.contains(folder)) out.folders << folder;
    }
    out.name = paths.size() == 1 ? QFileInfo(paths.front()).fileName()
                                 : QObject::tr("%1 paths").arg(paths.size());
    analysis::DigestOptions options;
    options.cancel = cancel;
    if (progress)
      options.progress = [progress](std::size_t done, std::size_t total) {
        progress(total ? static_cast<double>(done) / static_cast<double>(total) : 1.0);
      };
    const std::string json = analysis::digestRun(inputs, options);
    out.digest = std::make_shared<const analysis::Digest>(
        analysis::parseDigest(json, out.name.toStdString()));
    out.seconds = static_cast<double>(clock.elapsed()) / 1000.0;
  } catch (const std::exception& e) {
    out.digest.reset();
    out.error = QString::fromStdString(e.what());
  }
  return out;
}

DigestJob::DigestJob(QObject* parent) : QObject(parent) {
  connect(&watcher_, &QFutureWatcher<DigestResult>::finished, this, &DigestJob::onFinished);
}

DigestJob::~DigestJob() {
  if (cancel_) cancel_->store(true);
  watcher_.waitForFinished();  // only the files being read
}

void DigestJob::start(const QStringList& paths, bool make) {
  // A digest being made is cancelled: it stops before its next file and its result is dropped.
  if (cancel_) cancel_->store(true);
  watcher_.waitForFinished();
  cancel_ = std::make_shared<std::atomic<bool>>(false);
  running_id_ = ++job_id_;
  busy_ = true;
  emit started(paths, make);
  const auto id = running_id_;
  QPointer<DigestJob> self(this);
  auto report = [self, id](double f) {
    QMetaObject::invokeMethod(
        self.data(),
        [self, id, f] {
          if (self && self->running_id_ == id && self->busy_) emit self->progress(f);
        },
        Qt::QueuedConnection);
  };
  watcher_.setFuture(QtConcurrent::run([paths, make, report, id, cancel = cancel_] {
    DigestResult r = openDigestBlocking(paths, make, report, cancel.get());
    r.job = id;
    return r;
  }));
}

void DigestJob::onFinished() {
  if (!busy_ || !watcher_.isFinished()) return;
  const DigestResult r = watcher_.result();
  if (r.job != running_id_) return;  // a superseded job's
  busy_ = false;
  if (r.digest) {
    emit opened(r);
  } else {
    emit failed(r.error);
  }
  emit finished();
}

}  // namespace ddpscope::ui
