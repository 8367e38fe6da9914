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
                                                       bool collective,
                                                       analysis::CollectiveKind kind,
                                                       std::int32_t ranks, std::int32_t world_size,
                                                       std::optional<trace::TimeNs> transfer_ns) {
  std::vector<std::pair<QString, QString>> rows;
  if (bytes < 0 || dur <= 0) return rows;
  if (!collective) {
    const double gbps = static_cast<double>(bytes) / static_cast<double>(dur);  // B/ns = GB/s
    rows.emplace_back(QStringLiteral("bandwidth"), formatBandwidth(gbps));
    return rows;
  }
  const auto basis =
      transfer_ns ? analysis::BandwidthBasis::Transfer : analysis::BandwidthBasis::Kernel;
  const auto bw = analysis::collectiveBandwidth(kind, bytes, transfer_ns.value_or(dur), ranks);
  if (!bw.algbw_gbps) return rows;
  rows.emplace_back(QStringLiteral("algbw"), formatBandwidth(bw.algbw_gbps));
  if (bw.busbw_gbps) rows.emplace_back(QStringLiteral("busbw"), formatBandwidth(bw.busbw_gbps));
  if (const auto note = analysis::busbwRanksNote(ranks, world_size); !note.empty())
    rows.emplace_back(QStringLiteral("busbw ranks"), QString::fromStdString(note));
  const auto text = analysis::bandwidthBasisText(basis);
  rows.emplace_back(QStringLiteral("bandwidth over"),
                    QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size())));
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

QString formatBandwidth(const std::optional<double>& gbps, analysis::BandwidthBasis basis) {
  QString s = formatBandwidth(gbps);
  if (gbps && basis == analysis::BandwidthBasis::Kernel) s += QStringLiteral(" *");
  return s;
}

QString busbwRanksTip(std::int32_t bw_ranks, std::int32_t world_size) {
  const auto note = analysis::busbwRanksNote(bw_ranks, world_size);
  return note.empty() ? QString() : QStringLiteral(" · busbw over ") + QString::fromStdString(note);
}

QString bandwidthBasisTip(analysis::BandwidthBasis basis) {
  return basis == analysis::BandwidthBasis::Transfer
             ? QStringLiteral(
                   "Over the transfer: from the last rank's arrival to the kernel's end "
                   "(matched on every rank)")
             : QString::fromUtf8(analysis::kKernelTimeBandwidthNote.data(),
                                 static_cast<qsizetype>(analysis::kKernelTimeBandwidthNote.size()));
}

}  // namespace ddpscope::ui
