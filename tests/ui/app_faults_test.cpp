// Faults, end to end through the GUI (headless): an agent that crashes, a load the user cancels,
// files that are not traces, and a disk that fills up during an export. Each scenario starts with
// two runs open (the bundled sample, 4 simulated ranks, and resnet50 rank 0) and checks afterwards
// that the same runs, names and numbers are still shown and that the user was told what happened,
// naming the file and the cause. Also: incomplete runs are marked as such, and paths with spaces,
// quotes and non-ASCII characters work for opening, exporting, the report, the agent and the CLI.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QListWidget>
#include <QMessageBox>
#include <QProcess>
#include <QStatusBar>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QToolButton>
#include <csignal>

#include "app/ui/app_modes.h"
#include "app/ui/app_settings.h"
#include "app/ui/headline_bar.h"
#include "app/ui/main_window.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/run_list_panel.h"
#include "app/ui/run_load_job.h"
#include "app/ui/run_panel.h"
#include "app/ui/session.h"
#include "app/ui/summary_panel.h"
#include "app/ui/timeline_view.h"
#include "tests/common/trace_builder.h"
#include "tests/ui/ui_test_app.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kAgent = QStringLiteral(DDPSCOPE_AGENT);
const QString kApp = QStringLiteral(DDPSCOPE_APP);
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");
// What the INCOMPLETE badge's tooltip must say.
const QString kIncompleteWhy = QStringLiteral(
    "the agent stopped before the run finished (error or timeout); the numbers cover only what "
    "was recorded");
// A folder name no shell would take unquoted, with non-ASCII characters.
const QString kOddName = QStringLiteral("odd \"dq\" 'sq' ünïcødé 日本 $(true) ;&");

// One simulated rank: `steps` steps of `kernels` compute kernels with an allreduce over the last
// half of each step (half hidden), in a ddpscope block of source "sim".
trace::RankTrace syntheticRank(int rank, int world, int steps, int kernels, bool incomplete) {
  ddpscope::testing::TraceBuilder b;
  const trace::TimeNs kernel_ns = 10'000, step_ns = kernel_ns * kernels + 50'000;
  for (int s = 0; s < steps; ++s) {
    const trace::TimeNs t0 = s * step_ns + rank * 300;
    b.step(s, t0, step_ns - 1000);
    for (int k = 0; k < kernels; ++k)
      b.kernel("sm90_gemm_bf16", t0 + k * kernel_ns, kernel_ns - 500);
    b.comm(t0 + kernel_ns * kernels / 2, kernel_ns * kernels / 2 + 40'000);
  }
  trace::RankTrace t = b.build();
  t.rank = rank;
  t.world_size = world;
  t.ddpscope.present = true;
  t.ddpscope.source = "sim";
  t.ddpscope.incomplete = incomplete;
  return t;
}

std::string fileName(const QString& path) {
  return QFile::encodeName(path).toStdString();
}

// Writes ranks `ranks` of a `world`-rank run into `dir` (rank-<r>.json.gz); `cut_short` ranks are
// flagged incomplete.
void writeRun(const QString& dir, const std::vector<int>& ranks, int world, int steps = 4,
              int kernels = 40, const std::vector<int>& cut_short = {},
              const QString& suffix = QStringLiteral(".json.gz")) {
  ASSERT_TRUE(QDir().mkpath(dir));
  for (int r : ranks) {
    const bool incomplete = std::find(cut_short.begin(), cut_short.end(), r) != cut_short.end();
    trace::writeTraceFile(
        syntheticRank(r, world, steps, kernels, incomplete),
        fileName(QDir(dir).filePath(QStringLiteral("rank-%1%2").arg(r).arg(suffix))));
  }
}

QString writeScript(const QString& dir, const QString& name, const QString& body) {
  const QString path = QDir(dir).filePath(name);
  QFile f(path);
  EXPECT_TRUE(f.open(QIODevice::WriteOnly));
  f.write(("#!/bin/sh\n" + body).toUtf8());
  f.close();
  f.setPermissions(QFile::ReadOwner | QFile::WriteOwner | QFile::ExeOwner);
  return path;
}

void writeBytes(const QString& path, const QByteArray& bytes) {
  QFile f(path);
  ASSERT_TRUE(f.open(QIODevice::WriteOnly)) << path.toStdString();
  f.write(bytes);
}

QByteArray readBytes(const QString& path) {
  QFile f(path);
  return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// Every entry of a folder, hidden ones (temporary files) included.
QStringList entries(const QString& dir) {
  return QDir(dir).entryList(QDir::AllEntries | QDir::Hidden | QDir::System | QDir::NoDotAndDotDot);
}

// What the window shows of its runs: the runs themselves, the run list, the headline, the title
// and every cell of the per-rank table.
struct Shown {
  std::vector<std::shared_ptr<const LoadedRun>> runs;
  QStringList names, list, summary;
  int current = -1;
  QString title, overlap, badge, incomplete;
  bool operator==(const Shown&) const = default;
  std::string describe() const {
    return QStringLiteral("current %1\nlist: %2\nheadline: %3 %4 %5\ntitle: %6\ntable: %7")
        .arg(current)
        .arg(list.join(" | "), overlap, badge, incomplete, title, summary.join(" "))
        .toStdString();
  }
};

Shown shown(MainWindow& w) {
  Shown s;
  s.runs = w.session()->runs();
  for (const auto& r : s.runs)
    s.names << r->name;
  s.current = w.session()->currentIndex();
  auto* list = w.findChild<RunListPanel*>()->list();
  for (int i = 0; i < list->count(); ++i)
    s.list << list->item(i)->text();
  s.title = w.windowTitle();
  s.overlap = w.headline()->overlapText();
  s.badge = w.headline()->badgeText();
  s.incomplete = w.headline()->incompleteText();
  const QAbstractItemModel* t = w.summary()->table()->model();
  for (int r = 0; r < t->rowCount(); ++r)
    for (int c = 0; c < t->columnCount(); ++c)
      s.summary << t->index(r, c).data().toString();
  return s;
}

// A window with the sample run and resnet50 open, the run controls installed, the agent and the
// traces folder set (settings of this process only).
struct TwoRuns {
  QTemporaryDir tmp;
  std::unique_ptr<MainWindow> window;
  MainWindow* controls = nullptr;  // the window: its run panel, Sweep and Compare

  explicit TwoRuns(const QString& agent = kAgent) {
    static QTemporaryDir settings_dir;
    qputenv("DDPSCOPE_SETTINGS", settings_dir.filePath("ddpscope.ini").toLocal8Bit());
    app();
    settings::setAgentPath(agent);
    settings::setLauncherTemplate({});
    settings::setTracesFolder(tmp.filePath("traces"));
    QDir().mkpath(tmp.filePath("traces"));
    window = std::make_unique<MainWindow>();
    window->setErrorDialogsEnabled(false);
    window->resize(1500, 950);
    controls = window.get();
    window->show();
    open({sampleRunPath()});
    open({kResnet});
    // The sample current, so that its numbers are the ones in the headline and the table.
    window->session()->setCurrent(0);
    QApplication::processEvents();
  }
  Session* session() const { return window->session(); }
  RunPanel* panel() const { return controls->runPanel(); }
  void open(const QStringList& paths) {
    const std::size_t n = session()->runs().size();
    window->openPaths(paths);
    EXPECT_TRUE(waitFor([&] { return session()->runs().size() == n + 1; }))
        << window->lastError().toStdString();
  }
  // Opens paths that must fail; returns the message the user was shown.
  QString openBad(const QStringList& paths) {
    bool failed = false;
    auto c = QObject::connect(window->loader(), &RunLoadJob::failed, [&] { failed = true; });
    window->openPaths(paths);
    EXPECT_TRUE(waitFor([&] { return failed; }));
    QObject::disconnect(c);
    return window->lastError();
  }
  void runAgent(const RunParameters& p) {
    panel()->setParameters(p);
    panel()->startRun();
    ASSERT_TRUE(panel()->busy());
    ASSERT_TRUE(waitFor([&] { return !panel()->busy(); }, 60000));
  }
};

RunParameters smallRun() {
  RunParameters p;
  p.backend = QStringLiteral("sim");
  p.world_size = 2;
  p.bucket_mb = 4;
  p.first_bucket_mb = 1;
  applyModelPreset(p, QStringLiteral("mlp"));
  p.steps = 3;
  return p;
}

// Writes fail with EFBIG ("File too large") past `bytes`, as on a full disk, for this process
// until destroyed (SIGXFSZ ignored so that write() returns the error instead of killing us).
class FileSizeLimit {
 public:
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit limit = saved_;
    limit.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &limit) == 0;
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, handler_);
  }
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  void (*handler_)(int) = nullptr;
  bool ok_ = false;
};
}  // namespace

TEST(AppFaults, AgentCrashNamesTheSignalAndKeepsTheRuns) {
  QTemporaryDir bin;
  for (const auto& [signal, name] : {std::pair{"SEGV", "SIGSEGV"}, std::pair{"ABRT", "SIGABRT"}}) {
    // Prints a progress line, then dies of the signal (no core file).
    const QString agent =
        writeScript(bin.path(), QStringLiteral("crashing-agent-%1").arg(signal),
                    QStringLiteral("ulimit -c 0\n"
                                   "echo '{\"event\":\"progress\",\"step\":1,\"steps\":3}'\n"
                                   "echo 'rank 0: about to crash' >&2\n"
                                   "kill -s %1 $$\n")
                        .arg(signal));
    TwoRuns f(agent);
    const Shown before = shown(*f.window);
    ASSERT_EQ(before.runs.size(), 2u);
    f.runAgent(smallRun());
    const QString error = f.panel()->lastError();
    EXPECT_TRUE(error.contains(QStringLiteral("The agent failed"))) << error.toStdString();
    EXPECT_TRUE(error.contains(QStringLiteral("killed by signal"))) << error.toStdString();
    EXPECT_TRUE(error.contains(QLatin1String(name))) << error.toStdString();
    EXPECT_TRUE(error.contains(QStringLiteral("about to crash"))) << error.toStdString();
    EXPECT_TRUE(f.panel()->statusText().contains(QLatin1String(name)));
    EXPECT_TRUE(f.panel()->runButton()->isEnabled());
    // Nothing added, nothing changed; the run's empty trace folder is not left behind.
    const Shown after = shown(*f.window);
    EXPECT_TRUE(after == before) << before.describe() << "\n---\n" << after.describe();
    EXPECT_TRUE(entries(settings::tracesFolder()).isEmpty())
        << entries(settings::tracesFolder()).join(", ").toStdString();
  }
}

TEST(AppFaults, AgentCrashAfterWritingSomeRanksOpensThemMarkedIncomplete) {
  // A 4-rank agent that wrote ranks 0 and 1 (rank 1 cut short) and then crashed: what it wrote is
  // opened as a new run, marked incomplete, and the crash is reported.
  QTemporaryDir bin;
  const QString written = bin.filePath("written");
  ASSERT_NO_FATAL_FAILURE(writeRun(written, {0, 1}, 4, 4, 40, {1}));
  const QString agent = writeScript(
      bin.path(), QStringLiteral("half-agent"),
      QStringLiteral("ulimit -c 0\nout=\n"
                     "while [ $# -gt 0 ]; do [ \"$1\" = --out ] && out=\"$2\"; shift; done\n"
                     "cp '%1'/rank-0.json.gz '%1'/rank-1.json.gz \"$out\"/\n"
                     "echo 'rank 2: lost its peer' >&2\n"
                     "kill -s SEGV $$\n")
          .arg(written));
  TwoRuns f(agent);
  const Shown before = shown(*f.window);
  f.runAgent(smallRun());
  ASSERT_EQ(f.session()->runs().size(), 3u) << f.panel()->lastError().toStdString();
  EXPECT_EQ(f.session()->runs()[0], before.runs[0]);
  EXPECT_EQ(f.session()->runs()[1], before.runs[1]);
  const auto run = f.session()->current();
  ASSERT_EQ(run, f.session()->runs()[2]);
  EXPECT_EQ(run->run.ranks.size(), 2u);
  EXPECT_TRUE(run->incomplete());
  EXPECT_EQ(run->completeness.incomplete_ranks, (std::vector<std::int32_t>{1}));
  EXPECT_EQ(run->completeness.missing_ranks, (std::vector<std::int32_t>{2, 3}));
  EXPECT_TRUE(run->completeness.producer_error.contains("SIGSEGV"));
  EXPECT_EQ(f.window->headline()->incompleteText(), kIncompleteBadge);
  const QString tip = f.window->headline()->incompleteToolTip();
  EXPECT_TRUE(tip.contains(kIncompleteWhy)) << tip.toStdString();
  EXPECT_TRUE(tip.contains("SIGSEGV")) << tip.toStdString();
  EXPECT_TRUE(f.panel()->lastError().contains("SIGSEGV"));
  EXPECT_TRUE(f.panel()->statusText().contains(kIncompleteBadge))
      << f.panel()->statusText().toStdString();
  EXPECT_TRUE(f.panel()->statusText().contains("lost its peer"));
}

TEST(AppFaults, CancelledLoadAddsNothingAndSaysSo) {
  TwoRuns f;
  const Shown before = shown(*f.window);
  // 8 ranks of 60 steps x 200 kernels: big enough to be cancelled while its files are read.
  const QString big = f.tmp.filePath("big run");
  ASSERT_NO_FATAL_FAILURE(writeRun(big, {0, 1, 2, 3, 4, 5, 6, 7}, 8, 60, 200));
  QToolButton* cancel = nullptr;
  for (auto* b : f.window->statusBar()->findChildren<QToolButton*>())
    if (b->text() == QStringLiteral("Cancel")) cancel = b;
  ASSERT_NE(cancel, nullptr);
  bool cancelled = false, loaded = false, done = false;
  double first_progress = -1;
  QObject::connect(f.window->loader(), &RunLoadJob::progress, [&](double p) {
    if (first_progress >= 0) return;
    first_progress = p;
    // The user presses Cancel in the status bar while the files are being read.
    EXPECT_TRUE(cancel->isVisible());
    cancel->click();
  });
  QObject::connect(f.window->loader(), &RunLoadJob::cancelled, [&] { cancelled = true; });
  QObject::connect(f.window->loader(), &RunLoadJob::loaded, [&] { loaded = true; });
  QObject::connect(f.window->loader(), &RunLoadJob::finished, [&] { done = true; });
  f.window->openPaths({big});
  ASSERT_TRUE(waitFor([&] { return done; }, 60000));
  EXPECT_TRUE(cancelled);
  EXPECT_FALSE(loaded);
  EXPECT_GE(first_progress, 0.0);
  EXPECT_LT(first_progress, 0.9);  // cancelled while reading, before the analysis
  EXPECT_FALSE(f.window->loader()->busy());
  EXPECT_FALSE(cancel->isVisible());
  const QString status = f.window->statusText();
  EXPECT_TRUE(status.contains("cancelled")) << status.toStdString();
  EXPECT_TRUE(status.contains(big)) << status.toStdString();
  EXPECT_TRUE(f.window->lastError().isEmpty()) << f.window->lastError().toStdString();
  const Shown after = shown(*f.window);
  EXPECT_TRUE(after == before) << before.describe() << "\n---\n" << after.describe();
  // Nothing was wrong with the run: opened again without a cancel, it loads.
  first_progress = 2;  // no more cancels
  f.open({big});
  EXPECT_EQ(f.session()->runs().size(), 3u);
  EXPECT_EQ(f.session()->current()->run.ranks.size(), 8u);
}

TEST(AppFaults, BadFilesAreNamedWithTheCauseAndKeepTheRuns) {
  TwoRuns f;
  const Shown before = shown(*f.window);
  QTemporaryDir dir;
  // A trace whose JSON breaks off inside an event.
  const QString malformed = dir.filePath("rank-0.json");
  writeBytes(malformed, R"({"traceEvents": [{"ph": "X", "ts": 12, "dur": 3, "name": "k"},
  {"ph": "X", "ts": "soon"})");
  // A file that is not a trace at all: a PNG named like one.
  const QString picture = dir.filePath("picture.json");
  QImage(8, 8, QImage::Format_RGB32).save(picture, "PNG");
  // Plain text.
  const QString notes = dir.filePath("notes.txt");
  writeBytes(notes, "meeting notes, not a trace\n");
  // A gzip cut in half.
  const QString truncated = dir.filePath("rank-1.json.gz");
  const QByteArray gz = readBytes(kResnet);
  writeBytes(truncated, gz.left(gz.size() / 2));
  // A folder without traces.
  const QString empty = dir.filePath("no traces here");
  QDir().mkpath(empty);
  writeBytes(QDir(empty).filePath("README.txt"), "nothing\n");

  struct Case {
    QString path;
    QStringList says;  // the message must contain each
  };
  const std::vector<Case> cases = {
      {malformed, {"rank-0.json (byte ", "ts"}},
      {picture, {"picture.json", "not a trace (binary content)"}},
      {notes, {"notes.txt", "JSON"}},
      {truncated, {"rank-1.json.gz", "gzip"}},
      {empty, {"no traces here", "contains no trace files"}},
  };
  for (const auto& c : cases) {
    const QString error = f.openBad({c.path});
    for (const auto& part : c.says)
      EXPECT_TRUE(error.contains(part)) << c.path.toStdString() << ": " << error.toStdString();
    EXPECT_TRUE(error.startsWith("Could not open: ")) << error.toStdString();
    EXPECT_EQ(f.window->statusText(), error);
    const Shown after = shown(*f.window);
    EXPECT_TRUE(after == before) << c.path.toStdString() << "\n"
                                 << before.describe() << "\n---\n"
                                 << after.describe();
  }
  // With dialogs on (the interactive app): a message box that does not block, with the same text
  // and a word that the runs already open are unchanged.
  f.window->setErrorDialogsEnabled(true);
  const QString error = f.openBad({malformed});
  QMessageBox* box = nullptr;
  ASSERT_TRUE(waitFor([&] { return (box = f.window->findChild<QMessageBox*>()) != nullptr; }));
  EXPECT_EQ(box->text(), error);
  EXPECT_EQ(box->windowTitle(), QStringLiteral("Could not open the trace"));
  EXPECT_TRUE(box->informativeText().contains("unchanged"));
  box->close();
  EXPECT_TRUE(shown(*f.window) == before);
}

TEST(AppFaults, FullDiskDuringExportLeavesNoPartialFileAndSaysWhy) {
  TwoRuns f;
  const Shown before = shown(*f.window);
  QTemporaryDir out;
  const QString keep = out.filePath("keep.svg");
  writeBytes(keep, "the previous figure");
  QDir().mkpath(out.filePath("old report"));
  writeBytes(out.filePath("old report/report.md"), "the previous report");
  const QStringList entries_before = entries(out.path());
  {
    FileSizeLimit full(4096);
    ASSERT_TRUE(full.ok());
    // Figures: the timeline in each format, the current chart, and over an existing file.
    const std::vector<std::pair<QString, QString>> figures = {
        {"timeline", out.filePath("timeline.png")}, {"timeline", out.filePath("timeline.svg")},
        {"timeline", out.filePath("timeline.pdf")}, {"chart", out.filePath("per-step.png")},
        {"chart", out.filePath("per-step.svg")},    {"timeline", keep}};
    for (const auto& [what, path] : figures) {
      EXPECT_FALSE(f.window->exportTo(what, path, 2.0)) << path.toStdString();
      const QString error = f.window->lastError();
      EXPECT_TRUE(error.startsWith("Export failed: cannot write " + path)) << error.toStdString();
      EXPECT_TRUE(error.contains(QString::fromLocal8Bit(std::strerror(EFBIG))))
          << error.toStdString();
      EXPECT_EQ(f.window->statusText(), error);
    }
    EXPECT_EQ(readBytes(keep), QByteArray("the previous figure"));
    // The design report: into a new folder, and over an existing report.
    for (const QString& dir : {out.filePath("review"), out.filePath("old report")}) {
      EXPECT_FALSE(f.controls->exportReportTo(dir)) << dir.toStdString();
      const QString error = f.window->lastError();
      EXPECT_TRUE(error.startsWith("Report not written: cannot write " + dir))
          << error.toStdString();
      EXPECT_TRUE(error.contains(QString::fromLocal8Bit(std::strerror(EFBIG))))
          << error.toStdString();
    }
    EXPECT_EQ(readBytes(out.filePath("old report/report.md")), QByteArray("the previous report"));
    EXPECT_EQ(entries(out.filePath("old report")), QStringList{"report.md"});
  }
  // No partial file and no temporary file anywhere; the new report folder is not left behind.
  EXPECT_EQ(entries(out.path()), entries_before);
  const Shown after = shown(*f.window);
  EXPECT_TRUE(after == before) << before.describe() << "\n---\n" << after.describe();
  // With room again, the same exports work.
  EXPECT_TRUE(f.window->exportTo("timeline", out.filePath("timeline.png"), 2.0))
      << f.window->lastError().toStdString();
  EXPECT_FALSE(QImage(out.filePath("timeline.png")).isNull());
  EXPECT_TRUE(f.window->statusText().contains("Exported"));
  EXPECT_TRUE(f.controls->exportReportTo(out.filePath("review")));
  EXPECT_GT(QFileInfo(out.filePath("review/timeline.png")).size(), 1000);
  EXPECT_TRUE(readBytes(out.filePath("review/report.md")).contains("timeline.png"));
  // A report given a file's path says the path is a file, and leaves the file as it was.
  EXPECT_FALSE(f.controls->exportReportTo(keep));
  EXPECT_TRUE(f.window->lastError().contains(keep + " is a file, not a folder"))
      << f.window->lastError().toStdString();
  EXPECT_EQ(readBytes(keep), QByteArray("the previous figure"));
}

TEST(AppFaults, IncompleteRunsAreMarkedInTheRunListHeadlineAndExports) {
  TwoRuns f;
  QTemporaryDir dir;
  // Rank 1's trace says the agent stopped before the end.
  const QString cut = dir.filePath("cut short");
  ASSERT_NO_FATAL_FAILURE(writeRun(cut, {0, 1}, 2, 4, 40, {1}));
  f.open({cut});
  auto run = f.session()->current();
  ASSERT_TRUE(run);
  EXPECT_TRUE(run->incomplete());
  EXPECT_TRUE(run->report.ranks[1].incomplete);
  HeadlineBar* headline = f.window->headline();
  EXPECT_EQ(headline->incompleteText(), kIncompleteBadge);
  EXPECT_TRUE(headline->incompleteToolTip().contains(kIncompleteWhy))
      << headline->incompleteToolTip().toStdString();
  EXPECT_TRUE(headline->incompleteToolTip().contains("rank 1"));
  EXPECT_EQ(headline->badgeText(), QStringLiteral("SIMULATED"));
  auto* list = f.window->findChild<RunListPanel*>()->list();
  ASSERT_EQ(list->count(), 3);
  EXPECT_TRUE(list->item(2)->text().contains(kIncompleteBadge))
      << list->item(2)->text().toStdString();
  EXPECT_FALSE(list->item(2)->icon().isNull());
  EXPECT_TRUE(list->item(2)->toolTip().contains(kIncompleteWhy));
  EXPECT_TRUE(list->item(2)->toolTip().contains(cut));
  for (int i : {0, 1}) {
    EXPECT_FALSE(list->item(i)->text().contains(kIncompleteBadge)) << i;
    EXPECT_TRUE(list->item(i)->icon().isNull()) << i;
  }
  EXPECT_TRUE(f.window->windowTitle().contains(kIncompleteBadge));
  // The per-rank table marks the rank that was cut short.
  const QAbstractItemModel* table = f.window->summary()->table()->model();
  ASSERT_EQ(table->rowCount(), 2);
  EXPECT_FALSE(table->index(0, 1).data().toString().contains(kIncompleteBadge));
  EXPECT_TRUE(table->index(1, 1).data().toString().contains(kIncompleteBadge));
  // Exports carry it in their title.
  QString error;
  QByteArray svg;
  ASSERT_TRUE(f.window->timeline()->renderImage(ExportFormat::Svg, 1.0, &svg, &error))
      << error.toStdString();
  EXPECT_TRUE(svg.contains("INCOMPLETE"));

  // Only some ranks present: 2 of 4, none flagged.
  const QString partial = dir.filePath("two of four");
  ASSERT_NO_FATAL_FAILURE(writeRun(partial, {0, 1}, 4));
  f.open({partial});
  run = f.session()->current();
  EXPECT_TRUE(run->incomplete());
  EXPECT_TRUE(run->completeness.incomplete_ranks.empty());
  EXPECT_EQ(headline->incompleteText(), kIncompleteBadge);
  const QString tip = headline->incompleteToolTip();
  EXPECT_TRUE(tip.contains("Only 2 of 4 ranks are present (no trace for ranks 2 and 3)"))
      << tip.toStdString();
  EXPECT_FALSE(tip.contains(kIncompleteWhy)) << tip.toStdString();
  // The headline says how many of the run's ranks it holds, as the export title does.
  EXPECT_TRUE(headline->nameText().endsWith(" · 2 of 4 ranks"))
      << headline->nameText().toStdString();
  ASSERT_TRUE(f.window->timeline()->renderImage(ExportFormat::Svg, 1.0, &svg, &error));
  EXPECT_TRUE(svg.contains("2 of 4 ranks"));
  // The per-rank table has a row for each rank without a trace.
  ASSERT_EQ(table->rowCount(), 4);
  for (int r : {2, 3}) {
    EXPECT_EQ(table->index(r, 0).data().toString(), QString::number(r));
    EXPECT_EQ(table->index(r, 1).data().toString(), "no trace");
  }

  // Complete runs show no marker: the sample (4 of 4 ranks) and a single imported rank file.
  for (int i : {0, 1}) {
    f.session()->setCurrent(i);
    EXPECT_FALSE(f.session()->current()->incomplete()) << i;
    EXPECT_TRUE(headline->incompleteText().isEmpty()) << i;
    EXPECT_FALSE(f.window->windowTitle().contains(kIncompleteBadge)) << i;
  }
}

TEST(AppFaults, PathsWithSpacesQuotesAndNonAsciiWorkEverywhere) {
  TwoRuns f;
  QTemporaryDir tmp;
  const QString odd = tmp.filePath(kOddName);
  ASSERT_TRUE(QDir().mkpath(odd));
  // Opening: a run folder, and its files one by one.
  const QString run_dir = QDir(odd).filePath(QStringLiteral("run \"1\" 'ü' 日本"));
  ASSERT_NO_FATAL_FAILURE(writeRun(run_dir, {0, 1}, 2));
  f.open({run_dir});
  EXPECT_EQ(f.session()->current()->name, QStringLiteral("run \"1\" 'ü' 日本"));
  EXPECT_EQ(f.session()->current()->run.ranks.size(), 2u);
  f.open({QDir(run_dir).filePath("rank-0.json.gz"), QDir(run_dir).filePath("rank-1.json.gz")});
  EXPECT_EQ(f.session()->current()->run.ranks.size(), 2u);
  EXPECT_TRUE(f.window->lastError().isEmpty()) << f.window->lastError().toStdString();

  // Exporting figures in every format.
  for (const char* ext : {"png", "svg", "pdf"}) {
    const QString path = QDir(odd).filePath(QStringLiteral("figure 'ü' \"x\" $y.%1").arg(ext));
    EXPECT_TRUE(f.window->exportTo("timeline", path, 1.0)) << f.window->lastError().toStdString();
    EXPECT_GT(QFileInfo(path).size(), 1000) << ext;
    EXPECT_TRUE(f.window->statusText().contains(path));
  }
  EXPECT_FALSE(QImage(QDir(odd).filePath("figure 'ü' \"x\" $y.png")).isNull());
  // The design report.
  const QString report = QDir(odd).filePath(QStringLiteral("report für \"review\""));
  ASSERT_TRUE(f.controls->exportReportTo(report)) << f.window->lastError().toStdString();
  EXPECT_GT(QFileInfo(QDir(report).filePath("timeline.png")).size(), 1000);
  EXPECT_GT(QFileInfo(QDir(report).filePath("report.html")).size(), 100);

  // The agent: its own path and the traces folder both odd (argument lists, never a shell).
  const QString agent_dir = QDir(odd).filePath(QStringLiteral("my tools ü"));
  ASSERT_TRUE(QDir().mkpath(agent_dir));
  const QString agent = QDir(agent_dir).filePath(QStringLiteral("ddpscope-agent 'ü'"));
  ASSERT_TRUE(QFile::link(kAgent, agent));
  const QString traces = QDir(odd).filePath(QStringLiteral("traces \"ü\" 'x'"));
  ASSERT_TRUE(QDir().mkpath(traces));
  settings::setAgentPath(agent);
  settings::setTracesFolder(traces);
  const std::size_t before = f.session()->runs().size();
  f.runAgent(smallRun());
  ASSERT_EQ(f.session()->runs().size(), before + 1) << f.panel()->lastError().toStdString();
  const auto run = f.session()->current();
  EXPECT_EQ(run->run.ranks.size(), 2u);
  EXPECT_TRUE(run->paths.front().startsWith(traces)) << run->paths.front().toStdString();
  EXPECT_TRUE(QFileInfo::exists(QDir(run->paths.front()).filePath("rank-1.json.gz")));
  // The command shown quotes the agent's path for a shell reader; it was passed as one argument.
  EXPECT_TRUE(f.panel()->lastCommand().startsWith(displayCommand({agent, {}}) + " --backend"))
      << f.panel()->lastCommand().toStdString();

  // The headless export of the command line.
  const QString cli_png = QDir(odd).filePath(QStringLiteral("cli 'ü' \"x\".png"));
  QProcess cli;
  cli.start(kApp, {QStringLiteral("--export"), cli_png, QStringLiteral("--scale"),
                   QStringLiteral("1"), run_dir});
  ASSERT_TRUE(cli.waitForFinished(60000));
  EXPECT_EQ(cli.exitCode(), 0) << cli.readAllStandardError().toStdString();
  EXPECT_TRUE(QString::fromUtf8(cli.readAllStandardOutput()).contains(cli_png));
  EXPECT_FALSE(QImage(cli_png).isNull());
}

TEST(AppFaults, AgentFaultFromTheRunPanelOpensWhatItWroteMarkedIncomplete) {
  // The real agent with a simulated fault (rank 1 stops in step 1), through a launcher template
  // that adds the fault options: it exits 1 after writing incomplete traces (hang: every rank;
  // die: all but rank 1). The app opens them as an incomplete run and shows the failure.
  for (const char* kind_name : {"hang", "die"}) {
    const QString kind = QString::fromLatin1(kind_name);
    TwoRuns f;
    const Shown before = shown(*f.window);
    settings::setLauncherTemplate("{agent} {args} --fault " + kind +
                                  " --fault-rank 1 --fault-step 1 --timeout-s 0.01");
    f.panel()->refreshFromSettings();
    f.panel()->setUseLauncher(true);
    RunParameters p = smallRun();
    p.world_size = 4;
    p.steps = 3;
    f.runAgent(p);
    settings::setLauncherTemplate({});
    ASSERT_EQ(f.session()->runs().size(), 3u) << f.panel()->lastError().toStdString();
    EXPECT_EQ(f.session()->runs()[0], before.runs[0]);
    EXPECT_EQ(f.session()->runs()[1], before.runs[1]);
    const auto run = f.session()->current();
    const std::size_t written = kind == "hang" ? 4 : 3;
    ASSERT_EQ(run->run.ranks.size(), written) << kind.toStdString();
    EXPECT_TRUE(run->incomplete());
    EXPECT_EQ(run->completeness.incomplete_ranks.size(), written);
    EXPECT_EQ(run->completeness.missing_ranks,
              kind == "hang" ? std::vector<std::int32_t>{} : std::vector<std::int32_t>{1});
    const QString error = f.panel()->lastError();
    EXPECT_TRUE(error.contains("exit status 1")) << error.toStdString();
    EXPECT_TRUE(error.contains("rank 1 did not join the allreduce")) << error.toStdString();
    EXPECT_TRUE(f.panel()->statusText().contains(kIncompleteBadge));
    EXPECT_EQ(f.window->headline()->incompleteText(), kIncompleteBadge);
    const QString tip = f.window->headline()->incompleteToolTip();
    EXPECT_TRUE(tip.contains(kIncompleteWhy)) << tip.toStdString();
    EXPECT_TRUE(tip.contains("exit status 1")) << tip.toStdString();
    EXPECT_EQ(tip.contains("Only 3 of 4 ranks are present"), kind == "die") << tip.toStdString();
    // The steps before the fault are analysed as usual.
    EXPECT_GE(run->report.ranks.front().steps.size(), 1u);
  }
}

// The picture for docs/UI.md: the real agent, 4 ranks of the default transformer, rank 3 hangs in
// step 4 (--fault hang), opened from the run panel next to the sample and resnet50. Written to
// DDPSCOPE_SCREENSHOTS=DIR when set (incomplete-run.png), else to a temporary folder; either
// way the picture must be a whole window-sized PNG.
TEST(AppFaults, Screenshot) {
  QTemporaryDir scratch;
  QString dir = qEnvironmentVariable("DDPSCOPE_SCREENSHOTS");
  if (dir.isEmpty()) dir = scratch.path();
  TwoRuns f;
  settings::setLauncherTemplate(
      "{agent} {args} --fault hang --fault-rank 3 --fault-step 4 --timeout-s 0.05");
  f.panel()->refreshFromSettings();
  f.panel()->setUseLauncher(true);
  RunParameters p;
  p.world_size = 4;
  p.steps = 6;
  f.runAgent(p);
  settings::setLauncherTemplate({});
  ASSERT_EQ(f.session()->runs().size(), 3u) << f.panel()->lastError().toStdString();
  ASSERT_TRUE(f.session()->current()->incomplete());
  f.window->resize(1600, 1000);
  for (int i = 0; i < 3; ++i) {
    QApplication::processEvents();
    f.window->timeline()->plot()->replot();
  }
  QString error;
  const QString png = QDir(dir).filePath("incomplete-run.png");
  EXPECT_TRUE(exportWidget(f.window.get(), png, 1.0, &error)) << error.toStdString();
  const QImage image(png);
  EXPECT_EQ(image.size(), f.window->size());
}
