#pragma once
// The Summary tab's communication per collective kind as a Qt model: one row per rank and kind
// of collective the rank ran (analysis::CollectiveStats, whole trace): count, bytes, time, hidden
// and exposed parts, overlap %, algbw and busbw. It formats; the figures are the analysis's.

#include <QAbstractTableModel>
#include <memory>
#include <utility>
#include <vector>

namespace ddpscope::ui {

struct LoadedRun;

class CollectivesModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  static constexpr int kSortRole = Qt::UserRole + 2;  // the number behind the text
  enum Column {
    kRank,
    kKind,
    kCount,
    kBytes,
    kTime,
    kHidden,
    kExposed,
    kOverlap,
    kAlgbw,
    kBusbw,
    kColumnCount
  };

  explicit CollectivesModel(QObject* parent = nullptr);
  void setRun(std::shared_ptr<const LoadedRun> run);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

 private:
  std::shared_ptr<const LoadedRun> run_;
  std::vector<std::pair<std::size_t, std::size_t>> rows_;  // (rank index, collectives index)
};

}  // namespace ddpscope::ui
