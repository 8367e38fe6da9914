#include "app/ui/run_text.h"

#include "app/analysis/collectives.h"
#include "app/ui/digest_view.h"

#include <QObject>
#include <string>
#include <vector>

#include "app/analysis/stragglers.h"
#include "app/ui/format.h"
#include "app/ui/palette.h"

namespace ddpscope::ui {

namespace {
// "3", "1, 2 and 5", "0–6" for a sorted list of ranks.
QString rankList(const std::vector<std::int32_t>& ranks) {
  if (ranks.size() > 2 &&
      ranks.back() - ranks.front() + 1 == static_cast<std::int32_t>(ranks.size()))
    return QStringLiteral("%1–%2").arg(ranks.front()).arg(ranks.back());
  QStringList parts;
  for (const auto r : ranks)
    parts << QString::number(r);
  if (parts.size() < 2) return parts.join(QString());
  const QString last = parts.takeLast();
  return parts.join(QStringLiteral(", ")) + QStringLiteral(" and ") + last;
}
}  // namespace

QString incompleteExplanation(const Completeness& c, std::size_t ranks_loaded) {
  if (!c.incomplete()) return {};
  QStringList lines;
  if (!c.incomplete_ranks.empty() || !c.producer_error.isEmpty())
    lines << QStringLiteral(
        "Incomplete: the agent stopped before the run finished (error or timeout); the numbers "
        "cover only what was recorded.");
  if (!c.incomplete_ranks.empty())
    lines << (c.incomplete_ranks.size() == 1
                  ? QStringLiteral("The trace of rank %1 is cut short.")
                  : QStringLiteral("The traces of ranks %1 are cut short."))
                 .arg(rankList(c.incomplete_ranks));
  if (!c.missing_ranks.empty())
    lines << QStringLiteral(
                 "Only %1 of %2 ranks are present (no trace for rank%3 %4); the numbers "
                 "cover only the ranks loaded.")
                 .arg(ranks_loaded)
                 .arg(c.world_size)
                 .arg(c.missing_ranks.size() == 1 ? "" : "s")
                 .arg(rankList(c.missing_ranks));
  if (!c.producer_error.isEmpty())
    lines << QStringLiteral("The agent failed: %1").arg(c.producer_error);
  return lines.join(QLatin1Char('\n'));
}

QStringList runWarnings(const LoadedRun& run) {
  QStringList out;
  for (const auto& w : run.report.warnings)
    out << QString::fromStdString(w);
  for (const auto& r : run.report.ranks)
    for (const auto& w : r.warnings)
      out << QString::fromStdString(analysis::rankWarning(r.rank, w));
  return out;
}

QString ranksText(const LoadedRun& run) {
  return QString::fromStdString(analysis::runFigureText(run.summary).ranks);
}

QString warningCount(qsizetype n) {
  return n == 1 ? QObject::tr("1 warning") : QObject::tr("%1 warnings").arg(n);
}

QString stragglerText(const LoadedRun& run) {
  return stragglerText(analysis::summarizeStragglers(run.report));
}

QString stragglerText(const analysis::StragglerSummary& late, bool name_late_rank) {
  if (!late.exposed_wait_ns || !late.exposed_transfer_ns) return {};
  if (!late.wait_pct) return QObject::tr("Exposed communication: none to split (whole trace)");
  const QString who = late.late_rank && name_late_rank
                          ? QObject::tr(" (rank %1, last at %2 of %3 collectives with a skew)")
                                .arg(*late.late_rank)
                                .arg(late.late_count)
                                .arg(late.skewed)
                          : QString();
  return QObject::tr(
             "Exposed communication: %1 waiting for a late rank%2, %3 transfer not hidden "
             "(whole trace, all ranks)")
      .arg(formatPct(late.wait_pct, 1), who, formatPct(late.transfer_pct, 1));
}

QString firstQuietText(const analysis::RunSummary& summary) {
  if (summary.first_quiet_rank < 0) return {};
  return QObject::tr("Rank %1 went quiet first: its GPU work ends %2 before any other rank's")
      .arg(summary.first_quiet_rank)
      .arg(formatTime(summary.first_quiet_ahead_ns));
}

QString runTitle(const LoadedRun& run, bool two_lines) {
  const auto t = analysis::runFigureText(run.summary);
  QString badge = sourceBadge(run.source());
  if (run.incomplete()) badge += QStringLiteral(" · ") + kIncompleteBadge;
  badge += QStringLiteral(" · ") + QString::fromStdString(t.ranks);
  const auto q = [](const std::string& s) { return QString::fromStdString(s); };
  return QStringLiteral(
             "%1 [%2]%3overlap %4 · exposed %5 · step %6 · DP eff. %7 · GPU idle %8 (%9)")
      .arg(run.name, badge, two_lines ? QStringLiteral("\n") : QStringLiteral(" · "), q(t.overlap),
           q(t.exposed), q(t.step), q(t.dp_efficiency), q(t.gpu_idle), q(t.scope));
}

MatchedCollectiveText matchedCollectiveText(const analysis::RunReport& report,
                                            const analysis::MatchedCollective& m) {
  MatchedCollectiveText t;
  t.split_known = analysis::matchedSplitKnown(report);
  const auto& missing = report.completeness.missing_ranks;
  const QString none_have = missing.size() == 1
                                ? QObject::tr("rank %1 has no trace").arg(rankListText(missing))
                                : QObject::tr("ranks %1 have no trace").arg(rankListText(missing));
  if (t.split_known) {
    t.late_rank = m.last_rank < 0 ? QObject::tr("none (all started together)")
                                  : QObject::tr("rank %1").arg(m.last_rank);
    return t;
  }
  t.late_rank =
      m.last_rank < 0
          ? QObject::tr("none among the loaded ranks (%1)").arg(none_have)
          : QObject::tr("rank %1 among the loaded ranks (%2)").arg(m.last_rank).arg(none_have);
  t.split_unknown = QObject::tr("not told apart: %1").arg(none_have);
  return t;
}

std::optional<trace::TimeNs> matchedTransferTime(const LoadedRun& run, std::int32_t rank_index,
                                                 std::int32_t track, std::uint32_t index) {
  if (!analysis::matchedSplitKnown(run.report)) return std::nullopt;
  const std::int32_t j = matchedCollectiveOf(run.timeline, rank_index, track, index);
  if (j < 0) return std::nullopt;
  const auto& m = run.report.matched[static_cast<std::size_t>(j)];
  const auto r = static_cast<std::size_t>(rank_index);
  if (r >= m.transfer_ns.size()) return std::nullopt;
  return m.transfer_ns[r];
}

}  // namespace ddpscope::ui
