#pragma once
// Summary tab: per-rank table (overlap, exposed communication, step time, DP efficiency) and a
// per-step chart (step time split into exposed communication and the rest).

#include <QWidget>

#include "app/ui/plot_export.h"

class QTableWidget;
class QCustomPlot;
class QLabel;

namespace ddpscope::ui {

class Session;

class SummaryPanel : public QWidget, public ChartExport {
  Q_OBJECT
 public:
  explicit SummaryPanel(Session* session, QWidget* parent = nullptr);
  QTableWidget* table() const { return table_; }
  QLabel* note() const { return note_; }
  QCustomPlot* chart() const { return chart_; }
  // The chart with the run's title line (name, source, headline numbers).
  bool exportChart(const QString& path, double scale, QString* error) override;

 private:
  void refresh();
  Session* session_;
  QLabel* note_;
  QTableWidget* table_;
  QCustomPlot* chart_;
};

}  // namespace ddpscope::ui
