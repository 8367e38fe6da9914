#include "app/ui/app_modes.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QSpinBox>
#include <QTabWidget>
#include <QTextStream>
#include <algorithm>
#include <cstdio>
#include <vector>

#include "app/analysis/bucket_steps.h"
#include "app/analysis/digest_reader.h"
#include "app/analysis/run_summary.h"
#include "app/ui/breakdown_panel.h"
#include "app/ui/buckets_panel.h"
#include "app/ui/compare_panel.h"
#include "app/ui/digest_view.h"
#include "app/ui/main_window.h"
#include "app/ui/plot_export.h"
#include "app/ui/run_load_job.h"
#include "app/ui/search_bar.h"
#include "app/ui/session.h"
#include "app/ui/timeline_view.h"

namespace ddpscope::ui {

QString sampleRunPath() {
  // A simulated 4-rank run made by the agent (scripts/make-sample). Installed copy first, then the
  // source tree (running from the build folder).
  for (const char* candidate : {DDPSCOPE_SAMPLE_RUN_INSTALLED, DDPSCOPE_SAMPLE_RUN}) {
    const QString p = QString::fromUtf8(candidate);
    if (QFileInfo::exists(p)) return p;
  }
  const QString next_to_binary =
      QCoreApplication::applicationDirPath() + "/../share/ddpscope/sample";
  return QFileInfo::exists(next_to_binary) ? next_to_binary
                                           : QString::fromUtf8(DDPSCOPE_SAMPLE_RUN);
}

bool hasDisplay() {
  return !qEnvironmentVariableIsEmpty("DISPLAY") ||
         !qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") ||
         !qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM");
}

namespace {
bool skip_unreadable = false;  // --skip-unreadable
}  // namespace

void setSkipUnreadableFiles(bool on) {
  skip_unreadable = on;
}

namespace {
void err(const QString& s) {
  std::fprintf(stderr, "ddpscope: %s\n", s.toLocal8Bit().constData());
}

// Loads synchronously into the window's session; false (message on stderr) on failure.
bool loadInto(MainWindow& window, const QStringList& paths) {
  RunLoadResult r = loadRunBlocking(paths, nullptr, {}, skip_unreadable);
  if (!r.run) {
    err(r.error.isEmpty() ? QStringLiteral("loading was cancelled") : r.error);
    if (r.unreadable_files > 0)
      err(QStringLiteral("%1 of %2 trace files could not be read; --skip-unreadable leaves out "
                         "those files (their ranks then have no trace)")
              .arg(r.unreadable_files)
              .arg(r.read_files + r.unreadable_files));
    return false;
  }
  // Files left out, as asked (--skip-unreadable): named, as the CLI names them, not only counted
  // in the figure's "N of W ranks".
  if (!r.run->run.unreadable_files.empty())
    err(QStringLiteral("warning: ") +
        QString::fromStdString(analysis::unreadableFilesWarning(r.run->run.unreadable_files)));
  window.session()->addRun(r.run);
  return true;
}

void settle(QWidget& w) {
  w.show();
  for (int i = 0; i < 3; ++i) {
    QApplication::processEvents();
    if (auto* mw = qobject_cast<MainWindow*>(&w)) mw->timeline()->plot()->replot();
  }
  QApplication::processEvents();
}

// A window no one watches: no error dialogs, 1600 x 1000, shown, the run in `paths` loaded and
// drawn. False (message on stderr) when it could not be loaded.
bool openUnattended(MainWindow& window, const QStringList& paths) {
  window.setErrorDialogsEnabled(false);
  window.resize(1600, 1000);
  window.show();
  QApplication::processEvents();
  if (!loadInto(window, paths)) return false;
  settle(window);
  return true;
}

// Saves what the window shows to DIR/name and prints the path; false (message on stderr) when it
// could not be written.
bool saveScreenshot(QWidget& window, const QString& dir, const QString& name) {
  const QString path = QDir(dir).filePath(name);
  if (!window.grab().save(path)) {
    err(QStringLiteral("cannot write %1").arg(path));
    return false;
  }
  std::printf("%s\n", path.toLocal8Bit().constData());
  return true;
}

// The Details of rank 0's event at `row` of GPU track `track`, clicked:
// timeline-kernel-details.png.
bool shootKernelDetails(MainWindow& window, const QString& dir, std::size_t track,
                        std::size_t row) {
  auto* session = window.session();
  session->selectBucket(std::nullopt);
  session->setSelection(std::nullopt);
  session->selectEvent(
      EventRef{0, static_cast<std::int32_t>(track), static_cast<std::uint32_t>(row)});
  settle(window);
  // The kernel among its rank's lanes (steps, buckets, compute), not scrolled down to the
  // launching thread the selection opened.
  window.timeline()->revealRank(0);
  settle(window);
  const bool ok = saveScreenshot(window, dir, "timeline-kernel-details.png");
  session->selectEvent(std::nullopt);
  // The click opened host groups and scrolled to them: the next shots start as a run opens.
  window.timeline()->resetHostRows();
  return ok;
}

// Screenshots of a selected bucket of rank 0 (zoomed in, its flows and a measured range), then of
// its allreduce kernel clicked (the Details tab); without a bucket, of rank 0's first
// communication kernel (else its first GPU event) clicked. True when every picture was written.
bool shootSelectedBucket(MainWindow& window, const QString& dir) {
  auto* session = window.session();
  const auto run = session->current();
  const auto& rr = run->report.ranks.front();
  // The third bucket (or the last) of the steps the figures cover: a row of the Buckets table.
  std::vector<std::size_t> covered;
  for (std::size_t i = 0; i < rr.buckets.size(); ++i)
    if (analysis::inSelection(run->summary.selection, rr.buckets[i].step)) covered.push_back(i);
  if (covered.empty()) {
    err(QStringLiteral(
        "no bucket in the steps the figures cover: timeline-bucket-selected.png not written"));
    const auto& rank = run->run.ranks.front();
    std::optional<std::pair<std::size_t, std::size_t>> first_gpu, first_comm;
    for (std::size_t ti = 0; ti < rank.tracks.size() && !first_comm; ++ti) {
      const auto& t = rank.tracks[ti];
      if (t.kind != trace::TrackKind::Gpu) continue;
      for (std::size_t i = 0; i < t.size() && !first_comm; ++i) {
        if (!trace::occupiesGpu(t.kind_of[i])) continue;
        if (!first_gpu) first_gpu = {ti, i};
        if (run->rules->classify(t.kind_of[i], rank.names[t.name[i]], t.stream()).cls ==
            analysis::ActivityClass::Communication)
          first_comm = {ti, i};
      }
    }
    const auto shot = first_comm ? first_comm : first_gpu;
    if (!shot) {
      err(QStringLiteral("no GPU event on rank 0: timeline-kernel-details.png not written"));
      return true;
    }
    return shootKernelDetails(window, dir, shot->first, shot->second);
  }
  const std::size_t pick = covered[std::min<std::size_t>(covered.size() - 1, 2)];
  const auto& b = rr.buckets[pick];
  session->setViewRange({b.ready_ns - 4'000'000, b.end_ns + 6'000'000});
  session->setSelection(TimeRange{b.start_ns - 1'000'000, b.end_ns + 500'000});
  session->selectBucket(BucketKey{0, static_cast<std::int32_t>(pick)});
  window.tabs()->setCurrentWidget(window.buckets());
  settle(window);
  bool ok = saveScreenshot(window, dir, "timeline-bucket-selected.png");
  const auto& rank = run->run.ranks.front();
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu || t.device() != b.device || t.stream() != b.stream)
      continue;
    const auto it = std::lower_bound(t.start.begin(), t.start.end(), b.start_ns);
    if (it == t.start.end()) continue;
    ok = shootKernelDetails(window, dir, ti, static_cast<std::size_t>(it - t.start.begin())) && ok;
  }
  session->setSelection(std::nullopt);
  return ok;
}

// False (message on stderr) when FILE's name says no format an export writes.
bool exportNameOk(const QString& file) {
  if (exportFormatFor(file)) return true;
  err(QStringLiteral("cannot export to %1: the file name must end in .png, .svg or .pdf")
          .arg(file));
  return false;
}

// Writes the window's `what` (MainWindow::exportView) to FILE and prints its path: the exit status.
int exportAndSay(MainWindow& window, const QString& what, const QString& file, double scale) {
  QString error;
  if (!window.exportView(what, file, scale, &error)) {
    err(error);
    return 1;
  }
  std::printf("%s\n", QFileInfo(file).absoluteFilePath().toLocal8Bit().constData());
  return 0;
}
}  // namespace

namespace {
// The step numbers of a rank in words, for a message (analysis::stepListText: "steps 4–6").
QString stepNumbersText(const std::vector<trace::StepRange>& steps) {
  std::vector<std::int32_t> numbers;
  for (const auto& s : steps)
    numbers.push_back(s.number);
  std::sort(numbers.begin(), numbers.end());
  numbers.erase(std::unique(numbers.begin(), numbers.end()), numbers.end());
  return QString::fromStdString(analysis::stepListText(numbers));
}
}  // namespace

int exportHeadless(const QString& file, const QStringList& paths, double scale,
                   std::optional<int> step) {
  if (!exportNameOk(file)) return 2;
  if (paths.isEmpty()) {
    err(QStringLiteral("--export needs at least one trace file or run folder"));
    return 2;
  }
  MainWindow window;
  if (!openUnattended(window, paths)) return 1;
  if (step) {
    // Step N on every rank (analysis::stepWindow), without the margin "Go to step" adds: the
    // title's window figures are then the step's own.
    const auto run = window.session()->current();
    const auto shown = analysis::stepWindow(run->run, *step);
    if (!shown) {
      std::vector<trace::StepRange> all;  // every rank's: the steps some rank has
      for (const auto& rank : run->run.ranks)
        all.insert(all.end(), rank.steps.begin(), rank.steps.end());
      err(all.empty()
              ? QStringLiteral("--step %1: this run has no step markers (ProfilerStep# ranges): "
                               "export it without --step")
                    .arg(*step)
              : QStringLiteral("--step %1: the ranks of this run have %2; give one of them")
                    .arg(*step)
                    .arg(stepNumbersText(all)));
      return 2;
    }
    window.session()->setViewRange({shown->first, shown->second});
    window.timeline()->searchBar()->stepBox()->setValue(*step);
    settle(window);
  }
  return exportAndSay(window, QStringLiteral("timeline"), file, scale);
}

int exportDigestHeadless(const QString& file, const QString& digest_path, double scale,
                         std::optional<analysis::DigestFigure> figure) {
  if (!exportNameOk(file)) return 2;
  std::shared_ptr<const analysis::Digest> digest;
  try {
    digest =
        std::make_shared<const analysis::Digest>(analysis::readDigest(digest_path.toStdString()));
  } catch (const std::exception& e) {
    err(QString::fromUtf8(e.what()));
    return 1;
  }
  MainWindow window;
  window.setErrorDialogsEnabled(false);
  window.resize(1600, 1000);
  window.show();
  const QFileInfo at(digest_path);
  window.digestView()->setDigest(digest, at.fileName(), {at.absolutePath()});
  if (figure) {
    const auto f = *figure;
    if (!window.digestView()->setFigure(f)) {
      err(QStringLiteral("--figure: %1 has no %2 values (no rank has one in any step): choose "
                         "another figure")
              .arg(at.fileName(), QString::fromUtf8(analysis::digestFigureName(f).data(),
                                                    static_cast<qsizetype>(
                                                        analysis::digestFigureName(f).size()))));
      return 2;
    }
  }
  window.tabs()->setCurrentWidget(window.digestView());
  settle(window);
  return exportAndSay(window, QStringLiteral("chart"), file, scale);
}

int exportCompareHeadless(const QString& file, const QString& a, const QString& b, double scale,
                          std::optional<int> step) {
  if (!exportNameOk(file)) return 2;
  // Each path looked at once (isDigestFile reads its first bytes; a folder is no digest).
  const bool digest_a = analysis::isDigestFile(a.toStdString());
  const bool digest_b = analysis::isDigestFile(b.toStdString());
  if (digest_a || digest_b) {
    // A run digest has no lanes: the chart is the table of figures (and the runs' lines).
    if (step) {
      err(QStringLiteral("--step %1 aligns two runs' lanes at a step, and a run digest has no "
                         "lanes: leave --step out")
              .arg(*step));
      return 2;
    }
    MainWindow window;
    window.setErrorDialogsEnabled(false);
    window.resize(1600, 1000);
    window.show();
    for (const auto& [p, digest] : {std::pair{a, digest_a}, std::pair{b, digest_b}})
      if (!digest && window.openRunIndex({p}) < 0 && !loadInto(window, {p})) return 1;
    window.openForComparison(a, b);  // the digests read there, the runs open already
    settle(window);
    // Each side what was asked for: a digest that could not be read leaves the pickers at their
    // default (the run against itself), which must not be written as the comparison.
    ComparePanel* compare = window.comparePanel();
    const bool a_ok = digest_a ? compare->digestA() != nullptr : compare->runA() != nullptr;
    const bool b_ok = digest_b ? compare->digestB() != nullptr : compare->runB() != nullptr;
    if (!a_ok || !b_ok) {
      err(window.lastError().isEmpty() ? QStringLiteral("could not open the runs to compare")
                                       : window.lastError());
      return 1;
    }
    return exportAndSay(window, QStringLiteral("chart"), file, scale);
  }
  MainWindow window;
  if (!openUnattended(window, {a})) return 1;
  // The same run twice (by any spelling of its path) is compared with itself, loaded once.
  if (window.openRunIndex({b}) < 0 && !loadInto(window, {b})) return 1;
  window.openForComparison(a, b);  // both are open: shown in the Compare tab
  settle(window);
  if (step) {
    ComparePanel* compare = window.comparePanel();
    compare->setStep(*step);
    settle(window);
    if (compare->step() != *step) {
      err(QStringLiteral("--step %1: not a step both runs have (A: %2, B: %3); give one of "
                         "those they share")
              .arg(*step)
              .arg(stepNumbersText(compare->runA()->run.ranks.front().steps),
                   stepNumbersText(compare->runB()->run.ranks.front().steps)));
      return 2;
    }
  }
  return exportAndSay(window, QStringLiteral("chart"), file, scale);
}

int reportHeadless(const QString& dir, const QStringList& paths) {
  if (dir.isEmpty()) {
    err(QStringLiteral("--report needs a folder to write the report into"));
    return 2;
  }
  if (paths.isEmpty()) {
    err(QStringLiteral("--report needs at least one trace file or run folder"));
    return 2;
  }
  MainWindow window;
  if (!openUnattended(window, paths)) return 1;
  QString error;
  if (!window.exportReport(dir, &error)) {
    err(QStringLiteral("report not written: %1").arg(error));
    return 1;
  }
  std::printf("%s\n",
              QDir(dir).absoluteFilePath(QStringLiteral("report.md")).toLocal8Bit().constData());
  return 0;
}

int writeScreenshots(const QString& dir, const QStringList& paths) {
  MainWindow window;
  if (!openUnattended(window, paths)) return 1;
  QDir().mkpath(dir);  // only once there is something to picture
  QString error;
  bool ok = saveScreenshot(window, dir, "main-window.png");
  ok = shootSelectedBucket(window, dir) && ok;
  auto* session = window.session();
  const auto run = session->current();
  // One step of those the figures cover (not the warm-up step they leave out).
  const auto& used = run->summary.selection.used;
  const auto& steps = run->run.ranks.front().steps;
  const auto shown = std::find_if(steps.begin(), steps.end(), [&](const auto& s) {
    return used.empty() || s.number == used.front();
  });
  if (shown != steps.end()) {
    const auto& s = *shown;
    session->setViewRange({s.start, s.end});
    // "Go to step" names the step shown.
    window.timeline()->searchBar()->stepBox()->setValue(s.number);
    window.tabs()->setCurrentIndex(0);
    settle(window);
    ok = saveScreenshot(window, dir, "timeline-one-step.png") && ok;
  } else {
    err(QStringLiteral("no training step in this run: timeline-one-step.png not written"));
  }
  session->selectBucket(std::nullopt);
  session->setSelection(std::nullopt);
  window.timeline()->resetHostRows();
  window.timeline()->fit();
  settle(window);
  // Exports print their paths like the screenshots.
  const auto exportTo = [&](const QString& view, const QString& name) {
    const QString path = QDir(dir).filePath(name);
    if (!window.exportView(view, path, 1.0, &error)) return false;
    std::printf("%s\n", path.toLocal8Bit().constData());
    return true;
  };
  ok = exportTo(QStringLiteral("timeline"), QStringLiteral("export-timeline.png")) && ok;
  // The Buckets chart of a run with buckets (a run of point-to-point transfers has none: an empty
  // chart says nothing).
  const auto& ranks = session->current()->report.ranks;
  if (std::any_of(ranks.begin(), ranks.end(),
                  [](const analysis::RankReport& r) { return !r.buckets.empty(); })) {
    window.tabs()->setCurrentWidget(window.buckets());
    settle(window);
    ok = exportTo(QStringLiteral("chart"), QStringLiteral("export-buckets-chart.png")) && ok;
  } else {
    err(QStringLiteral("no bucket in this run: export-buckets-chart.png not written"));
  }
  // The Steps tab: where each step's time went (a run without steps has no chart there).
  if (steps.empty()) {
    err(QStringLiteral("no training step in this run: steps.png not written"));
  } else {
    window.tabs()->setCurrentWidget(window.breakdownPanel());
    settle(window);
    ok = saveScreenshot(window, dir, "steps.png") && ok;
  }
  if (!error.isEmpty()) err(error);
  return ok ? 0 : 1;
}

int renderWithoutDisplay(const QStringList& paths) {
  MainWindow window;
  if (!openUnattended(window, paths)) return 1;
  const QString name = QFileInfo(paths.front()).completeBaseName().section('.', 0, 0);
  const QString path = QDir(QDir::tempPath()).filePath(QStringLiteral("ddpscope-%1.png").arg(name));
  if (!window.grab().save(path)) {
    err(QStringLiteral("no display, and the view could not be written to %1").arg(path));
    return 1;
  }
  std::printf("ddpscope: no display (DISPLAY/WAYLAND_DISPLAY unset): rendered the view to %s\n",
              path.toLocal8Bit().constData());
  return 0;
}

}  // namespace ddpscope::ui
