#pragma once
// Relaunch, sweep, compare and report (issue 7), installed into a MainWindow: the run panel in the
// left column under the runs list, the Sweep and Compare tabs, and a Run menu (Run, Sweep,
// Export design report, Settings). Everything talks through the window's Session.

#include <QObject>
#include <QString>

namespace ddpscope::ui {

class MainWindow;
class RunPanel;
class SweepPanel;
class ComparePanel;

class RunControls : public QObject {
  Q_OBJECT
 public:
  // The controls of `window`, installed on first use (idempotent).
  static RunControls* of(MainWindow* window);

  RunPanel* runPanel() const { return run_panel_; }
  SweepPanel* sweepPanel() const { return sweep_; }
  ComparePanel* comparePanel() const { return compare_; }

  // Writes the design-review report of the current run into `dir` (report.md, report.html and the
  // PNG figures beside them). Returns false with a message on failure.
  bool exportReport(const QString& dir, QString* error);
  // exportReport, then tells the user: the status bar, or MainWindow::reportError.
  bool exportReportTo(const QString& dir);
  void showSettingsDialog();

 private:
  explicit RunControls(MainWindow* window);
  void exportReportDialog();
  void applyTheme();

  MainWindow* window_;
  RunPanel* run_panel_;
  SweepPanel* sweep_;
  ComparePanel* compare_;
};

}  // namespace ddpscope::ui
