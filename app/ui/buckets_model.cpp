#include "app/ui/buckets_model.h"

#include "app/analysis/bucket_steps.h"
#include "app/ui/format.h"
#include "app/ui/palette.h"

namespace ddpscope::ui {

BucketsModel::BucketsModel(QObject* parent) : QAbstractTableModel(parent) {}

void BucketsModel::setRun(std::shared_ptr<const LoadedRun> run) {
  beginResetModel();
  run_ = std::move(run);
  rows_.clear();
  if (run_) {
    const auto& ranks = run_->report.ranks;
    for (std::size_t ri = 0; ri < ranks.size(); ++ri)
      for (std::size_t bi = 0; bi < ranks[ri].buckets.size(); ++bi)
        if (analysis::inSelection(run_->summary.selection, ranks[ri].buckets[bi].step))
          rows_.push_back({static_cast<std::int32_t>(ri), static_cast<std::int32_t>(bi)});
  }
  endResetModel();
}

BucketKey BucketsModel::keyAt(int row) const {
  return rows_[static_cast<std::size_t>(row)];
}

int BucketsModel::rowOf(const BucketKey& key) const {
  for (std::size_t i = 0; i < rows_.size(); ++i)
    if (rows_[i] == key) return static_cast<int>(i);
  return -1;
}

int BucketsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int BucketsModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant BucketsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= kColumnCount) return {};
  static const char* kNames[kColumnCount] = {
      // "ready" is from the start of the bucket's step: its tooltip and the note above the
      // table say so (the longer header pushed the last column, exposed, out of sight).
      "rank",  "step",   "bucket",    "tensors", "size",
      "ready", "queued", "allreduce", "busbw",   "exposed"};
  static const char* kTips[kColumnCount] = {
      "The rank's number",
      "The training step",
      "The bucket's id (0 is filled first, by the last layers' gradients)",
      "Parameters in the bucket (– when the bucket was inferred from its allreduce)",
      "The bucket's size",
      "When its last gradient was written, from the start of its step on its rank",
      "Allreduce start − ready: how long the ready bucket waited for its allreduce",
      "The allreduce's duration",
      "NCCL's bus bandwidth of the allreduce: bytes / time · 2(p−1)/p, over its transfer (from "
      "the last rank's arrival) when matched on every rank, else over its whole kernel, marked *",
      "The part of the allreduce not hidden by compute"};
  if (role == Qt::DisplayRole) return tr(kNames[section]);
  if (role == Qt::ToolTipRole) return tr(kTips[section]);
  return {};
}

QVariant BucketsModel::data(const QModelIndex& index, int role) const {
  if (!run_ || !index.isValid() || index.row() >= rowCount()) return {};
  const BucketKey key = rows_[static_cast<std::size_t>(index.row())];
  const auto& rr = run_->report.ranks[static_cast<std::size_t>(key.rank_index)];
  const auto& b = rr.buckets[static_cast<std::size_t>(key.report_index)];
  if (role == Qt::TextAlignmentRole) return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  const auto cell = [role](const QString& text, double value) -> QVariant {
    if (role == Qt::DisplayRole) return text;
    if (role == kSortRole) return value;
    return {};
  };
  const auto time = [&](trace::TimeNs ns) { return cell(formatTime(ns), static_cast<double>(ns)); };
  switch (index.column()) {
    case kRank:
      return cell(QString::number(rr.rank), rr.rank);
    case kStep:
      return cell(b.step == trace::kNoStep ? QStringLiteral("–") : QString::number(b.step), b.step);
    case kId:
      if (role == Qt::DecorationRole) return bucketColour(b.id);
      return cell(QString::number(b.id), b.id);
    case kTensors:
      return cell(b.tensors > 0 ? QString::number(b.tensors) : QStringLiteral("–"), b.tensors);
    case kSize:
      return cell(formatBytes(b.bytes), static_cast<double>(b.bytes));
    case kReady:
      return time(analysis::readyFromStepStart(rr, b));
    case kWait:
      return time(b.wait_ns);
    case kDuration:
      return time(b.end_ns - b.start_ns);
    case kBusbw:
      if (role == Qt::ToolTipRole && b.busbw_gbps)
        return bandwidthBasisTip(b.bw_basis) + busbwRanksTip(b.bw_ranks, rr.world_size);
      return cell(formatBandwidth(b.busbw_gbps, b.bw_basis), b.busbw_gbps.value_or(-1));
    case kExposed:
      if (role == Qt::ForegroundRole && b.exposed_ns > (b.end_ns - b.start_ns) / 2)
        return colours::kCommExposed;
      return time(b.exposed_ns);
    default:
      return {};
  }
}

}  // namespace ddpscope::ui
