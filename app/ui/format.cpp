#include "app/ui/format.h"

#include "app/analysis/analysis.h"
#include "app/analysis/classify.h"
#include "app/analysis/report_json.h"

namespace ddpscope::ui {

QString formatTime(trace::TimeNs ns) {
  return QString::fromStdString(analysis::formatDuration(ns));
}

QString formatPct(const std::optional<double>& pct, int decimals) {
  if (!pct) return QStringLiteral("n/a");
  return QString::number(*pct, 'f', decimals) + QStringLiteral(" %");
}

std::vector<std::pair<QString, QString>> bandwidthRows(std::int64_t bytes, trace::TimeNs dur,
                                                       bool collective, std::string_view name,
                                                       std::int32_t world_size) {
  std::vector<std::pair<QString, QString>> rows;
  if (bytes < 0 || dur <= 0) return rows;
  const double gbps = static_cast<double>(bytes) / static_cast<double>(dur);  // B/ns = GB/s
  if (!collective) {
    rows.emplace_back(QStringLiteral("bandwidth"), formatBandwidth(gbps));
    return rows;
  }
  rows.emplace_back(QStringLiteral("algbw"), formatBandwidth(gbps));
  const bool allreduce = analysis::isAllreduceName(name);
  if (const auto busbw = analysis::allreduceBusBandwidth(gbps, world_size); allreduce && busbw)
    rows.emplace_back(QStringLiteral("busbw"), formatBandwidth(busbw));
  return rows;
}

QString formatBytes(std::int64_t bytes) {
  if (bytes < 0) return QStringLiteral("–");
  if (bytes < 1024) return QString::number(bytes) + QStringLiteral(" B");
  // Binary units, as --bucket-mb; three significant digits, as times.
  static const char* const kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes) / 1024.0;
  int u = 0;
  while (v >= 1024.0 && u < 3) {
    v /= 1024.0;
    ++u;
  }
  const int decimals = v >= 100 ? 0 : v >= 10 ? 1 : 2;
  return QString::number(v, 'f', decimals) + QLatin1Char(' ') + QLatin1String(kUnits[u]);
}

QString formatBandwidth(const std::optional<double>& gbps) {
  if (!gbps) return QStringLiteral("–");
  return QString::number(*gbps, 'f', *gbps >= 100 ? 0 : 1) + QStringLiteral(" GB/s");
}

}  // namespace ddpscope::ui
