#pragma once
// The Statistics tab (docs/UI.md "Statistics"): for the whole run or the selected range, the
// kernels by total time, each stream's busy share and the per-step figures, as sortable tables
// (statistics_model.h), each exportable as CSV. Clicking a row shows it on the timeline: a
// kernel's instances (a search for its name), a step, a stream's lane.

#include <QWidget>
#include <memory>

#include "app/ui/statistics_model.h"

class QLabel;
class QSortFilterProxyModel;
class QTabWidget;
class QTableView;
class QTimer;

namespace ddpscope::ui {

class Session;
class TimelineView;

class StatisticsPanel : public QWidget {
  Q_OBJECT
 public:
  enum Table { kKernels, kStreams, kSteps, kTableCount };

  StatisticsPanel(Session* session, TimelineView* timeline, QWidget* parent = nullptr);

  // Recomputes the tables now for the current run and selection (otherwise done shortly after
  // they change, while the tab is showing).
  void refresh();
  StatisticsTableModel* model(Table t) const { return models_[t]; }
  QSortFilterProxyModel* proxy(Table t) const { return proxies_[t]; }
  QTableView* view(Table t) const { return views_[t]; }
  QTabWidget* tables() const { return tabs_; }
  // "whole run" or "selection 12.3 ms (…)".
  QString scopeText() const;
  // Writes table `t` as CSV to `path`, atomically; false with a message naming the file.
  bool exportCsv(Table t, const QString& path, QString* error) const;
  // What a click on row `proxy_row` of table `t` does on the timeline.
  void activateRow(Table t, int proxy_row);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void schedule();
  void exportDialog();

  Session* session_;
  TimelineView* timeline_;
  QLabel* scope_;
  QTabWidget* tabs_;
  StatisticsTableModel* models_[kTableCount];
  QSortFilterProxyModel* proxies_[kTableCount];
  QTableView* views_[kTableCount];
  QTimer* pending_;
  bool dirty_ = true;
};

}  // namespace ddpscope::ui
