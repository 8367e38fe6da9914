#include "app/ui/run_controls.h"

#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileDialog>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QPushButton>
#include <QStatusBar>
#include <QStyle>
#include <QStyleFactory>
#include <QTabWidget>
#include <QVBoxLayout>

#include "app/ui/compare_panel.h"
#include "app/ui/main_window.h"
#include "app/ui/report_export.h"
#include "app/ui/run_panel.h"
#include "app/ui/session.h"
#include "app/ui/sweep_panel.h"
#include "app/ui/timeline_view.h"

namespace ddpscope::ui {

RunControls* RunControls::of(MainWindow* window) {
  if (auto* existing = window->findChild<RunControls*>(QString(), Qt::FindDirectChildrenOnly))
    return existing;
  return new RunControls(window);
}

RunControls::RunControls(MainWindow* window) : QObject(window), window_(window) {
  Session* session = window->session();
  run_panel_ = new RunPanel(session, window);
  window->leftColumn()->addWidget(run_panel_);
  sweep_ = new SweepPanel(
      session, [this] { return run_panel_->parameters(); }, window);
  compare_ = new ComparePanel(session, window);
  window->tabs()->addTab(sweep_, tr("Sweep"));
  window->tabs()->addTab(compare_, tr("Compare"));
  connect(run_panel_, &RunPanel::sweepRequested, this,
          [this] { window_->tabs()->setCurrentWidget(sweep_); });

  QMenu* menu = new QMenu(tr("&Run"), window);
  QAction* help = nullptr;
  for (QAction* a : window->menuBar()->actions())
    if (a->text().contains(QLatin1String("Help"))) help = a;
  window->menuBar()->insertMenu(help, menu);
  menu->addAction(tr("&Run agent"), QKeySequence(Qt::CTRL | Qt::Key_R), run_panel_,
                  &RunPanel::startRun);
  menu->addAction(tr("&Cancel run"), run_panel_, &RunPanel::cancelRun);
  menu->addAction(tr("&Sweep bucket sizes"), this, [this] {
    window_->tabs()->setCurrentWidget(sweep_);
    sweep_->start();
  });
  menu->addAction(tr("C&ompare runs"), this,
                  [this] { window_->tabs()->setCurrentWidget(compare_); });
  menu->addSeparator();
  menu->addAction(tr("Export design &report…"), this, &RunControls::exportReportDialog);
  menu->addSeparator();
  menu->addAction(tr("Se&ttings…"), this, &RunControls::showSettingsDialog);
  applyTheme();
}

bool RunControls::exportReport(const QString& dir, QString* error) {
  const auto run = window_->session()->current();
  if (!run) {
    if (error) *error = tr("open or run a trace first");
    return false;
  }
  analysis::DesignReportInput in;
  in.run_name = run->name.toStdString();
  in.source = std::string(run->source());
  if (!run->run.ranks.empty()) in.config = run->run.ranks.front().ddpscope.config;
  in.report = &run->report;
  if (run->incomplete()) in.incomplete_note = run->incompleteText().toStdString();
  std::vector<ReportFigure> figures;
  in.timeline_png = "timeline.png";
  figures.push_back({QStringLiteral("timeline.png"), [this](QByteArray* png, QString* e) {
                       return window_->timeline()->renderImage(ExportFormat::Png, 1.5, png, e);
                     }});
  if (!sweep_->points().empty()) {
    in.sweep = sweep_->points();
    in.recommendation = sweep_->recommendation();
    in.sweep_png = "sweep.png";
    figures.push_back({QStringLiteral("sweep.png"), [this](QByteArray* png, QString* e) {
                         return sweep_->renderChart(ExportFormat::Png, 1.5, png, e);
                       }});
  }
  if (!compare_->rows().empty()) {
    in.compare_name_a = compare_->runA()->name.toStdString();
    in.compare_name_b = compare_->runB()->name.toStdString();
    in.comparison = compare_->rows();
    in.compare_png = "compare.png";
    figures.push_back({QStringLiteral("compare.png"), [this](QByteArray* png, QString* e) {
                         return compare_->renderChart(ExportFormat::Png, 1.5, png, e);
                       }});
  }
  QStringList written;
  if (!writeDesignReport(in, figures, dir, &written, error)) return false;
  window_->statusBar()->showMessage(
      tr("Design report written to %1 (%2 files)").arg(dir).arg(written.size()), 8000);
  return true;
}

void RunControls::exportReportDialog() {
  const QString dir = QFileDialog::getExistingDirectory(window_, tr("Folder for the report"));
  if (dir.isEmpty()) return;
  exportReportTo(dir);
}

bool RunControls::exportReportTo(const QString& dir) {
  QString error;
  if (exportReport(dir, &error)) return true;
  window_->reportError(tr("Report not written"), tr("Report not written: %1").arg(error));
  return false;
}

void RunControls::showSettingsDialog() {
  QDialog dialog(window_);
  dialog.setWindowTitle(tr("Run settings"));
  auto* form = new QFormLayout(&dialog);
  auto* agent = new QLineEdit(settings::agentPath(), &dialog);
  auto* browse = new QPushButton(tr("Browse…"), &dialog);
  auto* agent_row = new QHBoxLayout;
  agent_row->addWidget(agent, 1);
  agent_row->addWidget(browse);
  connect(browse, &QPushButton::clicked, &dialog, [&] {
    const QString f = QFileDialog::getOpenFileName(&dialog, tr("ddpscope-agent"), agent->text());
    if (!f.isEmpty()) agent->setText(f);
  });
  auto* launcher = new QLineEdit(settings::launcherTemplate(), &dialog);
  launcher->setPlaceholderText(
      QStringLiteral("mpirun -np {world} --hostfile {hostfile} {agent} {args}"));
  launcher->setToolTip(
      tr("Split into arguments like a shell would, then {args} becomes the agent's arguments and "
         "{world}, {hostfile}, {agent}, {out} are filled in. Nothing is run through a shell."));
  auto* hostfile = new QLineEdit(settings::hostfile(), &dialog);
  auto* traces = new QLineEdit(settings::tracesFolder(), &dialog);
  traces->setToolTip(tr("New runs are written here; for multi-node runs, a path all nodes share"));
  auto* theme = new QComboBox(&dialog);
  theme->addItem(tr("system"), QStringLiteral("system"));
  theme->addItem(tr("light"), QStringLiteral("light"));
  theme->addItem(tr("dark"), QStringLiteral("dark"));
  theme->setCurrentIndex(std::max(0, theme->findData(settings::theme())));
  form->addRow(tr("agent"), agent_row);
  form->addRow(tr("launcher template"), launcher);
  form->addRow(tr("hostfile"), hostfile);
  form->addRow(tr("traces folder"), traces);
  form->addRow(tr("theme"), theme);
  auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, &dialog);
  form->addRow(buttons);
  connect(buttons, &QDialogButtonBox::accepted, &dialog, &QDialog::accept);
  connect(buttons, &QDialogButtonBox::rejected, &dialog, &QDialog::reject);
  if (dialog.exec() != QDialog::Accepted) return;
  settings::setAgentPath(agent->text().trimmed() == settings::defaultAgentPath()
                             ? QString()
                             : agent->text().trimmed());
  settings::setLauncherTemplate(launcher->text().trimmed());
  settings::setHostfile(hostfile->text().trimmed());
  settings::setTracesFolder(traces->text().trimmed());
  settings::setTheme(theme->currentData().toString());
  run_panel_->refreshFromSettings();
  applyTheme();
}

void RunControls::applyTheme() {
  const QString theme = settings::theme();
  if (theme == QLatin1String("system")) return;  // the window follows the system palette
  QApplication::setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
  QPalette pal = QApplication::style()->standardPalette();
  if (theme == QLatin1String("dark")) {
    pal.setColor(QPalette::Window, QColor(0x2B, 0x2B, 0x2B));
    pal.setColor(QPalette::WindowText, QColor(0xE6, 0xE6, 0xE6));
    pal.setColor(QPalette::Base, QColor(0x1E, 0x1E, 0x1E));
    pal.setColor(QPalette::AlternateBase, QColor(0x2B, 0x2B, 0x2B));
    pal.setColor(QPalette::Text, QColor(0xE6, 0xE6, 0xE6));
    pal.setColor(QPalette::Button, QColor(0x35, 0x35, 0x35));
    pal.setColor(QPalette::ButtonText, QColor(0xE6, 0xE6, 0xE6));
    pal.setColor(QPalette::Mid, QColor(0x60, 0x60, 0x60));
  }
  QApplication::setPalette(pal);
}

}  // namespace ddpscope::ui
