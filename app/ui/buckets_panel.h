#pragma once
// Buckets tab: one row per bucket and step of the steps the run summary covers (id, tensors, MB,
// ready from the step's start, wait, duration, busbw, exposed: BucketsModel), a bar chart of each
// bucket's mean allreduce over those steps (hidden vs exposed: analysis::bucketMeans), and the
// parameters of the selected bucket. The note above says which steps, and why. Selecting a row
// selects the bucket in the session (the timeline highlights it).

#include <QWidget>

#include "app/ui/plot_export.h"

class QTableView;
class QSortFilterProxyModel;
class QTreeWidget;
class QCustomPlot;
class QLabel;

namespace ddpscope::ui {

class Session;
class BucketsModel;
struct LoadedRun;

class BucketsPanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  explicit BucketsPanel(Session* session, QWidget* parent = nullptr);
  // The table: a view of BucketsModel through a proxy that sorts by the numbers.
  QTableView* table() const { return table_; }
  BucketsModel* model() const { return model_; }
  QTreeWidget* params() const { return params_; }
  QCustomPlot* chart() const { return chart_; }
  // The chart with the run's title line (name, source, headline numbers and the steps covered,
  // which are the chart's).
  bool exportChart(const QString& path, double scale, QString* error) override;
  QString noteText() const;

 private:
  void refresh();
  void refreshNote(const LoadedRun& run);
  void refreshChart(const LoadedRun& run);
  void showSelection();
  Session* session_;
  QLabel* note_;
  BucketsModel* model_;
  QSortFilterProxyModel* sorted_;
  QTableView* table_;
  QTreeWidget* params_;
  QCustomPlot* chart_;
};

}  // namespace ddpscope::ui
