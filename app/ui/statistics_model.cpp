#include "app/ui/statistics_model.h"

#include <QLocale>
#include <cmath>
#include <cstdio>

#include "app/analysis/classify.h"
#include "app/ui/format.h"
#include "app/ui/loaded_run.h"

namespace ddpscope::ui {

namespace {
using Cell = StatisticsTableModel::Cell;
using Column = StatisticsTableModel::Column;
using Target = StatisticsTableModel::Target;

// Microseconds with the nanosecond digits, as the CLI's JSON writes times.
std::string micros(double ns) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.3f", ns / 1000.0);
  return buf;
}

std::string number(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

Cell timeCell(double ns) {
  return {formatTime(static_cast<trace::TimeNs>(std::llround(ns))), ns, micros(ns)};
}

// A percentage (0–100), shown with `decimals`.
Cell pctCell(const std::optional<double>& pct, int decimals = 1) {
  return {formatPct(pct, decimals), pct.value_or(-1.0), pct ? number(*pct, 3) : std::string()};
}

Cell countCell(std::int64_t n) {
  return {QLocale().toString(static_cast<qlonglong>(n)), static_cast<double>(n), std::to_string(n)};
}

Cell textCell(const QString& text) {
  return {text, text, text.toStdString()};
}

Cell intCell(std::int64_t n) {
  return {QString::number(n), static_cast<double>(n), std::to_string(n)};
}

QString className(const analysis::KernelStats& k) {
  QString c = QString::fromUtf8(analysis::className(k.cls).data());
  if (k.cls == analysis::ActivityClass::Communication && k.kind != analysis::CollectiveKind::None)
    c += QStringLiteral(" · ") + QString::fromUtf8(analysis::collectiveKindName(k.kind).data());
  return c;
}
}  // namespace

StatisticsTableModel::StatisticsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void StatisticsTableModel::setTable(std::vector<Column> columns,
                                    std::vector<std::vector<Cell>> rows,
                                    std::vector<Target> targets) {
  beginResetModel();
  columns_ = std::move(columns);
  rows_ = std::move(rows);
  targets_ = std::move(targets);
  targets_.resize(rows_.size());
  endResetModel();
}

int StatisticsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(rows_.size());
}

int StatisticsTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(columns_.size());
}

QVariant StatisticsTableModel::headerData(int section, Qt::Orientation orientation,
                                          int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= static_cast<int>(columns_.size()))
    return {};
  const auto& c = columns_[static_cast<std::size_t>(section)];
  if (role == Qt::DisplayRole) return c.header;
  if (role == Qt::ToolTipRole) return c.tooltip;
  return {};
}

QVariant StatisticsTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.row() >= static_cast<int>(rows_.size()) ||
      index.column() >= static_cast<int>(columns_.size()))
    return {};
  const auto& cell =
      rows_[static_cast<std::size_t>(index.row())][static_cast<std::size_t>(index.column())];
  switch (role) {
    case Qt::DisplayRole:
      return cell.text;
    case Qt::ToolTipRole:
      return index.column() == 0 ? cell.text : QVariant();
    case kSortRole:
      return cell.sort;
    case Qt::TextAlignmentRole:
      return columns_[static_cast<std::size_t>(index.column())].numeric
                 ? QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter)
                 : QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    default:
      return {};
  }
}

std::string StatisticsTableModel::csv(const std::vector<int>& order) const {
  std::string out;
  for (std::size_t c = 0; c < columns_.size(); ++c)
    out += (c ? "," : "") + analysis::csvField(columns_[c].csv_header);
  out += "\r\n";
  std::vector<int> rows = order;
  if (rows.empty())
    for (std::size_t r = 0; r < rows_.size(); ++r)
      rows.push_back(static_cast<int>(r));
  for (const int r : rows) {
    if (r < 0 || r >= static_cast<int>(rows_.size())) continue;
    const auto& row = rows_[static_cast<std::size_t>(r)];
    for (std::size_t c = 0; c < row.size(); ++c)
      out += (c ? "," : "") + analysis::csvField(row[c].csv);
    out += "\r\n";
  }
  return out;
}

void fillKernelTable(StatisticsTableModel& model, const LoadedRun* run,
                     const StatisticsScope& scope) {
  std::vector<Column> columns = {
      {QObject::tr("name"),
       QObject::tr("Kernel, copy or set name (cuda_sync records, the host waiting, left out)"),
       "name", false},
      {QObject::tr("class"), QObject::tr("Class (and collective) by the run's rules"), "class",
       false},
      {QObject::tr("count"), QObject::tr("How many, on every rank, starting in the scope"),
       "count"},
      {QObject::tr("total"), QObject::tr("Σ durations"), "total_us"},
      {QObject::tr("mean"), QObject::tr("total / count"), "mean_us"},
      {QObject::tr("min"), {}, "min_us"},
      {QObject::tr("max"), {}, "max_us"},
      {QObject::tr("share"), QObject::tr("total / Σ durations of all GPU work in the scope"),
       "share_pct"},
  };
  std::vector<std::vector<Cell>> rows;
  std::vector<Target> targets;
  if (run) {
    const auto stats =
        analysis::kernelStatistics(run->run, run->rules, scope.value_or(analysis::TimeWindow{}));
    rows.reserve(stats.size());
    for (const auto& k : stats) {
      const QString name = QString::fromStdString(k.name);
      rows.push_back({textCell(name), textCell(className(k)), countCell(k.count),
                      timeCell(static_cast<double>(k.total_ns)), timeCell(k.mean_ns),
                      timeCell(static_cast<double>(k.min_ns)),
                      timeCell(static_cast<double>(k.max_ns)), pctCell(100.0 * k.share, 2)});
      targets.push_back({Target::Kind::Kernel, name});
    }
  }
  model.setTable(std::move(columns), std::move(rows), std::move(targets));
}

void fillStreamTable(StatisticsTableModel& model, const LoadedRun* run,
                     const StatisticsScope& scope) {
  std::vector<Column> columns = {
      {QObject::tr("rank"), {}, "rank"},
      {QObject::tr("stream"), QObject::tr("Device and stream"), "stream", false},
      {QObject::tr("role"), {}, "role", false},
      {QObject::tr("busy"), QObject::tr("|∪ GPU activity on the stream| in the scope"), "busy_us"},
      {QObject::tr("scope"),
       QObject::tr("Whole run: the rank's first → last GPU activity; a selection: its length"),
       "scope_us"},
      {QObject::tr("busy share"), QObject::tr("busy / scope"), "busy_share_pct"},
  };
  std::vector<std::vector<Cell>> rows;
  std::vector<Target> targets;
  if (run) {
    const auto stats = analysis::streamStatistics(run->run, run->report, scope);
    for (const auto& s : stats) {
      std::int32_t rank_index = 0;
      for (std::size_t r = 0; r < run->report.ranks.size(); ++r)
        if (run->report.ranks[r].rank == s.rank) rank_index = static_cast<std::int32_t>(r);
      const QString stream = QStringLiteral("gpu %1 · stream %2")
                                 .arg(s.device)
                                 .arg(QString::fromStdString(analysis::streamText(s.stream)));
      std::optional<double> pct;
      if (s.busy_share) pct = 100.0 * *s.busy_share;
      rows.push_back({intCell(s.rank), textCell(stream),
                      textCell(QString::fromUtf8(analysis::streamRoleName(s.role).data())),
                      timeCell(static_cast<double>(s.busy_ns)),
                      timeCell(static_cast<double>(s.scope_ns)), pctCell(pct)});
      Target t{Target::Kind::Stream, {}, rank_index};
      t.device = s.device;
      t.stream = s.stream;
      targets.push_back(t);
    }
  }
  model.setTable(std::move(columns), std::move(rows), std::move(targets));
}

void fillStepTable(StatisticsTableModel& model, const LoadedRun* run,
                   const StatisticsScope& scope) {
  std::vector<Column> columns = {
      {QObject::tr("rank"), {}, "rank"},
      {QObject::tr("step"), {}, "step"},
      {QObject::tr("time"), QObject::tr("Step time"), "step_us"},
      {QObject::tr("overlap"), QObject::tr("Communication hidden under compute in the step"),
       "overlap_pct"},
      {QObject::tr("exposed"), QObject::tr("Communication not hidden by compute"), "exposed_us"},
      {QObject::tr("tail"), QObject::tr("End of backward compute → end of the last allreduce"),
       "exposed_tail_us"},
      {QObject::tr("DP eff."), QObject::tr("Compute-only critical path / step time"),
       "dp_efficiency_pct"},
      {QObject::tr("GPU idle"), QObject::tr("max(0, step time − GPU busy time) / step time"),
       "gpu_idle_pct"},
  };
  std::vector<std::vector<Cell>> rows;
  std::vector<Target> targets;
  if (run) {
    for (std::size_t r = 0; r < run->report.ranks.size(); ++r) {
      const auto& rr = run->report.ranks[r];
      for (const auto& st : rr.steps) {
        if (scope && (st.start_ns >= scope->hi || st.start_ns + st.dur_ns <= scope->lo)) continue;
        std::optional<double> dp;
        if (st.dp_efficiency) dp = 100.0 * *st.dp_efficiency;
        rows.push_back({intCell(rr.rank), intCell(st.step),
                        timeCell(static_cast<double>(st.dur_ns)), pctCell(st.metrics.overlap_pct),
                        timeCell(static_cast<double>(st.metrics.exposed_ns)),
                        timeCell(static_cast<double>(st.exposed_tail_ns)), pctCell(dp),
                        pctCell(analysis::stepGpuIdlePct(st))});
        Target t{Target::Kind::Step, {}, static_cast<std::int32_t>(r)};
        t.step = st.step;
        targets.push_back(t);
      }
    }
  }
  model.setTable(std::move(columns), std::move(rows), std::move(targets));
}

}  // namespace ddpscope::ui
