#pragma once
// The Statistics tab's tables as Qt models (docs/UI.md "Statistics"): the kernels by total time,
// each stream's busy share and the per-step figures, for the whole run or a selected range. The
// figures are the analysis's (app/analysis/statistics.h, StepReport); these models format them,
// sort by the numbers behind the text and write them as CSV.

#include <QAbstractTableModel>
#include <QString>
#include <QStringList>
#include <QVariant>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/analysis/statistics.h"

namespace ddpscope::ui {

struct LoadedRun;

// A table of formatted cells, each with the number it sorts by and its CSV text.
class StatisticsTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  // The value a column sorts by (a number behind "150 ms", the text for names); -1 for "n/a".
  static constexpr int kSortRole = Qt::UserRole + 2;
  // What a row points at on the timeline (StatisticsRowTarget, as a QVariant).
  static constexpr int kTargetRole = Qt::UserRole + 3;

  struct Column {
    QString header;
    QString tooltip;
    std::string csv_header;  // with its unit: "total_us", "share_pct"
    bool numeric = true;
  };
  struct Cell {
    QString text;
    QVariant sort;
    std::string csv;
  };
  // What a row stands for on the timeline: a kernel name, a step of a rank or a stream of a rank.
  struct Target {
    enum class Kind { None, Kernel, Step, Stream } kind = Kind::None;
    QString name;                         // Kernel
    std::int32_t rank_index = -1;         // Step, Stream
    std::int32_t step = 0;                // Step
    std::int64_t device = 0, stream = 0;  // Stream
  };

  explicit StatisticsTableModel(QObject* parent = nullptr);
  void setTable(std::vector<Column> columns, std::vector<std::vector<Cell>> rows,
                std::vector<Target> targets);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const override;

  const Target& target(int row) const { return targets_[static_cast<std::size_t>(row)]; }
  // The table as CSV (RFC 4180): a header line, then a line per row, in `order` (model rows;
  // empty: model order); times in microseconds with nanosecond digits, shares in percent.
  std::string csv(const std::vector<int>& order = {}) const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<Cell>> rows_;
  std::vector<Target> targets_;
};

// The scope of the statistics: the whole run, or a window (the selected range).
using StatisticsScope = std::optional<analysis::TimeWindow>;

// Fills the three tables for `run` (null: empty tables) over `scope`.
void fillKernelTable(StatisticsTableModel& model, const LoadedRun* run,
                     const StatisticsScope& scope);
void fillStreamTable(StatisticsTableModel& model, const LoadedRun* run,
                     const StatisticsScope& scope);
// Steps of every rank; with a window, the steps that overlap it.
void fillStepTable(StatisticsTableModel& model, const LoadedRun* run, const StatisticsScope& scope);

}  // namespace ddpscope::ui
