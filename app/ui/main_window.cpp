#include "app/ui/main_window.h"

#include <qcustomplot.h>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QDragEnterEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QProgressBar>
#include <QSettings>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>

#include "app/analysis/stragglers.h"
#include "app/ui/app_settings.h"
#include "app/ui/breakdown_panel.h"
#include "app/ui/buckets_panel.h"
#include "app/ui/compare_panel.h"
#include "app/ui/details_panel.h"
#include "app/ui/digest_job.h"
#include "app/ui/digest_view.h"
#include "app/ui/headline_bar.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/prediction_job.h"
#include "app/ui/report_export.h"
#include "app/ui/run_list_panel.h"
#include "app/ui/run_load_job.h"
#include "app/ui/run_panel.h"
#include "app/ui/run_text.h"
#include "app/ui/session.h"
#include "app/ui/settings_dialog.h"
#include "app/ui/statistics_panel.h"
#include "app/ui/summary_panel.h"
#include "app/ui/sweep_panel.h"
#include "app/ui/timeline_view.h"
#include "tracer/format/importer.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::ui {

namespace {
// What tells one digest from another in the Compare tab: its file's canonical path, or the run
// folders it was made of.
QString digestKey(const DigestResult& r) {
  if (!r.file.isEmpty()) return QFileInfo(r.file).canonicalFilePath();
  return QStringLiteral("made of ") + r.folders.join(QLatin1Char('|'));
}
}  // namespace

namespace {
constexpr int kMaxRecent = 8;
const char* kRecentKey = "recentRuns";
}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), session_(new Session(this)), loader_(new RunLoadJob(this)) {
  setWindowTitle(QStringLiteral("ddpscope"));
  setAcceptDrops(true);
  buildPanels();
  auto* hsplit = new QSplitter(Qt::Horizontal, this);
  hsplit->addWidget(buildLeftColumn());
  hsplit->addWidget(buildCentre());
  hsplit->setStretchFactor(1, 1);
  hsplit->setSizes({220, 1200});
  setCentralWidget(hsplit);
  buildStatusBar();
  connectLoader();
  connectDigest();
  connect(session_, &Session::currentRunChanged, this, [this] {
    const auto run = session_->current();
    if (!run) {
      setWindowTitle(QStringLiteral("ddpscope"));
      return;
    }
    QString badges = sourceBadge(run->source());
    if (run->incomplete()) badges += QStringLiteral(", ") + kIncompleteBadge;
    setWindowTitle(QStringLiteral("%1 [%2] — ddpscope").arg(run->name, badges));
  });
  buildMenus();
  applyAppTheme(settings::theme());
  resize(1500, 950);
}

MainWindow::~MainWindow() = default;

void MainWindow::buildPanels() {
  timeline_ = new TimelineView(session_, this);
  headline_ = new HeadlineBar(session_, this);
  summary_ = new SummaryPanel(session_, this);
  // The Summary's chart bars and rank rows lead to the timeline, as the Steps and Statistics
  // tabs' do.
  connect(summary_, &SummaryPanel::stepActivated, this,
          [this](std::int32_t step) { timeline_->goToStep(step); });
  connect(summary_, &SummaryPanel::rankActivated, this,
          [this](std::int32_t rank_index) { timeline_->revealRank(rank_index); });
  buckets_ = new BucketsPanel(session_, this);
  details_ = new DetailsPanel(session_, this);
  runs_ = new RunListPanel(session_, this);
  run_panel_ = new RunPanel(session_, this);
  sweep_ = new SweepPanel(
      session_, [this] { return run_panel_->parameters(); }, this);
  compare_ = new ComparePanel(session_, this);
  statistics_ = new StatisticsPanel(session_, timeline_, this);
  breakdown_ = new BreakdownPanel(session_, timeline_, this);
  digest_ = new DigestView(this);
  digest_job_ = new DigestJob(this);
  connect(run_panel_, &RunPanel::sweepRequested, this, [this] { tabs_->setCurrentWidget(sweep_); });
}

QWidget* MainWindow::buildLeftColumn() {
  auto* left = new QWidget(this);
  auto* column = new QVBoxLayout(left);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(runs_, 1);
  column->addWidget(run_panel_);
  left->setMinimumWidth(200);
  return left;
}

QWidget* MainWindow::buildCentre() {
  auto* centre = new QWidget(this);
  auto* centre_layout = new QVBoxLayout(centre);
  centre_layout->setContentsMargins(0, 0, 0, 0);
  centre_layout->setSpacing(0);
  centre_layout->addWidget(headline_);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(summary_, tr("Summary"));
  tabs_->addTab(breakdown_, tr("Steps"));
  tabs_->addTab(buckets_, tr("Buckets"));
  tabs_->addTab(details_, tr("Details"));
  tabs_->addTab(sweep_, tr("Sweep"));
  tabs_->addTab(compare_, tr("Compare"));
  tabs_->addTab(statistics_, tr("Statistics"));
  tabs_->addTab(digest_, tr("Digest"));
  connect(session_, &Session::eventSelected, this, [this] {
    if (session_->selectedEvent()) tabs_->setCurrentWidget(details_);
  });
  auto* vsplit = new QSplitter(Qt::Vertical, this);
  centre_split_ = vsplit;
  vsplit->addWidget(timeline_);
  vsplit->addWidget(tabs_);
  // A taller window gives the new height to the timeline; the tabs keep theirs. (QSplitter shares
  // extra room among the widgets with a stretch factor in proportion to their current sizes.)
  vsplit->setStretchFactor(0, 1);
  vsplit->setStretchFactor(1, 0);
  centre_layout->addWidget(vsplit, 1);
  // Where the user last put the divider is kept, and used again in the next session.
  const QByteArray saved = settings::centreSplitterState();
  if (!saved.isEmpty()) vsplit->restoreState(saved);
  connect(vsplit, &QSplitter::splitterMoved, this,
          [vsplit] { settings::setCentreSplitterState(vsplit->saveState()); });
  // Give the timeline the height its lanes need (up to two thirds), the tabs the rest, unless
  // the user has placed the divider.
  connect(session_, &Session::currentRunChanged, vsplit, [this, vsplit] {
    if (!settings::centreSplitterState().isEmpty()) return;
    const int total = std::max(400, vsplit->height());
    const int chrome = timeline_->plot()->height() - timeline_->plot()->axisRect()->height();
    // And what the pane shows besides the plot (the search row above it).
    const int around = std::max(0, timeline_->height() - timeline_->plot()->height());
    const int want = std::clamp(timeline_->contentHeight() + std::max(chrome, 40) + around + 8, 240,
                                total * 2 / 3);
    vsplit->setSizes({want, total - want});
  });
  return centre;
}

void MainWindow::buildStatusBar() {
  status_ = new QLabel(this);
  status_->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Preferred);  // long messages clip
  progress_ = new QProgressBar(this);
  progress_->setRange(0, 1000);
  progress_->setMaximumWidth(220);
  progress_->setVisible(false);
  cancel_ = new QToolButton(this);
  cancel_->setText(tr("Cancel"));
  cancel_->setVisible(false);
  statusBar()->addWidget(status_, 1);
  statusBar()->addPermanentWidget(progress_);
  statusBar()->addPermanentWidget(cancel_);
  connect(cancel_, &QToolButton::clicked, loader_, &RunLoadJob::cancel);
  connect(timeline_, &TimelineView::statusMessage, status_, &QLabel::setText);
}

void MainWindow::connectLoader() {
  connect(loader_, &RunLoadJob::started, this, [this](const QStringList& paths) {
    loading_paths_ = paths;
    progress_->setValue(0);
    progress_->setVisible(true);
    cancel_->setVisible(true);
    status_->setText(
        tr("Loading %1 …")
            .arg(paths.size() == 1 ? paths.front() : tr("%1 paths").arg(paths.size())));
  });
  connect(loader_, &RunLoadJob::progress, this,
          [this](double f) { progress_->setValue(static_cast<int>(f * 1000)); });
  connect(loader_, &RunLoadJob::finished, this, [this] {
    progress_->setVisible(false);
    cancel_->setVisible(false);
  });
  connect(loader_, &RunLoadJob::loaded, this, [this](std::shared_ptr<LoadedRun> run) {
    addRecent(run->paths);
    const QStringList warnings = runWarnings(*run);
    const QString text =
        tr("%1 · %2 events · loaded in %3 s · %4")
            .arg(run->name)
            .arg(QLocale().toString(static_cast<qlonglong>(run->run.eventCount())))
            .arg(run->load_seconds, 0, 'f', 2)
            .arg(sourceBadge(run->source())) +
        (warnings.isEmpty()
             ? QString()
             : QStringLiteral(" · %1: %2").arg(warningCount(warnings.size()), warnings.front()));
    // After the views were rebuilt for the run (the timeline clears the status bar then).
    session_->addRun(std::move(run));
    status_->setText(text);
    status_->setToolTip(warnings.join(QLatin1Char('\n')));
    timeline_->setFocus();
    // The next run of a comparison, once this job has finished.
    QMetaObject::invokeMethod(this, &MainWindow::continueCompare, Qt::QueuedConnection);
  });
  connect(loader_, &RunLoadJob::failed, this, [this](const QString& message) {
    // Some files of a run of several could not be read (a truncated copy, one rank's crash):
    // offer the others, the unreadable ones named in the run's warnings. Once the job has
    // finished (its progress bar gone), and a comparison goes on with the run loaded.
    if (const auto [read, unreadable] = loader_->lastUnreadable(); unreadable > 0) {
      const QStringList paths = loading_paths_;
      const QString question =
          tr("%1\n\n%2 of the run's %3 trace files could not be read. Load the other %4 without "
             "them? Their ranks will have no trace, and the run's figures will say so.")
              .arg(message)
              .arg(unreadable)
              .arg(read + unreadable)
              .arg(read);
      QMetaObject::invokeMethod(
          this,
          [this, paths, question, message] {
            const bool others =
                skip_answer_ ? skip_answer_(question)
                : error_dialogs_
                    ? QMessageBox::question(this, tr("Some trace files could not be read"),
                                            question) == QMessageBox::Yes
                    : false;
            if (others) {
              loader_->start(paths, true);
              return;
            }
            compare_paths_.clear();
            reportError(tr("Could not open the trace"), tr("Could not open: %1").arg(message));
          },
          Qt::QueuedConnection);
      return;
    }
    compare_paths_.clear();
    reportError(tr("Could not open the trace"), tr("Could not open: %1").arg(message));
  });
  connect(loader_, &RunLoadJob::cancelled, this, [this] {
    compare_paths_.clear();
    status_->setText(tr("Loading %1 cancelled; the runs already open are unchanged.")
                         .arg(loading_paths_.size() == 1
                                  ? loading_paths_.front()
                                  : tr("%1 paths").arg(loading_paths_.size())));
  });
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(tr("&Open files…"), QKeySequence::Open, this, &MainWindow::openFilesDialog);
  file->addAction(tr("Open &folder (multi-rank run)…"),
                  QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_O), this,
                  &MainWindow::openFolderDialog);
  recent_menu_ = file->addMenu(tr("Open &recent"));
  refreshRecentMenu();
  file->addSeparator();
  file->addAction(tr("&Export timeline…"), QKeySequence(Qt::CTRL | Qt::Key_E), this,
                  [this] { exportDialog(true); });
  file->addAction(tr("Export current &chart…"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_E),
                  this, [this] { exportDialog(false); });
  file->addAction(tr("&Copy timeline to clipboard"), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C),
                  this, [this] { timeline_->copyToClipboard(); });
  file->addSeparator();
  file->addAction(tr("Close run"), QKeySequence(Qt::CTRL | Qt::Key_W), this,
                  [this] { session_->closeRun(session_->currentIndex()); });
  file->addAction(tr("&Quit"), QKeySequence::Quit, this, &QWidget::close);
  buildViewMenu();
  buildRunMenu();
  buildHelpMenu();
}

void MainWindow::buildViewMenu() {
  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(tr("&Fit (F)"), this, [this] { timeline_->fit(); });
  view->addAction(tr("Zoom in (W)"), this, [this] {
    const auto r = session_->viewRange();
    timeline_->zoomBy(0.8, r.lo + r.length() / 2);
  });
  view->addAction(tr("Zoom out (S)"), this, [this] {
    const auto r = session_->viewRange();
    timeline_->zoomBy(1.25, r.lo + r.length() / 2);
  });
  view->addAction(tr("&Find…"), QKeySequence::Find, this, [this] { timeline_->focusSearch(); });
  view->addAction(tr("Go to &step…"), QKeySequence(Qt::CTRL | Qt::Key_G), this,
                  [this] { timeline_->searchBar()->focusStep(); });
  view->addAction(tr("Clear selection (Esc)"), this, [this] {
    session_->setSelection(std::nullopt);
    session_->selectBucket(std::nullopt);
    session_->selectEvent(std::nullopt);
  });
}

void MainWindow::buildRunMenu() {
  QMenu* menu = menuBar()->addMenu(tr("&Run"));
  menu->addAction(tr("&Run agent"), QKeySequence(Qt::CTRL | Qt::Key_R), run_panel_,
                  &RunPanel::startRun);
  menu->addAction(tr("&Cancel run"), run_panel_, &RunPanel::cancelRun);
  menu->addAction(tr("&Sweep bucket sizes"), this, [this] {
    tabs_->setCurrentWidget(sweep_);
    sweep_->start();
  });
  menu->addAction(tr("C&ompare runs"), this, [this] { tabs_->setCurrentWidget(compare_); });
  menu->addSeparator();
  menu->addAction(tr("Export design &report…"), this, &MainWindow::exportReportDialog);
  menu->addSeparator();
  menu->addAction(tr("Se&ttings…"), this, &MainWindow::showSettingsDialog);
}

void MainWindow::buildHelpMenu() {
  QMenu* help = menuBar()->addMenu(tr("&Help"));
  help->addAction(tr("Navigation"), this, [this] {
    QMessageBox::information(
        this, tr("Navigation"),
        tr("Wheel: zoom at the cursor · Shift+wheel: scroll lanes\n"
           "Drag: pan · Shift+drag: select a range (duration and overlap %)\n"
           "W/S: zoom in/out at the cursor · A/D: pan · F: fit the selection or everything\n"
           "Double-click in a selection: zoom to it · Esc: clear\n"
           "Click a bucket: its dependency flows (ready → allreduce → optimizer)"));
  });
}

int MainWindow::openRunIndex(const QStringList& paths) const {
  const auto canonical = [](const QStringList& list) {
    QStringList out;
    for (const auto& p : list) {
      const QFileInfo f(p);  // the same file by any spelling of its path
      out << (f.exists() ? f.canonicalFilePath() : QDir::cleanPath(f.absoluteFilePath()));
    }
    out.sort();
    return out;
  };
  const QStringList wanted = canonical(paths);
  const auto& runs = session_->runs();
  for (std::size_t i = 0; i < runs.size(); ++i)
    if (canonical(runs[i]->paths) == wanted) return static_cast<int>(i);
  return -1;
}

void MainWindow::openPaths(const QStringList& paths) {
  if (paths.isEmpty()) return;
  // A run that is open already is shown again, not loaded a second time.
  if (const int open = openRunIndex(paths); open >= 0) {
    session_->setCurrent(open);
    status_->setText(tr("%1 is already open: showing it instead of loading it again")
                         .arg(session_->runs()[static_cast<std::size_t>(open)]->name));
    return;
  }
  if (paths.size() == 1 && analysis::isDigestFile(paths.front().toStdString())) {
    digest_job_->read(paths.front());
    return;
  }
  if (const QString reason = digestOfferReason(paths); !reason.isEmpty()) {
    const bool digest =
        digest_answer_ ? digest_answer_(reason)
                       : QMessageBox::question(
                             this, tr("Open a digest instead?"),
                             tr("This run is big: %1.\n\nOpen its digest instead (per rank and "
                                "step figures, made a file at a time), and then load the ranks "
                                "you choose? No loads every trace.")
                                 .arg(reason)) == QMessageBox::Yes;
    if (digest) {
      digest_job_->make(paths);
      return;
    }
  }
  loader_->start(paths);
}

void MainWindow::openForComparison(const QString& a, const QString& b) {
  compare_paths_ = {a, b};
  continueCompare();
}

void MainWindow::continueCompare() {
  if (compare_paths_.size() != 2) return;
  // Each path looked at once per call (isDigestFile reads its first bytes; a folder is none).
  const bool digest[2] = {analysis::isDigestFile(compare_paths_[0].toStdString()),
                          analysis::isDigestFile(compare_paths_[1].toStdString())};
  for (int i = 0; i < 2; ++i) {
    const QString& p = compare_paths_[i];
    if (digest[i]) {
      // A digest is small: read here, for the Compare tab only (its heatmap is the Digest tab's).
      if (compare_->digestIndex(QFileInfo(p).canonicalFilePath()) >= 0) continue;
      const DigestResult r = openDigestBlocking({p}, false);
      if (!r.digest) {
        compare_paths_.clear();
        reportError(tr("Could not open the digest"), tr("Could not open: %1").arg(r.error));
        return;
      }
      compare_->addDigest(r.digest, r.name, digestKey(r));
      continue;
    }
    if (openRunIndex({p}) < 0) {
      loader_->start({p});  // the next one when this one is loaded
      return;
    }
  }
  const auto indexOf = [&](int i) {
    const QString& p = compare_paths_[i];
    return digest[i] ? compare_->digestIndex(QFileInfo(p).canonicalFilePath()) : openRunIndex({p});
  };
  const int a = indexOf(0), b = indexOf(1);
  compare_paths_.clear();
  compare_->setRuns(a, b);
  tabs_->setCurrentWidget(compare_);
}

QString MainWindow::digestOfferReason(const QStringList& paths) const {
  const int max_ranks = settings::digestOfferRanks();
  const double max_gb = settings::digestOfferGB();
  if (max_ranks <= 0 && max_gb <= 0) return {};
  std::vector<std::string> inputs;
  for (const auto& p : paths)
    inputs.push_back(p.toStdString());
  std::vector<std::string> files;
  try {
    files = trace::expandTracePaths(inputs);
  } catch (const std::exception&) {
    return {};  // loading says what is wrong with the paths
  }
  qint64 bytes = 0;
  for (const auto& f : files)
    bytes += QFileInfo(QString::fromStdString(f)).size();
  const double gb = static_cast<double>(bytes) / 1e9;
  if (max_ranks > 0 && std::ssize(files) > max_ranks)
    return tr("%1 trace files, more than %2")
        .arg(QLocale().toString(static_cast<qlonglong>(files.size())))
        .arg(max_ranks);
  if (max_gb > 0 && gb > max_gb)
    return tr("%1 GB of traces, more than %2 GB").arg(gb, 0, 'f', 1).arg(max_gb);
  return {};
}

void MainWindow::connectDigest() {
  connect(digest_job_, &DigestJob::started, this, [this](const QStringList& paths, bool make) {
    progress_->setValue(0);
    progress_->setVisible(make);
    status_->setText(
        (make ? tr("Making the digest of %1 …") : tr("Opening the digest %1 …"))
            .arg(paths.size() == 1 ? paths.front() : tr("%1 paths").arg(paths.size())));
  });
  connect(digest_job_, &DigestJob::progress, this,
          [this](double f) { progress_->setValue(static_cast<int>(f * 1000)); });
  connect(digest_job_, &DigestJob::finished, this, [this] { progress_->setVisible(false); });
  connect(digest_job_, &DigestJob::failed, this, [this](const QString& message) {
    reportError(tr("Could not open the digest"), tr("Could not open: %1").arg(message));
  });
  connect(digest_job_, &DigestJob::opened, this, [this](const DigestResult& r) {
    digest_->setDigest(r.digest, r.name, r.folders);
    compare_->addDigest(r.digest, r.name, digestKey(r));  // A or B of the Compare tab too
    if (!r.file.isEmpty()) addRecent({r.file});
    tabs_->setCurrentWidget(digest_);
    // The heatmap needs the height; the timeline keeps a strip until ranks are loaded.
    if (auto* split = qobject_cast<QSplitter*>(tabs_->parentWidget())) {
      const int total = std::max(400, split->height());
      split->setSizes({total / 5, total - total / 5});
    }
    status_->setText(tr("Digest %1 · %2 ranks · opened in %3 s · select ranks to load them")
                         .arg(r.name)
                         .arg(r.digest->ranks.size())
                         .arg(r.seconds, 0, 'f', 2));
  });
  connect(digest_, &DigestView::loadRequested, this,
          [this](const QStringList& files, const QString&) { loader_->start(files); });
  connect(digest_, &DigestView::loadFailed, this,
          [this](const QString& message) { reportError(tr("Could not load the ranks"), message); });
}

void MainWindow::openFilesDialog() {
  const QStringList files = QFileDialog::getOpenFileNames(
      this, tr("Open traces (one run: one file per rank, or a capture)"), QString(),
      // Every importer's extensions (tracer/format/importer.h).
      QString::fromStdString(trace::dialogNameFilter()) + QStringLiteral(";;") +
          tr("All files (*)"));
  openPaths(files);
}

void MainWindow::openFolderDialog() {
  const QString dir =
      QFileDialog::getExistingDirectory(this, tr("Open a run folder (rank-*.json.gz)"));
  if (!dir.isEmpty()) openPaths({dir});
}

void MainWindow::addRecent(const QStringList& paths) {
  QSettings settings(QStringLiteral("ddpscope"), QStringLiteral("ddpscope"));
  QStringList recent = settings.value(kRecentKey).toStringList();
  QStringList absolute;
  for (const auto& p : paths)
    absolute << QFileInfo(p).absoluteFilePath();
  const QString entry = absolute.join(QLatin1Char('\n'));
  recent.removeAll(entry);
  recent.prepend(entry);
  while (recent.size() > kMaxRecent)
    recent.removeLast();
  settings.setValue(kRecentKey, recent);
  refreshRecentMenu();
}

void MainWindow::refreshRecentMenu() {
  recent_menu_->clear();
  QSettings settings(QStringLiteral("ddpscope"), QStringLiteral("ddpscope"));
  const QStringList recent = settings.value(kRecentKey).toStringList();
  for (const QString& entry : recent) {
    const QStringList paths = entry.split(QLatin1Char('\n'));
    recent_menu_->addAction(paths.size() == 1
                                ? paths.front()
                                : tr("%1 (+%2 files)").arg(paths.front()).arg(paths.size() - 1),
                            this, [this, paths] { openPaths(paths); });
  }
  recent_menu_->setEnabled(!recent.isEmpty());
}

QString MainWindow::statusText() const {
  return status_->text();
}

void MainWindow::reportError(const QString& title, const QString& message) {
  last_error_ = message;
  status_->setText(message);
  if (!error_dialogs_) return;
  auto* box = new QMessageBox(QMessageBox::Critical, title, message, QMessageBox::Ok, this);
  box->setInformativeText(session_->runs().empty() ? QString()
                                                   : tr("The runs already open are unchanged."));
  box->setAttribute(Qt::WA_DeleteOnClose);
  box->open();
}

bool MainWindow::exportView(const QString& what, const QString& path, double scale,
                            QString* error) {
  if (what == QLatin1String("timeline")) return timeline_->exportImage(path, scale, error);
  // The chart of the tab that is showing.
  if (auto* panel = dynamic_cast<ChartExport*>(tabs_->currentWidget()))
    return panel->exportChart(path, scale, error);
  if (error) {
    *error = tr("the %1 tab has no chart: choose Summary, Buckets, Sweep, Compare or Digest, or "
                "export the timeline (File ▸ Export timeline…)")
                 .arg(tabs_->tabText(tabs_->currentIndex()).remove(QLatin1Char('&')));
  }
  return false;
}

void MainWindow::exportDialog(bool timeline) {
  const QString path = QFileDialog::getSaveFileName(
      this, timeline ? tr("Export timeline") : tr("Export chart"), QStringLiteral("ddpscope.png"),
      tr("PNG (*.png);;SVG (*.svg);;PDF (*.pdf)"));
  if (path.isEmpty()) return;
  exportTo(timeline ? QStringLiteral("timeline") : QStringLiteral("chart"), path, 2.0);
}

bool MainWindow::exportTo(const QString& what, const QString& path, double scale) {
  QString error;
  if (!exportView(what, path, scale, &error)) {
    reportError(tr("Export failed"), tr("Export failed: %1").arg(error));
    return false;
  }
  status_->setText(tr("Exported %1").arg(path));
  return true;
}

bool MainWindow::exportReport(const QString& dir, QString* error) {
  const auto run = session_->current();
  if (!run) {
    if (error) *error = tr("open or run a trace first");
    return false;
  }
  if (sweep_->awaitingPrediction()) {
    if (error) *error = tr("a report is already being written (waiting for its prediction)");
    return false;
  }
  // The what-if prediction of this run: the Sweep tab's, awaited while PredictionJob computes it
  // off the GUI thread (the window keeps drawing under a modal progress dialog); its chart is the
  // predicted figure. Without one (failed, cancelled) the report is written and says why. Awaited
  // first: the report's text and its figures (rendered from the views) must be of the same run.
  QString no_prediction;
  const auto predicted = sweep_->awaitPrediction(run, &no_prediction);
  if (session_->current() != run) {
    if (error)
      *error =
          tr("the run changed while the report waited for its prediction; nothing was "
             "written");
    return false;
  }
  analysis::DesignReportInput in =
      analysis::designReportInputFor(run->run, run->report, run->name.toStdString());
  if (run->incomplete()) in.incomplete_note = run->incompleteText().toStdString();
  std::vector<ReportFigure> figures;
  in.timeline_png = "timeline.png";
  // A run of more ranks than a figure draws (TimelineView::kExportRanks): the ranks the title
  // names (the late rank, the rank that went quiet first), when not among those drawn, have their
  // lanes pinned above them in the timeline figures.
  const auto& ranks = run->run.ranks;
  const auto named = timeline_->namedRanksBeyondExport();
  if (ranks.size() > static_cast<std::size_t>(TimelineView::kExportRanks)) {
    const auto late = analysis::summarizeStragglers(run->report).late_rank;
    std::string pinned_text;
    for (const auto& [index, note] : named) {
      const auto rank = ranks[static_cast<std::size_t>(index)].rank;
      pinned_text += " and of rank " + std::to_string(rank) +
                     (late == rank ? ", the late rank," : ", the rank that went quiet first,");
    }
    in.step_figures_lanes =
        "the lanes of ranks " + std::to_string(ranks.front().rank) + "–" +
        std::to_string(ranks[TimelineView::kExportRanks - 1].rank) +
        (pinned_text.empty() ? std::string() : pinned_text + " pinned above them") + " (of " +
        std::to_string(ranks.size()) + " ranks)";
  }
  const auto render = [this](const QString& caption, QByteArray* out, QString* e) {
    return timeline_->renderNamedRanksImage(ExportFormat::Png, 1.5, out, e, 0, caption);
  };
  figures.push_back({QStringLiteral("timeline.png"),
                     [render](QByteArray* png, QString* e) { return render(QString(), png, e); }});
  // The median step and a clearly slower one, each drawn over its window on every rank (the view
  // is put back after each figure), its caption under the title.
  for (const auto& shown : analysis::stepsToShow(run->report, run->summary.selection)) {
    const auto window = analysis::stepWindow(run->run, shown.step);
    if (!window) continue;  // a selected step is on every rank; kept safe all the same
    const std::string png = "step-" + std::to_string(shown.step) + ".png";
    in.step_figures.push_back({png, shown.caption});
    const QString note = QString::fromStdString(shown.caption);
    figures.push_back({QString::fromStdString(png),
                       [this, render, note, w = *window](QByteArray* out, QString* e) {
                         const TimeRange saved = session_->viewRange();
                         session_->setViewRange({w.first, w.second});
                         const bool ok = render(note, out, e);
                         session_->setViewRange(saved);
                         return ok;
                       }});
  }
  if (!sweep_->points().empty()) {
    in.sweep = sweep_->points();
    in.recommendation = sweep_->recommendation();
    in.sweep_png = "sweep.png";
    figures.push_back({QStringLiteral("sweep.png"), [this](QByteArray* png, QString* e) {
                         return sweep_->renderChart(ExportFormat::Png, 1.5, png, e);
                       }});
  }
  if (predicted && predicted->error.isEmpty()) {
    in.whatif = &predicted->whatif;
    if (predicted->whatif.model.usable && sweep_->prediction() == predicted) {
      // With a sweep, the sweep's figure already is this chart (measured points and curve).
      in.predicted_png = in.sweep_png.empty() ? "predicted.png" : in.sweep_png;
      if (in.sweep_png.empty())
        figures.push_back({QStringLiteral("predicted.png"), [this](QByteArray* png, QString* e) {
                             return sweep_->renderChart(ExportFormat::Png, 1.5, png, e);
                           }});
    }
  } else {
    in.whatif_missing =
        (predicted ? tr("the predictor failed: %1").arg(predicted->error) : no_prediction)
            .toStdString();
  }
  // Two sides (not A against A), each a run or a digest (its figures, no lanes).
  if (!compare_->rows().empty() && compare_->twoSides()) {
    in.compare_name_a = compare_->sideName(false).toStdString();
    in.compare_name_b = compare_->sideName(true).toStdString();
    in.compare_configuration_a = compare_->configurationOf(false);
    in.compare_configuration_b = compare_->configurationOf(true);
    in.compare_includes_this_run = compare_->runA() == run || compare_->runB() == run;
    in.comparison = compare_->rows();
    in.compare_png = "compare.png";
    figures.push_back({QStringLiteral("compare.png"), [this](QByteArray* png, QString* e) {
                         return compare_->renderChart(ExportFormat::Png, 1.5, png, e);
                       }});
  }
  QStringList written;
  if (!writeDesignReport(in, figures, dir, &written, error)) return false;
  status_->setText(
      tr("Design report written to %1 (%2 files)").arg(dir).arg(written.size()) +
      (in.whatif_missing.empty()
           ? QString()
           : tr(", without its prediction: %1").arg(QString::fromStdString(in.whatif_missing))));
  return true;
}

void MainWindow::exportReportDialog() {
  const QString dir = QFileDialog::getExistingDirectory(this, tr("Folder for the report"));
  if (dir.isEmpty()) return;
  exportReportTo(dir);
}

bool MainWindow::exportReportTo(const QString& dir) {
  QString error;
  if (exportReport(dir, &error)) return true;
  reportError(tr("Report not written"), tr("Report not written: %1").arg(error));
  return false;
}

void MainWindow::showSettingsDialog() {
  if (!editRunSettings(this, session_)) return;
  run_panel_->refreshFromSettings();
  applyAppTheme(settings::theme());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  if (event->mimeData()->hasUrls()) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  QStringList paths;
  for (const QUrl& url : event->mimeData()->urls())
    if (url.isLocalFile()) paths << url.toLocalFile();
  openPaths(paths);
  event->acceptProposedAction();
}

}  // namespace ddpscope::ui
