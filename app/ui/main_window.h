#pragma once
// The main window: runs on the left, headline numbers and the timeline in the middle, analysis
// tabs below. Owns the Session every view observes.

#include <QMainWindow>
#include <QStringList>
#include <functional>

class QTabWidget;
class QSplitter;
class QProgressBar;
class QToolButton;
class QLabel;
class QMenu;
class QVBoxLayout;
class QMessageBox;

namespace ddpscope::ui {

class Session;
class TimelineView;
class HeadlineBar;
class SummaryPanel;
class BucketsPanel;
class DetailsPanel;
class RunListPanel;
class RunLoadJob;
class RunPanel;
class SweepPanel;
class ComparePanel;
class StatisticsPanel;
class BreakdownPanel;
class DigestView;
class DigestJob;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  Session* session() const { return session_; }
  TimelineView* timeline() const { return timeline_; }
  HeadlineBar* headline() const { return headline_; }
  SummaryPanel* summary() const { return summary_; }
  BucketsPanel* buckets() const { return buckets_; }
  DetailsPanel* details() const { return details_; }
  QTabWidget* tabs() const { return tabs_; }
  // The divider between the timeline and the tabs (its place is remembered across sessions).
  QSplitter* centreSplitter() const { return centre_split_; }
  RunLoadJob* loader() const { return loader_; }
  // Relaunch (the left column's run panel), Sweep and Compare tabs.
  RunPanel* runPanel() const { return run_panel_; }
  SweepPanel* sweepPanel() const { return sweep_; }
  ComparePanel* comparePanel() const { return compare_; }
  StatisticsPanel* statisticsPanel() const { return statistics_; }
  // The Steps tab: where each step's time went.
  BreakdownPanel* breakdownPanel() const { return breakdown_; }
  // The Digest tab, and the job that reads or makes digests off the GUI thread.
  DigestView* digestView() const { return digest_; }
  DigestJob* digestJob() const { return digest_job_; }
  // The last error shown to the user ("" when none), for tests.
  QString lastError() const { return last_error_; }
  // The text of the status bar's message field.
  QString statusText() const;
  // When false, errors go to the status bar and lastError() only (headless use). When true they
  // also open a (window-modal, non-blocking) message box.
  void setErrorDialogsEnabled(bool on) { error_dialogs_ = on; }
  // Tells the user something failed: the status bar, lastError() and, when enabled, a message
  // box titled `title` that adds that the runs already open are unchanged.
  void reportError(const QString& title, const QString& message);

  // Loads files or folders as one run, off the GUI thread. A digest file opens in the Digest
  // tab; a run above the settings' digest threshold is offered as a digest first.
  void openPaths(const QStringList& paths);
  // `ddpscope --compare A B`: opens the runs A and B (each a file or a folder; one already open
  // is not loaded again) and shows them in the Compare tab, A above B.
  void openForComparison(const QString& a, const QString& b);
  // The index of the open run loaded from exactly these files or folders, or -1.
  int openRunIndex(const QStringList& paths) const;
  // Why `paths` should rather open as a digest ("1,024 trace files, more than 64"); "" when not.
  QString digestOfferReason(const QStringList& paths) const;
  // Answers the offer to digest a big run (true: digest it); default: asks with a message box.
  void setDigestOfferAnswer(std::function<bool(const QString& reason)> answer) {
    digest_answer_ = std::move(answer);
  }
  // Answers the offer to load a run without the files that could not be read (true: load the
  // others); default: asks with a message box (none without error dialogs: the error stands).
  void setSkipUnreadableAnswer(std::function<bool(const QString& question)> answer) {
    skip_answer_ = std::move(answer);
  }
  // Exports the chart of the current tab, or the timeline when `what` is "timeline".
  bool exportView(const QString& what, const QString& path, double scale, QString* error);
  // exportView, then tells the user: "Exported FILE" in the status bar, or reportError.
  bool exportTo(const QString& what, const QString& path, double scale);
  // Writes the design-review report of the current run into `dir` (report.md, report.html and
  // the PNG figures beside them); the sweep and the comparison when there are any, each naming
  // the runs it covers. Returns false with a message on failure.
  bool exportReport(const QString& dir, QString* error);
  // exportReport, then tells the user: the status bar, or reportError.
  bool exportReportTo(const QString& dir);
  // The run settings dialog; on OK the run panel and the theme follow the new settings.
  void showSettingsDialog();

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;

 private:
  void buildPanels();
  QWidget* buildLeftColumn();
  QWidget* buildCentre();
  void buildStatusBar();
  void connectLoader();
  void buildMenus();
  void buildViewMenu();
  void buildRunMenu();
  void buildHelpMenu();
  void exportReportDialog();
  void openFilesDialog();
  void openFolderDialog();
  void exportDialog(bool timeline);
  void addRecent(const QStringList& paths);
  void refreshRecentMenu();
  void connectDigest();
  void continueCompare();  // the next step of openForComparison

  Session* session_;
  RunLoadJob* loader_;
  TimelineView* timeline_;
  HeadlineBar* headline_;
  SummaryPanel* summary_;
  BucketsPanel* buckets_;
  DetailsPanel* details_;
  RunListPanel* runs_;
  RunPanel* run_panel_;
  SweepPanel* sweep_;
  ComparePanel* compare_;
  StatisticsPanel* statistics_;
  BreakdownPanel* breakdown_;
  DigestView* digest_;
  DigestJob* digest_job_;
  std::function<bool(const QString&)> digest_answer_;
  std::function<bool(const QString&)> skip_answer_;
  QTabWidget* tabs_;
  QSplitter* centre_split_ = nullptr;
  QProgressBar* progress_;
  QToolButton* cancel_;
  QLabel* status_;
  QMenu* recent_menu_ = nullptr;
  QString last_error_;
  QStringList loading_paths_;
  QStringList compare_paths_;  // A and B of openForComparison until both are open
  bool error_dialogs_ = true;
};

}  // namespace ddpscope::ui
