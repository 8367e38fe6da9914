#pragma once
// The Buckets tab's table as a Qt model: one row per bucket of every rank in the steps the run
// summary covers (analysis::inSelection of the run's step selection), with its ready time from
// the start of its step. It formats; the figures are the analysis's.

#include <QAbstractTableModel>
#include <memory>
#include <optional>
#include <vector>

#include "app/ui/session.h"

namespace ddpscope::ui {

class BucketsModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int kSortRole = Qt::UserRole + 2;  // the number behind the text
  enum Column {
    kRank,
    kStep,
    kId,
    kTensors,
    kSize,
    kReady,
    kWait,
    kDuration,
    kBusbw,
    kExposed,
    kColumnCount
  };

  explicit BucketsModel(QObject* parent = nullptr);
  void setRun(std::shared_ptr<const LoadedRun> run);

  // The bucket a row shows, and the row of a bucket (-1 when it is not shown: a step left out).
  BucketKey keyAt(int row) const;
  int rowOf(const BucketKey& key) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const LoadedRun> run_;
  std::vector<BucketKey> rows_;
};

}  // namespace ddpscope::ui
