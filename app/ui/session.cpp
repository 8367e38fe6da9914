#include "app/ui/session.h"

#include <QFileInfo>
#include <algorithm>

namespace ddpscope::ui {

std::shared_ptr<LoadedRun> prepareRun(trace::Run run, const QStringList& paths) {
  auto out = std::make_shared<LoadedRun>();
  out->paths = paths;
  out->name = QString::fromStdString(run.name);
  if (out->name.isEmpty() && !paths.isEmpty()) out->name = QFileInfo(paths.front()).fileName();
  out->report = analysis::analyzeRun(run);
  for (const auto& r : run.ranks)
    out->activity.push_back(analysis::rankActivity(r));
  out->timeline = buildTimelineModel(run, out->report, out->activity);
  out->run = std::move(run);
  return out;
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
  for (const auto& a : run->activity)
    out.push_back(analysis::overlapPctWithin(a, selection_->lo, selection_->hi));
  return out;
}

}  // namespace ddpscope::ui
