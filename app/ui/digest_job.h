#pragma once
// Opening a digest, off the GUI thread: reading a digest file, or making the digest of a run's
// trace files (analysis::digestRun: a file at a time per core, none kept) when the run is too
// big to load whole. Each start gets an id; a superseded job is cancelled (it stops before its
// next file) and its result dropped; so is a job still running when the DigestJob is destroyed.

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>

#include "app/analysis/digest_reader.h"

namespace ddpscope::ui {

struct DigestResult {
  std::shared_ptr<const analysis::Digest> digest;  // null on failure
  QString name;           // the digest file, or the run folder it was made of
  QString file;           // the digest file read; "" for a digest made of traces
  QStringList folders;    // where the ranks' trace files are looked for
  QString error;          // a message naming the file at fault
  double seconds = 0;     // how long reading (or making) it took
  std::uint64_t job = 0;  // the DigestJob start it answers
};

// Synchronous: what the worker runs. `make`: paths are a run's trace files or folders, to digest;
// otherwise paths holds one digest file to read. `cancel`: when set, making stops before the
// next file (an error result, "the digest was cancelled").
DigestResult openDigestBlocking(const QStringList& paths, bool make,
                                std::function<void(double)> progress = {},
                                const std::atomic<bool>* cancel = nullptr);

class DigestJob : public QObject {
  Q_OBJECT
 public:
  explicit DigestJob(QObject* parent = nullptr);
  ~DigestJob() override;

  void read(const QString& digest_file) { start({digest_file}, false); }
  void make(const QStringList& run_paths) { start(run_paths, true); }
  bool busy() const { return busy_; }

 signals:
  void started(const QStringList& paths, bool make);
  void progress(double fraction);
  void opened(const ddpscope::ui::DigestResult& result);
  void failed(const QString& message);
  void finished();

 private:
  void start(const QStringList& paths, bool make);
  void onFinished();

  QFutureWatcher<DigestResult> watcher_;
  std::shared_ptr<std::atomic<bool>> cancel_;  // the running job's
  std::uint64_t job_id_ = 0;
  std::uint64_t running_id_ = 0;
  bool busy_ = false;
};

}  // namespace ddpscope::ui
