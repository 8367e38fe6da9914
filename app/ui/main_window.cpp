#include "app/ui/main_window.h"

#include <qcustomplot.h>
#include <QAction>
#include <QApplication>
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

#include "app/ui/buckets_panel.h"
#include "app/ui/details_panel.h"
#include "app/ui/headline_bar.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/run_controls.h"
#include "app/ui/run_list_panel.h"
#include "app/ui/run_load_job.h"
#include "app/ui/session.h"
#include "app/ui/summary_panel.h"
#include "app/ui/timeline_view.h"

namespace ddpscope::ui {

namespace {
constexpr int kMaxRecent = 8;
const char* kRecentKey = "recentRuns";
}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent), session_(new Session(this)), loader_(new RunLoadJob(this)) {
  setWindowTitle(QStringLiteral("ddpscope"));
  setAcceptDrops(true);
  timeline_ = new TimelineView(session_, this);
  headline_ = new HeadlineBar(session_, this);
  summary_ = new SummaryPanel(session_, this);
  buckets_ = new BucketsPanel(session_, this);
  details_ = new DetailsPanel(session_, this);
  runs_ = new RunListPanel(session_, this);

  auto* left = new QWidget(this);
  left_column_ = new QVBoxLayout(left);
  left_column_->setContentsMargins(0, 0, 0, 0);
  left_column_->addWidget(runs_, 1);
  left->setMinimumWidth(200);

  auto* centre = new QWidget(this);
  auto* centre_layout = new QVBoxLayout(centre);
  centre_layout->setContentsMargins(0, 0, 0, 0);
  centre_layout->setSpacing(0);
  centre_layout->addWidget(headline_);
  tabs_ = new QTabWidget(this);
  tabs_->addTab(summary_, tr("Summary"));
  tabs_->addTab(buckets_, tr("Buckets"));
  tabs_->addTab(details_, tr("Details"));
  connect(session_, &Session::eventSelected, this, [this] {
    if (session_->selectedEvent()) tabs_->setCurrentWidget(details_);
  });
  auto* vsplit = new QSplitter(Qt::Vertical, this);
  vsplit->addWidget(timeline_);
  vsplit->addWidget(tabs_);
  vsplit->setStretchFactor(0, 3);
  vsplit->setStretchFactor(1, 2);
  centre_layout->addWidget(vsplit, 1);
  // Give the timeline the height its lanes need (up to two thirds), the tabs the rest.
  connect(session_, &Session::currentRunChanged, vsplit, [this, vsplit] {
    const int total = std::max(400, vsplit->height());
    const int chrome = timeline_->plot()->height() - timeline_->plot()->axisRect()->height();
    const int want =
        std::clamp(timeline_->contentHeight() + std::max(chrome, 40) + 8, 240, total * 2 / 3);
    vsplit->setSizes({want, total - want});
  });

  auto* hsplit = new QSplitter(Qt::Horizontal, this);
  hsplit->addWidget(left);
  hsplit->addWidget(centre);
  hsplit->setStretchFactor(1, 1);
  hsplit->setSizes({220, 1200});
  setCentralWidget(hsplit);

  status_ = new QLabel(this);
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
    const QString source = sourceBadge(run->source());
    const QStringList warnings = runWarnings(*run);
    const QString text =
        tr("%1 · %2 events · loaded in %3 s · %4")
            .arg(run->name)
            .arg(QLocale().toString(static_cast<qlonglong>(run->run.eventCount())))
            .arg(run->load_seconds, 0, 'f', 2)
            .arg(source) +
        (warnings.isEmpty()
             ? QString()
             : QStringLiteral(" · %1: %2").arg(warningCount(warnings.size()), warnings.front()));
    // After the views were rebuilt for the run (the timeline clears the status bar then).
    session_->addRun(std::move(run));
    status_->setText(text);
    status_->setToolTip(warnings.join(QLatin1Char('\n')));
    timeline_->setFocus();
  });
  connect(loader_, &RunLoadJob::failed, this, [this](const QString& message) {
    reportError(tr("Could not open the trace"), tr("Could not open: %1").arg(message));
  });
  connect(loader_, &RunLoadJob::cancelled, this, [this] {
    status_->setText(tr("Loading %1 cancelled; the runs already open are unchanged.")
                         .arg(loading_paths_.size() == 1
                                  ? loading_paths_.front()
                                  : tr("%1 paths").arg(loading_paths_.size())));
  });
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
  RunControls::of(this);  // run panel, Sweep and Compare tabs, Run menu (issue 7)
  resize(1500, 950);
}

MainWindow::~MainWindow() = default;

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
  view->addAction(tr("Clear selection (Esc)"), this, [this] {
    session_->setSelection(std::nullopt);
    session_->selectBucket(std::nullopt);
    session_->selectEvent(std::nullopt);
  });
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

void MainWindow::openPaths(const QStringList& paths) {
  if (paths.isEmpty()) return;
  loader_->start(paths);
}

void MainWindow::openFilesDialog() {
  const QStringList files =
      QFileDialog::getOpenFileNames(this, tr("Open traces (one run: one file per rank)"), QString(),
                                    tr("Traces (*.json *.json.gz);;All files (*)"));
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
    *error = tr("the %1 tab has no chart: choose Summary, Buckets, Sweep or Compare, or export "
                "the timeline (File ▸ Export timeline…)")
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
