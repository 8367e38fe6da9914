#pragma once
// The Summary tab's per-rank table as a Qt model: one row per rank with a trace, then one per
// rank of the declared world without one ("no trace"). Whole-trace columns come from the
// analysis's RankReport (the exposed part split into waiting for a late rank and transfer not
// hidden, by the collectives matched across ranks), step columns from the run summary's per-rank
// figures (over the steps the headline covers). It formats; the figures are the analysis's.

#include <QAbstractTableModel>
#include <memory>

namespace ddpscope::ui {

struct LoadedRun;

class SummaryModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // The value a column sorts by (a number behind "150 ms"); -1 for "n/a".
  static constexpr int kSortRole = Qt::UserRole + 2;
  enum Column {
    kRank,
    kSource,
    kOverlap,
    kComm,
    kHidden,
    kExposed,
    kExposedWait,
    kExposedTransfer,
    kStep,
    kExposedPerStep,
    kDpEfficiency,
    kGpuIdle,
    kKernels,
    kColumnCount
  };

  explicit SummaryModel(QObject* parent = nullptr);
  void setRun(std::shared_ptr<const LoadedRun> run);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  QVariant rankData(int row, int column, int role) const;
  QVariant missingData(int row, int column, int role) const;
  std::shared_ptr<const LoadedRun> run_;
  int missing_rows_ = 0;  // at most 1024 rows of ranks without a trace
};

}  // namespace ddpscope::ui
