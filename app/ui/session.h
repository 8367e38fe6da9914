#pragma once
// The central context every view observes (docs/UI.md "Code map"): the runs loaded, the
// current run, the selected bucket, the visible time range and the selected range. Views change
// it and react to its signals; they never talk to each other.

#include <QObject>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "app/ui/loaded_run.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

struct BucketKey {
  std::int32_t rank_index = 0;
  std::int32_t report_index = 0;  // index in RankReport::buckets
  bool operator==(const BucketKey&) const = default;
};

// One event of a GPU track, as selected by a click on the timeline.
struct EventRef {
  std::int32_t rank_index = 0;
  std::int32_t track = 0;  // index in RankTrace::tracks
  std::uint32_t index = 0;
  bool operator==(const EventRef&) const = default;
};

struct TimeRange {
  trace::TimeNs lo = 0, hi = 0;
  trace::TimeNs length() const { return hi - lo; }
  bool operator==(const TimeRange&) const = default;
};

class Session : public QObject {
  Q_OBJECT
 public:
  explicit Session(QObject* parent = nullptr);

  const std::vector<std::shared_ptr<const LoadedRun>>& runs() const { return runs_; }
  int currentIndex() const { return current_; }
  std::shared_ptr<const LoadedRun> current() const;

  void addRun(std::shared_ptr<const LoadedRun> run);  // and makes it current
  void setCurrent(int index);
  void closeRun(int index);
  // Puts `run` in the place of `old` (the same run analysed again: new rules), keeping which run
  // is current; the selections of the current run are cleared. False when `old` is not open.
  // Emits runReplaced(old, run), then runsChanged.
  bool replaceRun(const std::shared_ptr<const LoadedRun>& old,
                  std::shared_ptr<const LoadedRun> run);

  const std::optional<BucketKey>& selectedBucket() const { return bucket_; }
  void selectBucket(std::optional<BucketKey> key);

  const std::optional<EventRef>& selectedEvent() const { return event_; }
  void selectEvent(std::optional<EventRef> ref);

  TimeRange viewRange() const { return view_; }
  void setViewRange(TimeRange r);
  const std::optional<TimeRange>& selection() const { return selection_; }
  void setSelection(std::optional<TimeRange> r);
  // Overlap % inside the selection, per rank of the current run.
  std::vector<std::optional<double>> selectionOverlap() const;

 signals:
  void runsChanged();
  // `old` was analysed again and `now` takes its place (replaceRun): views holding `old` follow.
  void runReplaced(std::shared_ptr<const ddpscope::ui::LoadedRun> old,
                   std::shared_ptr<const ddpscope::ui::LoadedRun> now);
  void currentRunChanged();
  void bucketSelected();
  void eventSelected();
  void viewRangeChanged();
  void selectionChanged();

 private:
  std::vector<std::shared_ptr<const LoadedRun>> runs_;
  int current_ = -1;
  std::optional<BucketKey> bucket_;
  std::optional<EventRef> event_;
  TimeRange view_;
  std::optional<TimeRange> selection_;
};

}  // namespace ddpscope::ui
