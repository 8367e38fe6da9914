#include "app/ui/session.h"

#include <algorithm>
#include <utility>

namespace ddpscope::ui {

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

bool Session::replaceRun(const std::shared_ptr<const LoadedRun>& old,
                         std::shared_ptr<const LoadedRun> run) {
  const auto it = std::find(runs_.begin(), runs_.end(), old);
  if (it == runs_.end() || !run) return false;
  std::shared_ptr<const LoadedRun> previous = std::move(*it);  // `old` may be a reference to it
  *it = run;
  const int index = static_cast<int>(it - runs_.begin());
  emit runReplaced(std::move(previous), std::move(run));
  emit runsChanged();
  if (index == current_) {
    const TimeRange view = view_;
    current_ = -1;  // setCurrent re-emits everything the views follow
    setCurrent(index);
    setViewRange(view);  // the same trace: the user keeps the range they were looking at
  }
  return true;
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
