#pragma once
// The Compare tab's table as a Qt model: one row per figure of analysis::compareRuns (metric, A,
// B, B − A), as the analysis words them.

#include <QAbstractTableModel>
#include <vector>

#include "app/analysis/sweep.h"

namespace ddpscope::ui {

class CompareModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { kMetric, kA, kB, kDelta, kColumnCount };

  explicit CompareModel(QObject* parent = nullptr);
  void setRows(std::vector<analysis::ComparisonRow> rows);
  const std::vector<analysis::ComparisonRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::vector<analysis::ComparisonRow> rows_;
};

}  // namespace ddpscope::ui
