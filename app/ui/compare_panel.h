#pragma once
// The Compare tab: two loaded runs stacked on one time axis, aligned at the start of a chosen step
// (rank 0's lanes of each, drawn by the timeline's LanePlottable), and the table of differences
// (analysis::compareRuns). The "fused vs unfused" / "overlapped vs not" picture. A run digest
// opened this session (the Digest tab's) can be A or B too: it has no lanes, so none are drawn,
// and the table compares its figures (analysis::compareSummaries).

#include <QWidget>
#include <memory>
#include <vector>

#include "app/analysis/sweep.h"
#include "app/ui/plot_export.h"

class QComboBox;
class QCustomPlot;
class QCPAxisRect;
class QCPTextElement;
class QHBoxLayout;
class QLabel;
class QTableView;

namespace ddpscope::analysis {
struct Digest;
}

namespace ddpscope::ui {

class Session;
class CompareModel;
struct LoadedRun;

class ComparePanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  explicit ComparePanel(Session* session, QWidget* parent = nullptr);

  // Indices into Session::runs(), then into the digests added (Session::runs().size() + k: the
  // k-th); step: the step number both are aligned at. By default the first step of A's run
  // summary (its step selection) that B has too: never a warm-up step the figures leave out,
  // unless the runs share no other; stepNote() says which and why.
  void setRuns(int a, int b);
  // A digest opened this session, offered after the runs as "NAME [digest]"; `key` tells one
  // digest from another (its file's canonical path): the same one opened again replaces its
  // entry.
  void addDigest(std::shared_ptr<const analysis::Digest> digest, const QString& name,
                 const QString& key);
  // The index setRuns takes for the digest added with `key`, or -1.
  int digestIndex(const QString& key) const;
  std::shared_ptr<const analysis::Digest> digestA() const { return da_.digest; }
  std::shared_ptr<const analysis::Digest> digestB() const { return db_.digest; }
  void setStep(int step);
  int step() const;
  // The runs picked; null for a side that is a digest.
  std::shared_ptr<const LoadedRun> runA() const { return a_; }
  std::shared_ptr<const LoadedRun> runB() const { return b_; }
  const std::vector<analysis::ComparisonRow>& rows() const { return rows_; }
  // The warning above the table when A and B are not like for like ("" when they are).
  QString warningText() const;
  QString sideName(bool b) const;             // the run's or the digest's name
  std::string configurationOf(bool b) const;  // runConfigurationText or digestConfigurationText
  // Whether A and B are two sides to compare: each a run or a digest, not one picked twice.
  bool twoSides() const;

  QCustomPlot* plot() const { return plot_; }
  QTableView* table() const { return table_; }
  CompareModel* model() const { return model_; }
  // Which step the lanes are aligned at, and why (the steps A's and B's figures cover).
  QString stepNote() const;
  QComboBox* runBoxA() const { return box_a_; }
  QComboBox* runBoxB() const { return box_b_; }
  // Start of the chosen step in each run (rank 0), in the run's time; -1 when it has no such step.
  trace::TimeNs stepStart(bool b) const;
  // Writes both runs' lanes in the light theme (PNG/SVG/PDF by extension), or renders them.
  bool exportChart(const QString& path, double scale, QString* error) override;
  bool renderChart(ExportFormat format, double scale, QByteArray* out, QString* error);
  // What an exported chart carries under the lanes: each run's configuration, the warning when
  // they are not like for like, the table (rows()) and the step note.
  FigureTable figureTable() const;
  // The legend under the lanes (what the colours mean in either run), when shown.
  QStringList legendTexts() const;

 private:
  QHBoxLayout* buildPickers();  // A, B and the step they are aligned at
  void setUpPlot();             // two axis rects, one time axis following the other
  void refreshRunLists();
  void refreshSteps();
  // Titles, lanes and table for the runs and step picked.
  void rebuild();
  // Both runs' lanes from their origins (a step's start, or the first GPU activity), `length`
  // of each shown, the time axes labelled `axis_label`.
  void showAligned(trace::TimeNs origin_a, trace::TimeNs origin_b, trace::TimeNs length,
                   const QString& axis_label);
  void buildRect(QCPAxisRect* rect, const LoadedRun& run, trace::TimeNs origin);
  void fillTable();  // analysis::compareRuns of A and B, and whether they are like for like
  // A or B a digest: no lanes, the table of both summaries, the warning and the note.
  void showWithDigest(QCPTextElement* title_a, QCPTextElement* title_b);
  int legendHeight() const;  // the room the legend takes under the lanes (0 when hidden)

  Session* session_;
  QComboBox* box_a_;
  QComboBox* box_b_;
  QComboBox* step_box_;
  QCustomPlot* plot_;
  QTableView* table_;
  CompareModel* model_;
  QLabel* warning_;
  QLabel* step_note_;
  std::shared_ptr<const LoadedRun> a_, b_;
  struct DigestEntry {
    std::shared_ptr<const analysis::Digest> digest;
    QString name;
    QString key;
  };
  std::vector<DigestEntry> digests_;  // in the order added
  DigestEntry da_, db_;               // a side that is a digest (a_ or b_ then null)
  std::vector<analysis::ComparisonRow> rows_;
  bool syncing_ = false;
};

}  // namespace ddpscope::ui
