#include "app/ui/compare_model.h"

namespace ddpscope::ui {

CompareModel::CompareModel(QObject* parent) : QAbstractTableModel(parent) {}

void CompareModel::setRows(std::vector<analysis::ComparisonRow> rows) {
  beginResetModel();
  rows_ = std::move(rows);
  endResetModel();
}

int CompareModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CompareModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant CompareModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return {};
  switch (section) {
    case kMetric:
      return tr("metric");
    case kA:
      return tr("A");
    case kB:
      return tr("B");
    case kDelta:
      return tr("B − A");
    default:
      return {};
  }
}

QVariant CompareModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= rowCount()) return {};
  const auto& r = rows_[static_cast<std::size_t>(index.row())];
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(index.column() == kMetric ? Qt::AlignLeft | Qt::AlignVCenter
                                                         : Qt::AlignRight | Qt::AlignVCenter);
  if (role != Qt::DisplayRole) return {};
  switch (index.column()) {
    case kMetric:
      return QString::fromStdString(r.metric);
    case kA:
      return QString::fromStdString(r.a);
    case kB:
      return QString::fromStdString(r.b);
    case kDelta:
      return QString::fromStdString(r.delta);
    default:
      return {};
  }
}

}  // namespace ddpscope::ui
