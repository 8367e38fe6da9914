#include "app/ui/summary_model.h"

#include <QLocale>
#include <algorithm>

#include "app/analysis/run_summary.h"
#include "app/ui/format.h"
#include "app/ui/loaded_run.h"
#include "app/ui/palette.h"

namespace ddpscope::ui {

namespace {
constexpr int kMaxMissingRows = 1024;

QVariant timeCell(int role, trace::TimeNs ns, bool known = true) {
  if (role == Qt::DisplayRole) return known ? formatTime(ns) : QStringLiteral("n/a");
  if (role == SummaryModel::kSortRole) return known ? static_cast<double>(ns) : -1.0;
  return {};
}

QVariant pctCell(int role, const std::optional<double>& pct, int decimals) {
  if (role == Qt::DisplayRole) return formatPct(pct, decimals);
  if (role == SummaryModel::kSortRole) return pct.value_or(-1.0);
  return {};
}
}  // namespace

SummaryModel::SummaryModel(QObject* parent) : QAbstractTableModel(parent) {}

void SummaryModel::setRun(std::shared_ptr<const LoadedRun> run) {
  beginResetModel();
  run_ = std::move(run);
  missing_rows_ = run_ ? static_cast<int>(std::min<std::size_t>(
                             run_->completeness.missing_ranks.size(), kMaxMissingRows))
                       : 0;
  endResetModel();
}

int SummaryModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid() || !run_) return 0;
  return static_cast<int>(run_->report.ranks.size()) + missing_rows_;
}

int SummaryModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : kColumnCount;
}

QVariant SummaryModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return {};
  static const char* kNames[kColumnCount] = {
      "rank",     "source", "overlap",      "comm",    "hidden",   "exposed", "waiting",
      "transfer", "step",   "exposed/step", "DP eff.", "GPU idle", "kernels"};
  static const char* kTips[kColumnCount] = {
      "The rank's number",
      "Where the trace comes from (simulated, CUDA, imported)",
      "Communication hidden under compute, whole trace: |comm ∩ compute| / |comm|",
      "Time with communication running, whole trace: |∪comm|",
      "Communication hidden under compute, whole trace",
      "Communication not hidden by compute, whole trace",
      "Exposed communication spent waiting for a late rank (inside a matched collective, before "
      "its last rank started), whole trace; n/a when no collective could be matched",
      "Exposed communication that is transfer not hidden (the rest of the exposed part), whole "
      "trace; n/a when no collective could be matched",
      "Mean step time over the steps the headline covers",
      "Exposed communication per step, over the steps the headline covers",
      "1 − exposed communication / step time, over the steps the headline covers",
      "Share of step time with nothing on the GPU, over the steps the headline covers",
      "Kernels: communication and computation (copies and syncs are not kernels)"};
  if (section < 0 || section >= kColumnCount) return {};
  if (role == Qt::DisplayRole) return tr(kNames[section]);
  if (role == Qt::ToolTipRole) return tr(kTips[section]);
  return {};
}

QVariant SummaryModel::data(const QModelIndex& index, int role) const {
  if (!run_ || !index.isValid()) return {};
  if (role == Qt::TextAlignmentRole && index.column() != kSource)
    return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
  const int ranks = static_cast<int>(run_->report.ranks.size());
  return index.row() < ranks ? rankData(index.row(), index.column(), role)
                             : missingData(index.row() - ranks, index.column(), role);
}

QVariant SummaryModel::rankData(int row, int column, int role) const {
  const auto& r = run_->report.ranks[static_cast<std::size_t>(row)];
  const auto& f = run_->summary.per_rank[static_cast<std::size_t>(row)];
  const bool steps = run_->summary.hasSteps();
  const auto& m = r.whole;
  switch (column) {
    case kRank:
      if (role == Qt::DisplayRole) return QString::number(r.rank);
      if (role == kSortRole) return static_cast<double>(r.rank);
      return {};
    case kSource:
      if (role == Qt::DisplayRole)
        return sourceBadge(r.source) +
               (r.incomplete ? QStringLiteral(" · ") + kIncompleteBadge : QString());
      if (role == Qt::ForegroundRole)
        return r.incomplete ? colours::kWarningText : badgeColour(r.source);
      if (role == Qt::ToolTipRole && r.incomplete)
        return tr("The trace of rank %1 is cut short: its producer stopped before the run "
                  "finished (error or timeout); its numbers cover only what was recorded.")
            .arg(r.rank);
      if (role == kSortRole) return static_cast<double>(r.incomplete);
      return {};
    case kOverlap:
      return pctCell(role, m.overlap_pct, 2);
    case kComm:
      return timeCell(role, m.comm_ns);
    case kHidden:
      return timeCell(role, m.overlap_ns);
    case kExposed:
      return timeCell(role, m.exposed_ns);
    case kExposedWait:
      return timeCell(role, r.exposed_wait_ns.value_or(0), r.exposed_wait_ns.has_value());
    case kExposedTransfer:
      return timeCell(role, r.exposed_transfer_ns.value_or(0), r.exposed_transfer_ns.has_value());
    case kStep:
      return timeCell(role, f.step_ns, steps);
    case kExposedPerStep:
      return timeCell(role, f.exposed_ns_per_step, steps);
    case kDpEfficiency:
      return pctCell(role, f.dp_efficiency ? std::optional(*f.dp_efficiency * 100) : std::nullopt,
                     1);
    case kGpuIdle:
      return pctCell(role, f.gpu_idle_pct, 1);
    case kKernels: {
      const auto kernels =
          r.counts[static_cast<std::size_t>(analysis::ActivityClass::Communication)] +
          r.counts[static_cast<std::size_t>(analysis::ActivityClass::Computation)];
      if (role == Qt::DisplayRole) return QLocale().toString(static_cast<qlonglong>(kernels));
      if (role == kSortRole) return static_cast<double>(kernels);
      return {};
    }
    default:
      return {};
  }
}

QVariant SummaryModel::missingData(int row, int column, int role) const {
  const auto rank = run_->completeness.missing_ranks[static_cast<std::size_t>(row)];
  if (column == kRank) {
    if (role == Qt::DisplayRole) return QString::number(rank);
    if (role == kSortRole) return static_cast<double>(rank);
    return {};
  }
  if (column == kSource) {
    if (role == Qt::DisplayRole) return tr("no trace");
    if (role == Qt::ForegroundRole) return colours::kWarningText;
    if (role == Qt::ToolTipRole)
      return tr("Rank %1 of the run left no trace: its process failed before writing one, or "
                "its file was not opened with the others.")
          .arg(rank);
    return {};
  }
  if (role == Qt::DisplayRole) return QStringLiteral("–");
  if (role == kSortRole) return -1.0;
  return {};
}

}  // namespace ddpscope::ui
