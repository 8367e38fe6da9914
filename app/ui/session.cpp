#include "app/ui/session.h"

#include "app/ui/palette.h"

#include <QFileInfo>
#include <algorithm>
#include <set>

namespace ddpscope::ui {

std::shared_ptr<LoadedRun> prepareRun(trace::Run run, const QStringList& paths) {
  auto out = std::make_shared<LoadedRun>();
  out->paths = paths;
  out->name = QString::fromStdString(run.name);
  if (out->name.isEmpty() && !paths.isEmpty()) out->name = QFileInfo(paths.front()).fileName();
  std::vector<analysis::RankActivity> activity;  // from the analysis's own pass
  out->report = analysis::analyzeRun(run, {}, &activity);
  out->timeline = buildTimelineModel(run, out->report, activity);
  for (const auto& a : activity)
    out->overlap.push_back(rankOverlap(a));
  out->summary = analysis::summarizeRun(out->report);
  out->completeness = {out->report.completeness, QString()};
  out->run = std::move(run);
  return out;
}

RankOverlap rankOverlap(const analysis::RankActivity& activity) {
  return {activity.comm, analysis::intersect(activity.comm, activity.compute)};
}

std::optional<double> RankOverlap::pctWithin(trace::TimeNs lo, trace::TimeNs hi) const {
  // |comm ∩ [lo, hi)| and |comm ∩ compute ∩ [lo, hi)|, the two lengths overlapPctWithin
  // divides, in the same arithmetic.
  const trace::TimeNs c = analysis::lengthWithin(comm, lo, hi);
  if (c == 0) return std::nullopt;
  return 100.0 * static_cast<double>(analysis::lengthWithin(hidden, lo, hi)) /
         static_cast<double>(c);
}

trace::TimeNs RankOverlap::computeWithinComm(trace::TimeNs lo, trace::TimeNs hi) const {
  // [lo, hi) ⊆ ∪comm, so compute ∩ [lo, hi) = (comm ∩ compute) ∩ [lo, hi).
  return analysis::lengthWithin(hidden, lo, hi);
}

trace::TimeNs RankOverlap::commWithin(trace::TimeNs lo, trace::TimeNs hi) const {
  return analysis::lengthWithin(comm, lo, hi);
}

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
      out << QStringLiteral("rank %1: %2").arg(r.rank).arg(QString::fromStdString(w));
  return out;
}

QString ranksText(const LoadedRun& run) {
  return QString::fromStdString(analysis::runFigureText(run.summary).ranks);
}

QString warningCount(qsizetype n) {
  return n == 1 ? QObject::tr("1 warning") : QObject::tr("%1 warnings").arg(n);
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

Session::Session(QObject* parent) : QObject(parent) {}

std::shared_ptr<const LoadedRun> Session::current() const {
  if (current_ < 0 || current_ >= static_cast<int>(runs_.size())) return nullptr;
  return runs_[static_cast<std::size_t>(current_)];
}

void Session::addRun(std::shared_ptr<const LoadedRun> run) {
  runs_.push_back(std::move(run));
  emit runsChanged();
  setCurrent(static_cast<int>(runs_.size()) - 1);
}

void Session::setCurrent(int index) {
  if (index == current_ || index < 0 || index >= static_cast<int>(runs_.size())) return;
  current_ = index;
  bucket_.reset();
  event_.reset();
  selection_.reset();
  const auto& t = runs_[static_cast<std::size_t>(index)]->timeline;
  const trace::TimeNs pad = std::max<trace::TimeNs>(1, (t.extent_hi - t.extent_lo) / 100);
  view_ = {t.extent_lo - pad, t.extent_hi + pad};
  emit currentRunChanged();
  emit viewRangeChanged();
  emit selectionChanged();
  emit bucketSelected();
  emit eventSelected();
}

void Session::closeRun(int index) {
  if (index < 0 || index >= static_cast<int>(runs_.size())) return;
  runs_.erase(runs_.begin() + index);
  const int next = std::min(current_, static_cast<int>(runs_.size()) - 1);
  current_ = -1;
  emit runsChanged();
  if (next >= 0) {
    setCurrent(next);
  } else {
    emit currentRunChanged();
  }
}

void Session::selectBucket(std::optional<BucketKey> key) {
  if (key == bucket_) return;
  bucket_ = key;
  emit bucketSelected();
}

void Session::selectEvent(std::optional<EventRef> ref) {
  if (ref == event_) return;
  event_ = ref;
  emit eventSelected();
}

void Session::setViewRange(TimeRange r) {
  if (r.hi <= r.lo) r.hi = r.lo + 1;
  if (r == view_) return;
  view_ = r;
  emit viewRangeChanged();
}

void Session::setSelection(std::optional<TimeRange> r) {
  if (r && r->hi < r->lo) std::swap(r->lo, r->hi);
  if (r == selection_) return;
  selection_ = r;
  emit selectionChanged();
}

std::vector<std::optional<double>> Session::selectionOverlap() const {
  std::vector<std::optional<double>> out;
  const auto run = current();
  if (!run || !selection_) return out;
  for (const auto& o : run->overlap)
    out.push_back(o.pctWithin(selection_->lo, selection_->hi));
  return out;
}

}  // namespace ddpscope::ui
