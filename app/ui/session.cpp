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
  out->report = analysis::analyzeRun(run);
  std::vector<analysis::RankActivity> activity;
  for (const auto& r : run.ranks)
    activity.push_back(analysis::rankActivity(r));
  out->timeline = buildTimelineModel(run, out->report, activity);
  for (const auto& a : activity)
    out->overlap.push_back(rankOverlap(a));
  out->completeness = computeCompleteness(run);
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

Completeness computeCompleteness(const trace::Run& run) {
  Completeness c;
  bool produced_by_ddpscope = false;
  std::set<std::int32_t> present;
  for (const auto& r : run.ranks) {
    c.world_size = std::max(c.world_size, r.world_size);
    produced_by_ddpscope = produced_by_ddpscope || r.ddpscope.present;
    present.insert(r.rank);
    if (r.ddpscope.incomplete) c.incomplete_ranks.push_back(r.rank);
  }
  std::sort(c.incomplete_ranks.begin(), c.incomplete_ranks.end());
  if (produced_by_ddpscope || run.ranks.size() > 1) {
    for (std::int32_t rank = 0; rank < c.world_size; ++rank)
      if (!present.contains(rank)) c.missing_ranks.push_back(rank);
  }
  return c;
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
  const auto loaded = run.run.ranks.size();
  const auto world = static_cast<std::size_t>(std::max(0, run.completeness.world_size));
  if (world > loaded) return QObject::tr("%1 of %2 ranks").arg(loaded).arg(world);
  return loaded == 1 ? QObject::tr("1 rank") : QObject::tr("%1 ranks").arg(loaded);
}

QString warningCount(qsizetype n) {
  return n == 1 ? QObject::tr("1 warning") : QObject::tr("%1 warnings").arg(n);
}

QString runTitle(const LoadedRun& run, bool two_lines) {
  const Headline hl = computeHeadline(run.report);
  const auto& c = run.completeness;
  const auto ranks = run.run.ranks.size();
  QString badge = sourceBadge(run.source());
  if (run.incomplete()) badge += QStringLiteral(" · ") + kIncompleteBadge;
  // The headline pools ranks (Σ hidden / Σ comm); a slide should say so, and say when ranks
  // of the run are not in it (missing, or a single rank's trace opened on purpose).
  if (!c.missing_ranks.empty() ||
      (c.world_size > 0 && ranks < static_cast<std::size_t>(c.world_size))) {
    badge += QStringLiteral(" · %1 of %2 ranks").arg(ranks).arg(c.world_size);
  } else if (ranks > 1) {
    badge += QStringLiteral(" · %1 ranks pooled").arg(ranks);
  }
  return QStringLiteral("%1 [%2]%3overlap %4 · exposed %5%6 · step %7 · DP eff. %8")
      .arg(run.name, badge, two_lines ? QStringLiteral("\n") : QStringLiteral(" · "),
           formatPct(hl.overlap_pct), formatTime(hl.exposed_per_step_ns),
           hl.has_steps ? QStringLiteral("/step") : QString(),
           hl.has_steps ? formatTime(hl.step_ns) : QStringLiteral("n/a"),
           formatPct(hl.dp_efficiency, 1));
}

Headline computeHeadline(const analysis::RunReport& report) {
  Headline h;
  trace::TimeNs comm = 0, hidden = 0, exposed = 0, step_sum = 0;
  double eff_sum = 0;
  int steps = 0, effs = 0;
  for (const auto& r : report.ranks) {
    comm += r.whole.comm_ns;
    hidden += r.whole.overlap_ns;
    for (const auto& s : r.steps) {
      ++steps;
      exposed += s.metrics.exposed_ns;
      step_sum += s.dur_ns;
      if (s.dp_efficiency) {
        eff_sum += *s.dp_efficiency;
        ++effs;
      }
    }
  }
  if (comm > 0) h.overlap_pct = 100.0 * static_cast<double>(hidden) / static_cast<double>(comm);
  // One rank: exactly the analysis's figure (no re-rounding through the pooled sums).
  if (report.ranks.size() == 1) h.overlap_pct = report.ranks.front().whole.overlap_pct;
  h.has_steps = steps > 0;
  if (steps > 0) {
    h.exposed_per_step_ns = exposed / steps;
    h.step_ns = step_sum / steps;
  } else {
    for (const auto& r : report.ranks)
      h.exposed_per_step_ns += r.whole.exposed_ns;
    if (!report.ranks.empty())
      h.exposed_per_step_ns /= static_cast<trace::TimeNs>(report.ranks.size());
  }
  if (effs > 0) h.dp_efficiency = 100.0 * eff_sum / effs;
  return h;
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
