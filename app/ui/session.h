#pragma once
// The central context every view observes (docs/UI.md "Code map"): the runs loaded, the
// current run, the selected bucket, the visible time range and the selected range. Views change
// it and react to its signals; they never talk to each other.

#include <QObject>
#include <QString>
#include <QStringList>
#include <memory>
#include <optional>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"
#include "app/ui/timeline_model.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// Whether a run's numbers cover the whole run: the analysis's completeness (traces cut short,
// ranks of the declared world with no trace: analysis::Completeness) and, for a run the app
// made, whether the agent that made it failed.
struct Completeness : analysis::Completeness {
  QString producer_error;  // the failed agent's message, "" when none
  bool incomplete() const {
    return analysis::Completeness::incomplete() || !producer_error.isEmpty();
  }
};
// What the "INCOMPLETE" badge's tooltip says: why, and what the numbers cover ("" when complete).
QString incompleteExplanation(const Completeness& c, std::size_t ranks_loaded);

// What the views measure a rank's overlap against once its timeline is built: its communication
// and the part of it hidden under compute (∪comm ∩ ∪compute). Both have about as many intervals
// as the rank has communication kernels; the compute union (one interval per gap between
// kernels, 8 B per trace event) and the other sets of analysis::RankActivity are not kept.
struct RankOverlap {
  analysis::IntervalSet comm;
  analysis::IntervalSet hidden;

  // Overlap % inside [lo, hi); empty when no comm there. Equals analysis::overlapPctWithin of
  // the rank's activity: the comm inside [lo, hi) hidden under compute is `hidden` there.
  std::optional<double> pctWithin(trace::TimeNs lo, trace::TimeNs hi) const;
  // How much of [lo, hi) is under the rank's compute, for a span inside its communication (a
  // comm kernel): analysis::lengthWithin(activity.compute, lo, hi), exactly.
  trace::TimeNs computeWithinComm(trace::TimeNs lo, trace::TimeNs hi) const;
  // How much of [lo, hi) is under the rank's communication: analysis::lengthWithin of its comm.
  trace::TimeNs commWithin(trace::TimeNs lo, trace::TimeNs hi) const;
};
RankOverlap rankOverlap(const analysis::RankActivity& activity);

// A run with everything derived from it; immutable once loaded, shared between views.
struct LoadedRun {
  QString name;
  QStringList paths;
  trace::Run run;
  analysis::RunReport report;
  analysis::RunSummary summary;  // every run-level figure shown (analysis::summarizeRun)
  std::vector<RankOverlap> overlap;  // one per rank
  TimelineModel timeline;
  double load_seconds = 0;
  Completeness completeness;

  std::string_view source() const { return run.source(); }
  bool incomplete() const { return completeness.incomplete(); }
  QString incompleteText() const { return incompleteExplanation(completeness, run.ranks.size()); }
};

// Builds a LoadedRun from a run in memory (analysis + timeline model). Runs on any thread.
std::shared_ptr<LoadedRun> prepareRun(trace::Run run, const QStringList& paths);

// The title of an exported figure, so that a slide says what it shows: the run's name, its source
// badge (INCOMPLETE, "N of W ranks" or "N ranks pooled") and the headline numbers.
// What the analysis warns about the run (the CLI's "warning:" lines): the run's, then each
// rank's prefixed "rank R: ".
QStringList runWarnings(const LoadedRun& run);
// "1 rank", "8 ranks", or "3 of 4 ranks" when ranks of the run's world have no trace here.
QString ranksText(const LoadedRun& run);
// "1 warning", "3 warnings".
QString warningCount(qsizetype n);

// two_lines: the numbers on a line of their own, for narrow figures.
QString runTitle(const LoadedRun& run, bool two_lines = false);

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
