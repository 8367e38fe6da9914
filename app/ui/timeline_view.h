#pragma once
// The timeline of the current run: lanes by rank, level-of-detail drawing, Perfetto/Nsight-style
// navigation, hover details, range measurement and the selected bucket's dependency flows.

#include <QStringList>
#include <QWidget>
#include <memory>
#include <optional>
#include <set>
#include <utility>
#include <vector>

#include "app/ui/draw_list.h"
#include "app/ui/plot_export.h"
#include "app/ui/search_bar.h"
#include "app/ui/session.h"

class QCustomPlot;
class QKeyEvent;
class QMouseEvent;
class QScrollBar;
class QWheelEvent;
class QCPItemRect;
class QCPItemText;
class QCPAbstractItem;
class QMenu;

namespace ddpscope::ui {

class LanePlottable;

class TimelineView : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineView(Session* session, QWidget* parent = nullptr);

  QCustomPlot* plot() const { return plot_; }
  const std::vector<LanePlottable*>& lanes() const { return lanes_; }
  // Height of all lanes, in pixels.
  int contentHeight() const { return content_height_; }

  // Navigation (keys and mouse call these; public for tests and menus).
  void zoomBy(double factor, trace::TimeNs anchor);
  void panBy(double fraction);
  void fit();  // the selection when there is one, else everything
  // Text of the hover tooltip at a widget position of the plot ("" when nothing is there).
  QString hoverText(const QPointF& pos) const;
  // The selected range's label: its duration and the overlap inside it per rank ("" when none).
  QString selectionText() const;

  // Search (docs/UI.md "Search"): the bar above the lanes, its matches in time order and the
  // current one (-1: none yet).
  SearchBar* searchBar() const { return search_; }
  void focusSearch();
  // Searches for `pattern` (a regular expression) and highlights every match; false with the
  // reason in the bar when it does not compile.
  bool search(const QString& pattern);
  // Searches for exactly `name` (a statistics row) and shows its first match.
  void searchName(const QString& name);
  const std::vector<SearchMatch>& matches() const { return matches_; }
  int currentMatch() const { return current_match_; }
  // Moves to the next / previous match (wrapping), shows it and outlines it; a match on a deeper
  // row of a collapsed host thread opens the thread first.
  void nextMatch();
  void previousMatch();
  void showMatch(int i);
  // Zooms to step `step` (its extent over the ranks that have it, or over `rank_index` only);
  // false when no rank has it.
  bool goToStep(std::int32_t step, std::int32_t rank_index = -1);
  // Scrolls the lanes to show the stream lane of a rank.
  void revealStream(std::int32_t rank_index, std::int64_t device, std::int64_t stream);
  // Scrolls the lanes to put a rank's first lane at the top (a pinned lane left aside).
  void revealRank(std::int32_t rank_index);
  // The lanes outlined as the selected kernel's collective, one per rank that has it (for tests):
  // (rank index, track, index) of each rank's kernel.
  struct CollectiveMark {
    std::int32_t rank_index = 0, track = 0;
    std::uint32_t index = 0;
  };
  const std::vector<CollectiveMark>& collectiveMarks() const { return collective_marks_; }
  // The legend's entries, as shown under the lanes.
  QStringList legendTexts() const;

  // Host lane groups (docs/UI.md "Host lanes"): a CPU thread's rows below its first, shown when
  // the group is expanded (a click on its label toggles it; all start collapsed).
  bool hostGroupExpanded(std::int32_t rank_index, std::int32_t track) const;
  // Closes every host group and scrolls the lanes back to the top (as a run opens).
  void resetHostRows();
  int scrollPosition() const;
  void setHostGroupExpanded(std::int32_t rank_index, std::int32_t track, bool expanded);
  // Pinned and hidden lanes (docs/UI.md "Pin and hide lanes"), by index in the run's
  // TimelineModel::lanes. Pinned lanes are drawn above all others, in the order they were pinned
  // (a host row even when its thread is closed); hidden lanes are not drawn until shown again.
  // Pinning a hidden lane shows it, hiding a pinned one unpins it. A right-click on a lane opens
  // laneMenu. Both are forgotten when another run is shown.
  void setLanePinned(std::size_t lane, bool pinned);
  void setLaneHidden(std::size_t lane, bool hidden);
  void showHiddenLanes();
  const std::vector<std::size_t>& pinnedLanes() const { return pinned_; }
  const std::set<std::size_t>& hiddenLanes() const { return hidden_; }
  // Index of a shown lane in TimelineModel::lanes.
  std::size_t laneIndex(const LanePlottable* lane) const;
  // The menu of a lane (pin or unpin, hide, show the hidden lanes, open or close a thread's rows);
  // the view runs it at the cursor, tests trigger its actions.
  QMenu* laneMenu(const LanePlottable* lane, QWidget* parent);
  // The selected event's launch flow (for tests): the host call and the GPU work it launched,
  // drawn as an arrow from one to the other; none when the selection has no resolved launch.
  struct FlowMark {
    std::int32_t rank_index = 0;
    std::int32_t host_track = 0, gpu_track = 0;
    std::uint32_t host_index = 0, gpu_index = 0;
  };
  const std::optional<FlowMark>& flowMark() const { return flow_mark_; }
  // The lane drawing event `index` of track `track` of a rank (null when none is shown).
  const LanePlottable* laneShowing(std::int32_t rank_index, std::int32_t track,
                                   std::uint32_t index) const;

  // Renders all lanes (not only the visible ones) in the light theme; of a run of many ranks,
  // the first kExportRanks, the title saying how many of how many are shown. Zoomed in (the view
  // inside the run's extent), the title adds the window and its figures
  // (analysis::windowFigureText of analysis::windowFigures over the view's range).
  static constexpr int kExportRanks = 8;
  bool exportImage(const QString& path, double scale, QString* error, int width = 0);
  // The title an export has now: the run's figures, and the window's when zoomed in.
  QString exportTitleText() const;
  // The ranks an export's title names (the late rank, the rank that went quiet first) that are
  // not among the first kExportRanks, as (rank index, the title's note on its pinned lanes):
  // exportImage pins their lanes above the others while it draws.
  std::vector<std::pair<std::int32_t, QString>> namedRanksBeyondExport() const;
  // The same into memory (the design report writes its figures together).
  // `note`: a last line of the title (what a figure of a report shows: the step, a pinned rank).
  bool renderImage(ExportFormat format, double scale, QByteArray* out, QString* error,
                   int width = 0, const QString& note = QString());
  // renderImage with the lanes of namedRanksBeyondExport pinned while it draws (then unpinned),
  // their notes after `caption` on the title's last line: what exportImage and the design
  // report's timeline figures draw.
  bool renderNamedRanksImage(ExportFormat format, double scale, QByteArray* out, QString* error,
                             int width = 0, const QString& caption = QString());
  // Pins the lanes of a rank but its host rows (steps, buckets, streams, overlap, annotations)
  // above the others; returns the lanes it pinned, for unpinLanes.
  std::vector<std::size_t> pinRankLanes(std::int32_t rank_index);
  void unpinLanes(const std::vector<std::size_t>& lanes);
  void copyToClipboard(double scale = 2.0);

 signals:
  void statusMessage(const QString& text);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setUpPlot();
  void createMarks();
  void rebuild();
  // Creates the plottables of the lanes shown (a collapsed host group shows its first row only).
  void relayout();
  bool laneShown(const Lane& lane) const;
  // On a new selection: expands the host groups whose rows hold the selected event or the other
  // end of its launch flow, and moves the view to show both.
  void revealSelectedEvent();
  // The selected event's launch flow: the other end outlined, an arrow launch → GPU work.
  void updateFlowItems();
  void applyViewRange();
  void updateVerticalRange();
  void updateSelectionItems();
  void updateEventItem();
  // The selected kernel's collective outlined on every rank's lane (matched collectives).
  void updateCollectiveItems();
  void updateLegend();
  void clearMatches();
  // Puts the matches on the lanes shown (a host match in a collapsed thread on its first row)
  // and outlines the current one.
  void placeMatches();
  const LanePlottable* matchLane(const SearchMatch& m) const;
  // Keeps the host rows of the selected event, its flow's ends and the current match drawn at a
  // coarse zoom (LanePlottable::setKeptDepth).
  void updateKeptRows();
  int firstMatchAtOrAfter(trace::TimeNs t) const;
  void updateStepRange();
  const LanePlottable* streamLane(std::int32_t rank_index, std::int32_t track) const;
  void revealLane(const LanePlottable* lane);
  // The selected bucket: outlines of it, its allreduce and the kernel that consumes it, the
  // flows ready → allreduce → consumer, and the view moved to show them.
  void updateBucketItems();
  void addOutline(const LanePlottable* lane, trace::TimeNs lo, trace::TimeNs hi);
  void addFlow(const LanePlottable* from, trace::TimeNs t0, const LanePlottable* to,
               trace::TimeNs t1);
  void revealBucket(const LanePlottable* bucket_lane, trace::TimeNs lo, trace::TimeNs hi);
  LanePlottable* laneAt(double y) const;
  trace::TimeNs timeAt(double x) const;
  // Input on the plot: true when the event was used.
  bool onKeyPress(QKeyEvent* k);
  bool onWheel(QWheelEvent* w);
  bool onMousePress(QMouseEvent* m);
  bool onMouseMove(QMouseEvent* m);
  bool onMouseRelease(QMouseEvent* m);
  bool onDoubleClick(QMouseEvent* m);
  void handleKey(int key);
  void selectAt(const QPointF& pos);  // a click: the bucket or kernel there, or nothing
  // What an export shows: how many ranks' lanes (their height in *height) and the title.
  int exportedRanks(int* height) const;
  QString exportTitle(int shown_ranks) const;

  Session* session_;
  SearchBar* search_;
  QCustomPlot* plot_;
  QScrollBar* vscroll_;
  std::shared_ptr<const LoadedRun> run_;
  std::vector<LanePlottable*> lanes_;
  std::vector<QCPAbstractItem*> bucket_items_;
  std::vector<QCPAbstractItem*> collective_items_;
  std::vector<CollectiveMark> collective_marks_;
  std::vector<QCPAbstractItem*> flow_items_;
  std::optional<FlowMark> flow_mark_;
  std::set<std::pair<std::int32_t, std::int32_t>> expanded_;  // (rank index, host track)
  std::vector<std::size_t> pinned_;                           // lanes, in the order pinned
  std::set<std::size_t> hidden_;
  std::size_t pinned_shown_ = 0;  // the first lanes_ are the pinned ones
  QCPItemRect* match_rect_ = nullptr;
  std::vector<SearchMatch> matches_;
  std::vector<LaneEvents> match_lanes_;  // per lane: its matches, for drawing
  int current_match_ = -1;
  QCPItemRect* selection_rect_ = nullptr;
  QCPItemRect* event_rect_ = nullptr;
  QCPItemText* selection_label_ = nullptr;
  int content_height_ = 0;
  bool exporting_ = false;
  // Mouse gestures.
  enum class Drag { None, Pan, Select } drag_ = Drag::None;
  QPoint press_pos_;
  TimeRange press_range_;
  int press_scroll_ = 0;
  trace::TimeNs select_anchor_ = 0;
  bool moved_ = false;
};

}  // namespace ddpscope::ui
