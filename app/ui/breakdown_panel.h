#pragma once
// The Steps tab (docs/UI.md "Steps"): per step, a stacked bar of where the step's time went
// (analysis::stepBreakdownRows: compute, hidden and exposed communication, memory, other and
// idle time by what the host was doing), as the mean over the ranks or for one rank. Hovering a
// bar gives its parts; clicking one zooms the timeline to that step.

#include <QWidget>
#include <vector>

#include "app/analysis/step_breakdown.h"
#include "app/ui/plot_export.h"

class QComboBox;
class QCustomPlot;
class QLabel;
class QPoint;

namespace ddpscope::ui {

class Session;
class TimelineView;

class BreakdownPanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  BreakdownPanel(Session* session, TimelineView* timeline, QWidget* parent = nullptr);
  QCustomPlot* chart() const { return chart_; }
  QComboBox* rankChoice() const { return rank_; }
  QString noteText() const;
  // The rows drawn, one per step (the chosen rank's, or the mean over the ranks).
  const std::vector<analysis::StepBreakdownRow>& rows() const { return rows_; }
  // The row whose bar is under `pos` (chart pixels), or -1.
  int rowAt(const QPoint& pos) const;
  // The hover text of row i: the step, its time and each part with its share.
  QString rowText(int i) const;
  // What a click on row i's bar does: zooms the timeline to its step (the chosen rank's).
  bool activateRow(int i);
  // The names of the series stacked, bottom to top (for tests and the legend).
  QStringList seriesNames() const;
  bool exportChart(const QString& path, double scale, QString* error) override;

 private:
  void refresh();
  void refillRanks();
  int rankIndex() const;  // -1: mean over the ranks
  Session* session_;
  TimelineView* timeline_;
  QLabel* note_;
  QComboBox* rank_;
  QCustomPlot* chart_;
  std::vector<analysis::StepBreakdownRow> rows_;
};

}  // namespace ddpscope::ui
