#pragma once
// Summary tab: per-rank table (overlap, exposed communication and its split into waiting for a
// late rank and transfer, step time, DP efficiency), communication per collective kind and rank
// (CollectivesModel) and a per-step chart (step time split into exposed communication and the
// rest).

#include <QWidget>
#include <cstdint>
#include <utility>
#include <vector>

#include "app/ui/plot_export.h"

class QTableView;
class QSortFilterProxyModel;
class QCustomPlot;
class QLabel;
class QCPItemRect;
class QSplitter;

namespace ddpscope::ui {

class Session;
class SummaryModel;
class CollectivesModel;
struct LoadedRun;

class SummaryPanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  explicit SummaryPanel(Session* session, QWidget* parent = nullptr);
  // The per-rank table: a view of SummaryModel through a proxy that sorts by the numbers.
  QTableView* table() const { return table_; }
  QLabel* note() const { return note_; }
  // Communication per collective kind and rank: a view of CollectivesModel, sorted by numbers.
  QTableView* kindsTable() const { return kinds_table_; }
  // The title above the per-kind table, with the footnote of its marked bandwidths.
  QLabel* kindsTitle() const { return kinds_title_; }
  QCustomPlot* chart() const { return chart_; }
  // The chart with the run's title line (name, source, headline numbers).
  bool exportChart(const QString& path, double scale, QString* error) override;
  // The step whose bar is at a position of the chart (-1: none). A click on a bar emits
  // stepActivated; a click on a rank's row of the table, rankActivated (its index in the run).
  int stepAt(const QPoint& chart_pos) const;

 signals:
  void stepActivated(std::int32_t step);
  void rankActivated(std::int32_t rank_index);

 protected:
  void resizeEvent(QResizeEvent* e) override;

 private:
  void refresh();
  // Gives the per-rank table the width its columns take (the chart the rest, at least its
  // minimum), until the user moves the divider.
  void fitTableWidth();
  void refreshNote(const LoadedRun& run);
  void refreshChart(const LoadedRun& run);
  Session* session_;
  std::vector<std::pair<std::int32_t, double>> bars_;  // step, its bar's height (ms)
  std::vector<QCPItemRect*> left_out_;  // hatched over the steps the headline leaves out
  QLabel* note_;
  SummaryModel* model_;
  QSortFilterProxyModel* sorted_;
  QTableView* table_;
  CollectivesModel* kinds_;
  QSortFilterProxyModel* kinds_sorted_;
  QTableView* kinds_table_;
  QLabel* kinds_title_ = nullptr;
  QCustomPlot* chart_;
  QSplitter* split_ = nullptr;
  bool split_moved_ = false;  // by the user: their sizes are kept
};

}  // namespace ddpscope::ui
