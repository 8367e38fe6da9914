#include "app/ui/collectives_model.h"

#include <QLocale>

#include "app/ui/format.h"
#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

CollectivesModel::CollectivesModel(QObject* parent) : QAbstractTableModel(parent) {}

void CollectivesModel::setRun(std::shared_ptr<const LoadedRun> run) {
  beginResetModel();
  run_ = std::move(run);
  rows_.clear();
  if (run_) {
    const auto& ranks = run_->report.ranks;
    for (std::size_t ri = 0; ri < ranks.size(); ++ri)
      for (std::size_t ci = 0; ci < ranks[ri].collectives.size(); ++ci)
        rows_.emplace_back(ri, ci);
  }
  endResetModel();
}

int CollectivesModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int CollectivesModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant CollectivesModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= kColumnCount) return {};
  static const char* kNames[kColumnCount] = {"rank",   "collective", "count",   "bytes", "time",
                                             "hidden", "exposed",    "overlap", "algbw", "busbw"};
  static const char* kTips[kColumnCount] = {
      "The rank's number",
      "The kind of collective (from the kernel's name, its arguments or the rule that classified "
      "it)",
      "Kernels of this kind, whole trace",
      "Σ payload of the kernels whose size is known",
      "Time with a kernel of this kind running: |∪ kernels of the kind|, whole trace",
      "The part of that time hidden under compute",
      "The part of that time not hidden by compute",
      "hidden / time",
      "Σ bytes / Σ time of the kernels whose size is known: their transfer parts (from the last "
      "rank's arrival) when matched on every rank, else their whole durations, marked *",
      "algbw · the kind's factor (allreduce 2(n−1)/n; reduce-scatter, all-gather, all-to-all "
      "(n−1)/n; broadcast, reduce, send/recv 1); * over whole kernels, waits included"};
  if (role == Qt::DisplayRole) return tr(kNames[section]);
  if (role == Qt::ToolTipRole) return tr(kTips[section]);
  return {};
}

QVariant CollectivesModel::data(const QModelIndex& index, int role) const {
  if (!run_ || !index.isValid() || index.row() >= rowCount()) return {};
  const auto [ri, ci] = rows_[static_cast<std::size_t>(index.row())];
  const auto& rank = run_->report.ranks[ri];
  const auto& c = rank.collectives[ci];
  if (role == Qt::TextAlignmentRole)
    return QVariant::fromValue(index.column() == kKind ? Qt::AlignLeft | Qt::AlignVCenter
                                                       : Qt::AlignRight | Qt::AlignVCenter);
  const auto cell = [role](const QString& text, double value) -> QVariant {
    if (role == Qt::DisplayRole) return text;
    if (role == kSortRole) return value;
    return {};
  };
  const auto time = [&](trace::TimeNs ns) { return cell(formatTime(ns), static_cast<double>(ns)); };
  if (role == Qt::ToolTipRole && (index.column() == kAlgbw || index.column() == kBusbw) &&
      c.algbw_gbps)
    return bandwidthBasisTip(c.bw_basis) +
           QStringLiteral(" · %1 kernels").arg(QLocale().toString(qlonglong(c.sized))) +
           busbwRanksTip(c.bw_ranks, rank.world_size);
  switch (index.column()) {
    case kRank:
      return cell(QString::number(rank.rank), rank.rank);
    case kKind: {
      const auto name = analysis::collectiveKindName(c.kind);
      return cell(QString::fromUtf8(name.data(), static_cast<qsizetype>(name.size())),
                  static_cast<double>(c.kind));
    }
    case kCount:
      return cell(QLocale().toString(static_cast<qlonglong>(c.count)),
                  static_cast<double>(c.count));
    case kBytes:
      return cell(c.sized > 0 ? formatBytes(c.bytes) : QStringLiteral("–"),
                  c.sized > 0 ? static_cast<double>(c.bytes) : -1.0);
    case kTime:
      return time(c.comm_ns);
    case kHidden:
      return time(c.hidden_ns);
    case kExposed:
      return time(c.exposed_ns);
    case kOverlap:
      return cell(formatPct(c.overlap_pct, 1), c.overlap_pct.value_or(-1));
    case kAlgbw:
      return cell(formatBandwidth(c.algbw_gbps, c.bw_basis), c.algbw_gbps.value_or(-1));
    case kBusbw:
      return cell(formatBandwidth(c.busbw_gbps, c.bw_basis), c.busbw_gbps.value_or(-1));
    default:
      return {};
  }
}

}  // namespace ddpscope::ui
