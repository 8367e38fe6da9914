#pragma once
// Buckets tab: one row per bucket and step (id, tensors, MB, ready, wait, duration, busbw,
// exposed), a bar chart of each bucket's allreduce (hidden vs exposed), and the parameters of the
// selected bucket. Selecting a row selects the bucket in the session (the timeline highlights it).

#include <QWidget>

#include "app/ui/plot_export.h"

class QTableWidget;
class QTreeWidget;
class QCustomPlot;
class QLabel;

namespace ddpscope::ui {

class Session;
struct LoadedRun;

class BucketsPanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  explicit BucketsPanel(Session* session, QWidget* parent = nullptr);
  QTableWidget* table() const { return table_; }
  QTreeWidget* params() const { return params_; }
  QCustomPlot* chart() const { return chart_; }
  // The chart with the run's title line (name, source, headline numbers).
  bool exportChart(const QString& path, double scale, QString* error) override;
  QString noteText() const;

 private:
  void refresh();
  void refreshNote(const LoadedRun& run);
  void fillTable(const LoadedRun& run);  // one row per bucket and step, of every rank
  void refreshChart(const LoadedRun& run);
  void showSelection();
  Session* session_;
  QLabel* note_;
  QTableWidget* table_;
  QTreeWidget* params_;
  QCustomPlot* chart_;
};

}  // namespace ddpscope::ui
