#include "app/ui/timeline_view.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QLineEdit>
#include <QMenu>
#include <QMouseEvent>
#include <QScrollBar>
#include <QToolTip>
#include <QVBoxLayout>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <tuple>

#include "app/analysis/classify.h"
#include "app/analysis/statistics.h"
#include "app/analysis/stragglers.h"
#include "app/ui/format.h"
#include "app/ui/host_lanes.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/plot_style.h"
#include "app/ui/run_text.h"
#include "app/ui/timeline_tooltip.h"

namespace ddpscope::ui {

namespace {

// Before the label of a thread of several rows: a click on it opens (▸) or closes (▾) them.
const QString kClosedArrow = QStringLiteral("▸ ");
const QString kOpenArrow = QStringLiteral("▾ ");

// The lane labels without those arrows while a figure is made (nothing to click in a picture),
// put back after.
class LabelsWithoutArrows {
 public:
  explicit LabelsWithoutArrows(QCPAxis* axis) : axis_(axis), saved_(axis->ticker()) {
    const auto text = saved_.dynamicCast<QCPAxisTickerText>();
    if (!text) return;
    QSharedPointer<QCPAxisTickerText> plain(new QCPAxisTickerText);
    plain->setSubTickCount(text->subTickCount());
    for (auto it = text->ticks().cbegin(); it != text->ticks().cend(); ++it) {
      const QString& label = it.value();
      const bool arrow = label.startsWith(kClosedArrow) || label.startsWith(kOpenArrow);
      plain->addTick(it.key(), arrow ? label.mid(kClosedArrow.size()) : label);
    }
    axis_->setTicker(plain);
  }
  LabelsWithoutArrows(const LabelsWithoutArrows&) = delete;
  LabelsWithoutArrows& operator=(const LabelsWithoutArrows&) = delete;
  ~LabelsWithoutArrows() { axis_->setTicker(saved_); }

 private:
  QCPAxis* axis_;
  QSharedPointer<QCPAxisTicker> saved_;
};
constexpr double kKeyZoom = 0.8;   // W zooms in to 80 % of the range, S out by the inverse
constexpr double kKeyPan = 0.2;    // A/D pan by a fifth of the range
constexpr TimeNs kMinRange = 100;  // 100 ns across the widget at the deepest zoom
constexpr int kRankGap = 10;       // pixels between the lane groups of two ranks

// The lanes of a selected bucket's rank that its flows connect.
struct BucketLanes {
  const LanePlottable* bucket = nullptr;   // the buckets lane holding it
  const LanePlottable* comm = nullptr;     // the stream of its allreduce
  const LanePlottable* compute = nullptr;  // the rank's (first) compute stream
};

BucketLanes findBucketLanes(const std::vector<LanePlottable*>& lanes, const BucketKey& key,
                            const analysis::BucketReport& b) {
  BucketLanes out;
  for (auto* l : lanes) {
    const Lane& lane = l->lane();
    if (lane.rank_index != key.rank_index) continue;
    if (lane.kind == LaneKind::Buckets) {
      for (std::size_t i = 0; i < lane.events.size() && !out.bucket; ++i)
        if (lane.events.source(i) == static_cast<std::uint32_t>(key.report_index)) out.bucket = l;
    }
    if (lane.kind == LaneKind::Stream && lane.device == b.device && lane.stream == b.stream)
      out.comm = l;
    if (lane.kind == LaneKind::Stream && lane.role == analysis::StreamRole::Compute && !out.compute)
      out.compute = l;
  }
  return out;
}

// The consumer of a bucket's reduced gradients: the first optimizer kernel of the compute
// stream after the allreduce ends (or the first compute kernel when none is named like one).
struct Consumer {
  TimeNs start = -1;                    // -1: none
  TimeNs kernel_lo = 0, kernel_hi = 0;  // the kernel drawn at `start`
};

Consumer findConsumer(const trace::RankTrace& rank, const LanePlottable* compute_lane,
                      TimeNs allreduce_end) {
  Consumer out;
  if (!compute_lane || compute_lane->lane().track < 0) return out;
  const auto& t = rank.tracks[static_cast<std::size_t>(compute_lane->lane().track)];
  const auto first = static_cast<std::size_t>(
      std::lower_bound(t.start.begin(), t.start.end(), allreduce_end) - t.start.begin());
  for (std::size_t i = first; i < t.size() && i < first + 5000; ++i) {
    if (analysis::isOptimizerName(rank.names[t.name[i]])) {
      out.start = t.start[i];
      break;
    }
  }
  if (out.start < 0 && first < t.size()) out.start = t.start[first];
  if (out.start >= 0) {
    const auto it = std::upper_bound(t.start.begin(), t.start.end(), out.start);
    const auto ci = static_cast<std::size_t>(it - t.start.begin()) - 1;
    out.kernel_lo = t.start[ci];
    out.kernel_hi = t.end(ci);
  }
  return out;
}

}  // namespace

TimelineView::TimelineView(Session* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      search_(new SearchBar(this)),
      plot_(new QCustomPlot(this)),
      vscroll_(new QScrollBar(Qt::Vertical, this)) {
  auto* column = new QVBoxLayout(this);
  column->setContentsMargins(0, 0, 0, 0);
  column->setSpacing(0);
  column->addWidget(search_);
  auto* layout = new QHBoxLayout;
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(plot_, 1);
  layout->addWidget(vscroll_);
  column->addLayout(layout, 1);
  setFocusProxy(plot_);
  connect(search_, &SearchBar::searchChanged, this, [this](const QString& p) { search(p); });
  connect(search_, &SearchBar::nextRequested, this, &TimelineView::nextMatch);
  connect(search_, &SearchBar::previousRequested, this, &TimelineView::previousMatch);
  connect(search_, &SearchBar::stepRequested, this, [this](int step) {
    if (!goToStep(step)) emit statusMessage(tr("No rank has step %1").arg(step));
  });
  setUpPlot();
  createMarks();

  connect(plot_, &QCustomPlot::afterLayout, this, [this] { updateVerticalRange(); });
  connect(vscroll_, &QScrollBar::valueChanged, this, [this] {
    updateVerticalRange();
    plot_->replot(QCustomPlot::rpQueuedReplot);
  });
  connect(session_, &Session::currentRunChanged, this, &TimelineView::rebuild);
  connect(session_, &Session::viewRangeChanged, this, &TimelineView::applyViewRange);
  connect(session_, &Session::selectionChanged, this, &TimelineView::updateSelectionItems);
  connect(session_, &Session::bucketSelected, this, &TimelineView::updateBucketItems);
  connect(session_, &Session::eventSelected, this, [this] {
    revealSelectedEvent();
    updateEventItem();
  });
  rebuild();
}

void TimelineView::setUpPlot() {
  plot_->setFocusPolicy(Qt::StrongFocus);
  plot_->setMouseTracking(true);
  plot_->setNoAntialiasingOnDrag(true);
  plot_->setPlottingHint(QCP::phCacheLabels, true);
  plot_->installEventFilter(this);
  plot_->setMinimumHeight(160);
  // Lanes are not legend entries (the legend names colours): a lane added to it by default would
  // add a blank legend row per lane on every relayout and squeeze the lanes' axis rect.
  plot_->setAutoAddPlottableToLegend(false);

  plot_->xAxis->setVisible(false);
  plot_->xAxis2->setVisible(true);
  plot_->xAxis2->setTicker(QSharedPointer<TimeTicker>(new TimeTicker));
  plot_->xAxis2->grid()->setVisible(true);
  plot_->yAxis->setRangeReversed(true);
  plot_->yAxis->grid()->setVisible(false);
  plot_->yAxis->setTickLength(0, 0);
  plot_->yAxis->setSubTicks(false);
  plot_->axisRect()->setAutoMargins(QCP::msLeft | QCP::msTop | QCP::msRight | QCP::msBottom);
  plot_->axisRect()->setMinimumMargins(QMargins(8, 4, 12, 6));
  // The legend: what the colours mean, in a row under the lanes (updateLegend fills it).
  plot_->legend->setIconSize(14, 10);
  putLegendBelow(plot_);
  showLegendBelow(plot_, false);
  applyPlotTheme(plot_, PlotTheme::System);
}

void TimelineView::createMarks() {
  plot_->addLayer("marks", plot_->layer("main"), QCustomPlot::limAbove);
  plot_->layer("marks")->setMode(QCPLayer::lmBuffered);
  selection_rect_ = new QCPItemRect(plot_);
  selection_rect_->setLayer("marks");
  selection_rect_->setClipAxisRect(plot_->axisRect());
  selection_rect_->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
  selection_rect_->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
  selection_rect_->setPen(QPen(colours::kRangeOutline, 1, Qt::DashLine));
  selection_rect_->setBrush(colours::kRangeFill);
  selection_rect_->setVisible(false);
  event_rect_ = new QCPItemRect(plot_);
  event_rect_->setLayer("marks");
  event_rect_->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
  event_rect_->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
  event_rect_->setPen(QPen(colours::kSelection, 2));
  event_rect_->setBrush(Qt::NoBrush);
  event_rect_->setVisible(false);
  match_rect_ = new QCPItemRect(plot_);
  match_rect_->setLayer("marks");
  match_rect_->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
  match_rect_->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
  match_rect_->setPen(QPen(colours::kSearchCurrent, 2, Qt::DashLine));
  match_rect_->setBrush(Qt::NoBrush);
  match_rect_->setVisible(false);
  selection_label_ = new QCPItemText(plot_);
  selection_label_->setLayer("marks");
  selection_label_->setClipToAxisRect(true);
  selection_label_->position->setTypeX(QCPItemPosition::ptPlotCoords);
  selection_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  selection_label_->position->setAxes(plot_->xAxis2, plot_->yAxis);
  selection_label_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
  selection_label_->setPadding(QMargins(6, 3, 6, 3));
  selection_label_->setBrush(colours::kRangeLabelFill);
  selection_label_->setPen(QPen(colours::kRangeOutline));
  selection_label_->setVisible(false);
}

namespace {
// A lane's name in menus and pinned labels (lane i of the model): its label, or for a lane
// without one the name of the lane it continues and its row.
QString rowName(const std::vector<Lane>& all, std::size_t i) {
  const Lane& lane = all[i];
  if (!lane.label.empty()) return QString::fromStdString(lane.label);
  // A lane without a label continues the one above it (a thread's deeper row, a further bucket
  // row): that one's name and this row's number. A thread's rows, and a rank's bucket rows,
  // follow one another in the model.
  const Lane* first = &lane;
  int row = 1;
  if (lane.kind == LaneKind::Host) {
    first = &lane - lane.depth;
    row = lane.depth + 1;
  } else {
    while (first->label.empty() && first != all.data() && (first - 1)->kind == lane.kind &&
           (first - 1)->rank_index == lane.rank_index) {
      --first;
      ++row;
    }
  }
  if (first->label.empty()) return QObject::tr("row %1").arg(row);
  return QString::fromStdString(first->label) + QObject::tr(" · row %1").arg(row);
}
}  // namespace

void TimelineView::rebuild() {
  run_ = session_->current();
  expanded_.clear();
  pinned_.clear();
  hidden_.clear();
  clearMatches();
  // The previous run's launch flow points into that run's ranks and tracks: forget it before the
  // layout asks which rows it needs (updateFlowItems draws the new selection's, if any).
  for (auto* item : flow_items_)
    plot_->removeItem(item);
  flow_items_.clear();
  flow_mark_.reset();
  relayout();
  if (run_ && !search_->field()->text().isEmpty()) search(search_->field()->text());
  vscroll_->setValue(0);
  updateLegend();
  updateStepRange();
  applyViewRange();
  updateSelectionItems();
  updateBucketItems();
  revealSelectedEvent();
  updateEventItem();
}

bool TimelineView::laneShown(const Lane& lane) const {
  return lane.kind != LaneKind::Host || lane.depth == 0 ||
         expanded_.contains({lane.rank_index, lane.track});
}

void TimelineView::relayout() {
  for (auto* item : bucket_items_)
    plot_->removeItem(item);
  bucket_items_.clear();
  for (auto* l : lanes_)
    plot_->removePlottable(l);
  match_lanes_.clear();  // the matches stay; placeMatches puts them on the new lanes
  lanes_.clear();
  content_height_ = 0;
  QSharedPointer<QCPAxisTickerText> labels(new QCPAxisTickerText);
  pinned_shown_ = 0;
  if (run_) {
    const auto& all = run_->timeline.lanes;
    double y = 0;
    auto add = [&](std::size_t index, bool pinned) {
      const Lane& lane = all[index];
      const auto& rank = run_->run.ranks[static_cast<std::size_t>(lane.rank_index)];
      auto* p = new LanePlottable(plot_->xAxis2, plot_->yAxis, &lane, &rank, y);
      p->setShaded(lane.rank_index % 2 == 1);
      lanes_.push_back(p);
      QString label = QString::fromStdString(lane.label);
      if (pinned) {
        // Away from its rank's lanes: the rank said, unless the label says it already.
        if (lane.kind != LaneKind::Steps && !label.isEmpty())
          label = tr("rank %1 · ").arg(lane.rank) + label;
        if (label.isEmpty()) label = tr("rank %1 · ").arg(lane.rank) + rowName(all, index);
        label += tr(" · pinned");
      } else if (lane.kind == LaneKind::Host && lane.depth == 0 && lane.rows > 1) {
        // A thread of several rows opens and closes by a click on its label.
        label =
            (expanded_.contains({lane.rank_index, lane.track}) ? kOpenArrow : kClosedArrow) + label;
      }
      if (!label.isEmpty()) labels->addTick(y + lane.height / 2.0, label);
      y += lane.height;
    };
    for (const std::size_t i : pinned_)
      add(i, true);
    pinned_shown_ = lanes_.size();
    if (pinned_shown_ > 0) y += kRankGap;
    std::int32_t last_rank = -1;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const Lane& lane = all[i];
      if (!laneShown(lane) || hidden_.contains(i) ||
          std::find(pinned_.begin(), pinned_.end(), i) != pinned_.end())
        continue;
      const bool next_rank = last_rank >= 0 && lane.rank_index != last_rank;
      if (next_rank) y += kRankGap;  // ranks apart, a rule between them
      last_rank = lane.rank_index;
      add(i, false);
      lanes_.back()->setRuleAbove(next_rank);
    }
    content_height_ = static_cast<int>(y);
  }
  const bool any_stream =
      run_ && std::any_of(run_->timeline.lanes.begin(), run_->timeline.lanes.end(),
                          [](const Lane& l) { return l.kind == LaneKind::Stream; });
  QString note;
  if (!run_) {
    note = tr("No run loaded: File ▸ Open files… or Open folder…, or run the agent (Run panel)");
  } else if (!run_->run.ranks.empty() &&
             std::all_of(run_->run.ranks.begin(), run_->run.ranks.end(),
                         [](const trace::RankTrace& r) { return r.eventCount() == 0; })) {
    note =
        tr("This trace holds no events at all: the profiler recorded nothing, or this is "
           "not the file meant.");
  } else if (!any_stream) {
    note =
        tr("No GPU activity (kernels, copies, syncs) in this trace, so no stream to show.\n"
           "Record it with CUDA activities on (PyTorch: ProfilerActivity.CUDA).");
  }
  setEmptyNote(plot_, note, {plot_->xAxis, plot_->xAxis2});
  plot_->yAxis->setTicker(labels);
  updateVerticalRange();
  placeMatches();
}

bool TimelineView::hostGroupExpanded(std::int32_t rank_index, std::int32_t track) const {
  return expanded_.contains({rank_index, track});
}

void TimelineView::resetHostRows() {
  if (!expanded_.empty()) {
    expanded_.clear();
    relayout();
    updateBucketItems();
    updateEventItem();
  }
  vscroll_->setValue(0);
}

int TimelineView::scrollPosition() const {
  return vscroll_->value();
}

void TimelineView::setHostGroupExpanded(std::int32_t rank_index, std::int32_t track,
                                        bool expanded) {
  if (hostGroupExpanded(rank_index, track) == expanded) return;
  if (expanded) {
    expanded_.insert({rank_index, track});
  } else {
    expanded_.erase({rank_index, track});
  }
  relayout();
  updateBucketItems();
  updateEventItem();
}

std::size_t TimelineView::laneIndex(const LanePlottable* lane) const {
  return static_cast<std::size_t>(&lane->lane() - run_->timeline.lanes.data());
}

void TimelineView::setLanePinned(std::size_t lane, bool pinned) {
  if (!run_ || lane >= run_->timeline.lanes.size()) return;
  const auto it = std::find(pinned_.begin(), pinned_.end(), lane);
  if ((it != pinned_.end()) == pinned) return;
  if (pinned) {
    pinned_.push_back(lane);
    hidden_.erase(lane);
  } else {
    pinned_.erase(it);
  }
  relayout();
  updateBucketItems();
  updateEventItem();
}

void TimelineView::setLaneHidden(std::size_t lane, bool hidden) {
  if (!run_ || lane >= run_->timeline.lanes.size() || hidden_.contains(lane) == hidden) return;
  if (hidden) {
    hidden_.insert(lane);
    pinned_.erase(std::remove(pinned_.begin(), pinned_.end(), lane), pinned_.end());
    emit statusMessage(
        tr("Lane \"%1\" hidden (%2 hidden): right-click any lane ▸ Show hidden lanes to bring "
           "them back")
            .arg(rowName(run_->timeline.lanes, lane))
            .arg(hidden_.size()));
  } else {
    hidden_.erase(lane);
  }
  relayout();
  updateBucketItems();
  updateEventItem();
}

void TimelineView::showHiddenLanes() {
  if (hidden_.empty()) return;
  hidden_.clear();
  relayout();
  updateBucketItems();
  updateEventItem();
}

QMenu* TimelineView::laneMenu(const LanePlottable* lp, QWidget* parent) {
  auto* menu = new QMenu(parent);
  if (lp && run_) {
    const std::size_t i = laneIndex(lp);
    const Lane& lane = lp->lane();
    const QString name = rowName(run_->timeline.lanes, i);
    const bool pinned = std::find(pinned_.begin(), pinned_.end(), i) != pinned_.end();
    menu->addAction(pinned ? tr("Unpin \"%1\"").arg(name) : tr("Pin \"%1\" to the top").arg(name),
                    this, [this, i, pinned] { setLanePinned(i, !pinned); });
    menu->addAction(tr("Hide \"%1\"").arg(name), this, [this, i] { setLaneHidden(i, true); });
    if (lane.kind == LaneKind::Host && lane.rows > 1) {
      const bool open = hostGroupExpanded(lane.rank_index, lane.track);
      menu->addAction(
          open ? tr("Close the thread's rows") : tr("Open the thread's rows"), this,
          [this, r = lane.rank_index, t = lane.track, open] { setHostGroupExpanded(r, t, !open); });
    }
  }
  menu->addSeparator();
  QAction* show = menu->addAction(tr("Show hidden lanes (%1)").arg(hidden_.size()), this,
                                  [this] { showHiddenLanes(); });
  show->setEnabled(!hidden_.empty());
  return menu;
}

void TimelineView::updateLegend() {
  // The colours the lanes use for this run: the roles present, each collective kind present
  // (communication lanes are coloured by kind), and the overlap strip's hidden and exposed.
  if (!run_) {
    plot_->legend->clearItems();
    showLegendBelow(plot_, false);
    return;
  }
  fillLaneLegend(plot_->legend, {&run_->timeline});
  showLegendBelow(plot_, plot_->legend->itemCount() > 0);
}

QStringList TimelineView::legendTexts() const {
  QStringList out;
  for (int i = 0; i < plot_->legend->itemCount(); ++i)
    if (auto* item = qobject_cast<SwatchLegendItem*>(plot_->legend->item(i))) out << item->text();
  return out;
}

void TimelineView::updateStepRange() {
  int lo = 0, hi = -1;
  if (run_) {
    for (const auto& r : run_->run.ranks) {
      for (const auto& st : r.steps) {
        if (hi < lo) {
          lo = hi = st.number;
        } else {
          lo = std::min(lo, static_cast<int>(st.number));
          hi = std::max(hi, static_cast<int>(st.number));
        }
      }
    }
  }
  search_->setStepRange(lo, hi);
}

void TimelineView::focusSearch() {
  search_->field()->setFocus();
  search_->field()->selectAll();
}

void TimelineView::clearMatches() {
  for (auto* l : lanes_)
    l->setMatches(nullptr);
  matches_.clear();
  match_lanes_.clear();
  current_match_ = -1;
  if (match_rect_) match_rect_->setVisible(false);
}

bool TimelineView::search(const QString& pattern) {
  clearMatches();
  search_->setPattern(pattern);
  if (pattern.isEmpty() || !run_) {
    search_->clearCount();
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return !pattern.isEmpty() ? false : true;
  }
  const QRegularExpression re(pattern);
  if (!re.isValid()) {
    search_->showError(re.errorString());
    // The status bar no longer speaks of the last search's matches.
    emit statusMessage(
        tr("Search: %1 is not a valid regular expression (%2)").arg(pattern, re.errorString()));
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return false;
  }
  matches_ = findMatches(*run_, re);
  placeMatches();
  search_->showCount(-1, matches_.size());
  plot_->replot(QCustomPlot::rpQueuedReplot);
  return true;
}

const LanePlottable* TimelineView::matchLane(const SearchMatch& m) const {
  // A host match in a collapsed group: on the group's first row, the one shown.
  const std::int16_t row = m.kind == LaneKind::Host && !hostGroupExpanded(m.rank_index, m.track)
                               ? std::int16_t{0}
                               : m.row;
  for (const auto* l : lanes_) {
    const Lane& lane = l->lane();
    if (lane.kind == m.kind && lane.rank_index == m.rank_index && lane.track == m.track &&
        (m.kind != LaneKind::Host || lane.depth == row))
      return l;
  }
  return nullptr;
}

void TimelineView::placeMatches() {
  // Each lane draws its own matches through the draw-list builder (merged at a far zoom).
  match_lanes_.assign(lanes_.size(), LaneEvents{});
  // (rank, track, kind, host row) → the lane shown for it; a closed thread shows row 0 only.
  using Key = std::tuple<std::int32_t, std::int32_t, LaneKind, std::int16_t>;
  std::map<Key, std::size_t> lane_of;
  for (std::size_t li = 0; li < lanes_.size(); ++li) {
    const Lane& l = lanes_[li]->lane();
    lane_of[{l.rank_index, l.track, l.kind, l.kind == LaneKind::Host ? l.depth : 0}] = li;
  }
  for (const auto& m : matches_) {
    const bool open = m.kind == LaneKind::Host && hostGroupExpanded(m.rank_index, m.track);
    const Key key{m.rank_index, m.track, m.kind, open ? m.row : std::int16_t{0}};
    if (const auto it = lane_of.find(key); it != lane_of.end())
      match_lanes_[it->second].add(m.start, m.end, 0, m.index);
  }
  for (std::size_t li = 0; li < lanes_.size(); ++li) {
    match_lanes_[li].finish();
    lanes_[li]->setMatches(match_lanes_[li].size() > 0 ? &match_lanes_[li] : nullptr);
  }
  match_rect_->setVisible(false);
  if (current_match_ >= 0 && current_match_ < static_cast<int>(matches_.size())) {
    const SearchMatch& m = matches_[static_cast<std::size_t>(current_match_)];
    if (const LanePlottable* lane = matchLane(m)) {
      match_rect_->topLeft->setCoords(static_cast<double>(m.start), lane->top());
      match_rect_->bottomRight->setCoords(static_cast<double>(m.end), lane->bottom());
      match_rect_->setVisible(true);
    }
  }
  updateKeptRows();
}

void TimelineView::updateKeptRows() {
  std::map<std::pair<std::int32_t, std::int32_t>, int> kept;  // (rank, track) → deepest row
  const auto keep = [&](const LanePlottable* l) {
    if (!l || l->lane().kind != LaneKind::Host) return;
    int& d = kept.try_emplace({l->lane().rank_index, l->lane().track}, -1).first->second;
    d = std::max<int>(d, l->lane().depth);
  };
  if (current_match_ >= 0 && current_match_ < static_cast<int>(matches_.size()))
    keep(matchLane(matches_[static_cast<std::size_t>(current_match_)]));
  if (const auto& ref = session_->selectedEvent(); run_ && ref)
    keep(laneShowing(ref->rank_index, ref->track, ref->index));
  if (flow_mark_) {
    keep(laneShowing(flow_mark_->rank_index, flow_mark_->host_track, flow_mark_->host_index));
    keep(laneShowing(flow_mark_->rank_index, flow_mark_->gpu_track, flow_mark_->gpu_index));
  }
  for (auto* l : lanes_) {
    if (l->lane().kind != LaneKind::Host) continue;
    const auto it = kept.find({l->lane().rank_index, l->lane().track});
    l->setKeptDepth(it == kept.end() ? -1 : it->second);
  }
}

void TimelineView::searchName(const QString& name) {
  const QString pattern =
      QStringLiteral("^") + QRegularExpression::escape(name) + QStringLiteral("$");
  if (search(pattern) && !matches_.empty()) showMatch(0);
}

void TimelineView::nextMatch() {
  if (matches_.empty()) return;
  showMatch(current_match_ < 0 ? firstMatchAtOrAfter(session_->viewRange().lo)
                               : (current_match_ + 1) % static_cast<int>(matches_.size()));
}

void TimelineView::previousMatch() {
  if (matches_.empty()) return;
  const int n = static_cast<int>(matches_.size());
  showMatch(current_match_ < 0 ? n - 1 : (current_match_ + n - 1) % n);
}

int TimelineView::firstMatchAtOrAfter(TimeNs t) const {
  const auto it = std::partition_point(matches_.begin(), matches_.end(),
                                       [&](const SearchMatch& m) { return m.start < t; });
  return it == matches_.end() ? 0 : static_cast<int>(it - matches_.begin());
}

void TimelineView::showMatch(int i) {
  if (i < 0 || i >= static_cast<int>(matches_.size())) return;
  current_match_ = i;
  const SearchMatch& m = matches_[static_cast<std::size_t>(i)];
  search_->showCount(i, matches_.size());
  // Keep the zoom while the match is at least a few pixels wide there; else zoom so that it
  // takes a twentieth of the view. Centre it.
  const TimeRange r = session_->viewRange();
  const double px_per_ns = static_cast<double>(std::max(1, plot_->axisRect()->width())) /
                           std::max<double>(1, r.length());
  const TimeNs dur = std::max<TimeNs>(m.end - m.start, 1);
  TimeNs len = r.length();
  if (static_cast<double>(dur) * px_per_ns < 4 || dur > len) len = std::max<TimeNs>(20 * dur, 2000);
  const TimeNs mid = m.start + dur / 2;
  session_->setViewRange({mid - len / 2, mid - len / 2 + len});
  // A match on a host row of a collapsed thread opens the thread (relayout keeps the matches).
  if (m.kind == LaneKind::Host && m.row > 0 && !hostGroupExpanded(m.rank_index, m.track))
    setHostGroupExpanded(m.rank_index, m.track, true);
  placeMatches();
  revealLane(matchLane(m));
  const auto& rank = run_->run.ranks[static_cast<std::size_t>(m.rank_index)];
  const auto& t = rank.tracks[static_cast<std::size_t>(m.track)];
  const QString where =
      m.kind == LaneKind::Host
          ? QString::fromStdString(hostThreadLabel(rank, t))
          : QStringLiteral("stream %1").arg(analysis::streamText(t.stream()).c_str());
  emit statusMessage(tr("match %1 of %2: %3 · rank %4 · %5 · %6")
                         .arg(i + 1)
                         .arg(matches_.size())
                         .arg(QString::fromStdString(rank.names[t.name[m.index]]))
                         .arg(rank.rank)
                         .arg(where, formatTime(m.end - m.start)));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

bool TimelineView::goToStep(std::int32_t step, std::int32_t rank_index) {
  if (!run_) return false;
  TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  for (std::size_t r = 0; r < run_->run.ranks.size(); ++r) {
    if (rank_index >= 0 && static_cast<std::int32_t>(r) != rank_index) continue;
    for (const auto& st : run_->run.ranks[r].steps) {
      if (st.number != step) continue;
      lo = std::min(lo, st.start);
      hi = std::max(hi, st.end);
    }
  }
  if (hi < lo) return false;
  const TimeNs pad = std::max<TimeNs>((hi - lo) / 50, 1);
  session_->setViewRange({lo - pad, hi + pad});
  emit statusMessage(tr("step %1: %2").arg(step).arg(formatTime(hi - lo)));
  return true;
}

const LanePlottable* TimelineView::streamLane(std::int32_t rank_index, std::int32_t track) const {
  for (const auto* l : lanes_)
    if (l->lane().kind == LaneKind::Stream && l->lane().rank_index == rank_index &&
        l->lane().track == track)
      return l;
  return nullptr;
}

void TimelineView::revealStream(std::int32_t rank_index, std::int64_t device, std::int64_t stream) {
  for (const auto* l : lanes_) {
    const Lane& lane = l->lane();
    if (lane.kind == LaneKind::Stream && lane.rank_index == rank_index && lane.device == device &&
        lane.stream == stream) {
      revealLane(l);
      return;
    }
  }
}

void TimelineView::revealRank(std::int32_t rank_index) {
  for (std::size_t i = pinned_shown_; i < lanes_.size(); ++i)
    if (lanes_[i]->lane().rank_index == rank_index) {
      if (!exporting_) vscroll_->setValue(static_cast<int>(lanes_[i]->top()) - kRankGap);
      return;
    }
}

void TimelineView::revealLane(const LanePlottable* lane) {
  if (!lane || exporting_) return;
  const int visible = plot_->axisRect()->height();
  if (lane->top() < vscroll_->value() || lane->bottom() > vscroll_->value() + visible)
    vscroll_->setValue(static_cast<int>(lane->top()) - 20);
}

void TimelineView::applyViewRange() {
  const TimeRange r = session_->viewRange();
  plot_->xAxis2->setRange(static_cast<double>(r.lo), static_cast<double>(r.hi));
  plot_->xAxis->setRange(plot_->xAxis2->range());
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::updateVerticalRange() {
  if (exporting_) return;
  const int visible = plot_->axisRect()->height();
  const int max_scroll = std::max(0, content_height_ - visible);
  vscroll_->blockSignals(true);
  vscroll_->setRange(0, max_scroll);
  vscroll_->setPageStep(std::max(1, visible));
  vscroll_->setSingleStep(24);
  vscroll_->blockSignals(false);
  vscroll_->setVisible(max_scroll > 0);
  const double top = vscroll_->value();
  plot_->yAxis->setRange(top, top + std::max(1, visible));
}

LanePlottable* TimelineView::laneAt(double y) const {
  const double v = plot_->yAxis->pixelToCoord(y);
  for (auto* l : lanes_)
    if (v >= l->top() && v < l->bottom()) return l;
  return nullptr;
}

TimeNs TimelineView::timeAt(double x) const {
  return static_cast<TimeNs>(std::llround(plot_->xAxis2->pixelToCoord(x)));
}

void TimelineView::zoomBy(double factor, TimeNs anchor) {
  const auto run = session_->current();
  if (!run) return;
  const TimeRange r = session_->viewRange();
  const double width = static_cast<double>(r.length());
  const TimeNs span = run->timeline.extent_hi - run->timeline.extent_lo;
  const double new_width = std::clamp(width * factor, static_cast<double>(kMinRange),
                                      std::max<double>(kMinRange, 2.0 * static_cast<double>(span)));
  const double t = std::clamp(static_cast<double>(anchor - r.lo) / width, 0.0, 1.0);
  const auto lo = static_cast<TimeNs>(std::llround(static_cast<double>(anchor) - t * new_width));
  session_->setViewRange({lo, lo + static_cast<TimeNs>(std::llround(new_width))});
}

void TimelineView::panBy(double fraction) {
  const TimeRange r = session_->viewRange();
  const auto delta = static_cast<TimeNs>(std::llround(fraction * static_cast<double>(r.length())));
  session_->setViewRange({r.lo + delta, r.hi + delta});
}

void TimelineView::fit() {
  const auto run = session_->current();
  if (!run) return;
  if (const auto& sel = session_->selection(); sel && sel->length() > 0) {
    session_->setViewRange(*sel);
    return;
  }
  const auto& t = run->timeline;
  const TimeNs pad = std::max<TimeNs>(1, (t.extent_hi - t.extent_lo) / 100);
  session_->setViewRange({t.extent_lo - pad, t.extent_hi + pad});
}

void TimelineView::handleKey(int key) {
  const QPoint cursor = plot_->mapFromGlobal(QCursor::pos());
  const bool inside = plot_->axisRect()->rect().contains(cursor);
  const TimeRange r = session_->viewRange();
  const TimeNs anchor = inside ? timeAt(cursor.x()) : r.lo + r.length() / 2;
  switch (key) {
    case Qt::Key_W:
      zoomBy(kKeyZoom, anchor);
      break;
    case Qt::Key_S:
      zoomBy(1.0 / kKeyZoom, anchor);
      break;
    case Qt::Key_A:
      panBy(-kKeyPan);
      break;
    case Qt::Key_D:
      panBy(kKeyPan);
      break;
    case Qt::Key_F:
      fit();
      break;
    case Qt::Key_Escape:
      session_->setSelection(std::nullopt);
      session_->selectBucket(std::nullopt);
      session_->selectEvent(std::nullopt);
      break;
    default:
      break;
  }
}

QString TimelineView::selectionText() const {
  const auto& sel = session_->selection();
  if (!sel) return {};
  QString text = QStringLiteral("%1").arg(formatTime(sel->length()));
  const auto overlap = session_->selectionOverlap();
  const auto run = session_->current();
  for (std::size_t i = 0; i < overlap.size(); ++i) {
    const QString who =
        overlap.size() > 1 ? QStringLiteral("rank %1 ").arg(run->run.ranks[i].rank) : QString();
    text += QStringLiteral(" · %1overlap %2").arg(who, formatPct(overlap[i], 1));
    if (i == 3 && overlap.size() > 4) {
      text += QStringLiteral(" …");
      break;
    }
  }
  return text;
}

void TimelineView::updateSelectionItems() {
  const auto& sel = session_->selection();
  selection_rect_->setVisible(sel.has_value());
  selection_label_->setVisible(sel.has_value());
  if (sel) {
    selection_rect_->topLeft->setCoords(static_cast<double>(sel->lo), -1e7);
    selection_rect_->bottomRight->setCoords(static_cast<double>(sel->hi), 1e7);
    selection_label_->position->setCoords(static_cast<double>(sel->lo + sel->length() / 2), 0.0);
    const QString text = selectionText();
    selection_label_->setText(text);
    emit statusMessage(QStringLiteral("selection ") + text);
  } else {
    emit statusMessage(QString());
  }
  plot_->layer("marks")->replot();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

const LanePlottable* TimelineView::laneShowing(std::int32_t rank_index, std::int32_t track,
                                               std::uint32_t index) const {
  if (!run_ || rank_index < 0 || static_cast<std::size_t>(rank_index) >= run_->run.ranks.size())
    return nullptr;
  const auto& rank = run_->run.ranks[static_cast<std::size_t>(rank_index)];
  if (track < 0 || static_cast<std::size_t>(track) >= rank.tracks.size() ||
      index >= rank.tracks[static_cast<std::size_t>(track)].size())
    return nullptr;
  const Lane* lane = laneOfEvent(run_->timeline, rank, rank_index, track, index);
  if (!lane) return nullptr;
  for (const auto* l : lanes_)
    if (&l->lane() == lane) return l;
  return nullptr;
}

void TimelineView::updateEventItem() {
  updateCollectiveItems();
  const auto& ref = session_->selectedEvent();
  event_rect_->setVisible(false);
  if (run_ && ref) {
    if (const LanePlottable* l = laneShowing(ref->rank_index, ref->track, ref->index)) {
      const auto& t = run_->run.ranks[static_cast<std::size_t>(ref->rank_index)]
                          .tracks[static_cast<std::size_t>(ref->track)];
      event_rect_->topLeft->setCoords(static_cast<double>(t.start[ref->index]), l->top() + 1);
      event_rect_->bottomRight->setCoords(static_cast<double>(t.end(ref->index)), l->bottom() - 1);
      event_rect_->setVisible(true);
    }
  }
  updateFlowItems();
  updateKeptRows();
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

namespace {
// The launch flow of a selected event: the first GPU work a host call launched, or the call that
// launched a GPU event.
std::optional<TimelineView::FlowMark> flowOf(const LoadedRun& run, const EventRef& ref) {
  const auto r = static_cast<std::size_t>(ref.rank_index);
  if (r >= run.timeline.launches.size()) return std::nullopt;
  const auto& t = run.run.ranks[r].tracks[static_cast<std::size_t>(ref.track)];
  const auto& rank = run.run.ranks[r];
  const auto& links = run.timeline.launches[r];
  if (t.kind == trace::TrackKind::Host) {
    const auto launched = links.launchesOf(rank, t.correlation[ref.index], ref.track, ref.index);
    if (launched.empty()) return std::nullopt;
    const auto& l = launched.front();
    return TimelineView::FlowMark{ref.rank_index, l.host_track, l.gpu_track, l.host_index,
                                  l.gpu_index};
  }
  for (const auto& l : links.links(rank, t.correlation[ref.index])) {
    if (l.gpu_track == ref.track && l.gpu_index == ref.index)
      return TimelineView::FlowMark{ref.rank_index, l.host_track, l.gpu_track, l.host_index,
                                    l.gpu_index};
  }
  return std::nullopt;
}
}  // namespace

void TimelineView::revealSelectedEvent() {
  const auto& ref = session_->selectedEvent();
  if (!run_ || !ref) return;
  const auto& rank = run_->run.ranks[static_cast<std::size_t>(ref->rank_index)];
  std::vector<std::pair<std::int32_t, std::uint32_t>> events{{ref->track, ref->index}};
  const auto flow = flowOf(*run_, *ref);
  if (flow) {
    events.emplace_back(flow->host_track, flow->host_index);
    events.emplace_back(flow->gpu_track, flow->gpu_index);
  }
  bool changed = false;
  TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  for (const auto& [track, index] : events) {
    const auto& t = rank.tracks[static_cast<std::size_t>(track)];
    lo = std::min(lo, t.start[index]);
    hi = std::max(hi, t.end(index));
    const Lane* lane = laneOfEvent(run_->timeline, rank, ref->rank_index, track, index);
    if (lane && !laneShown(*lane)) {
      expanded_.insert({ref->rank_index, track});
      changed = true;
    }
    // A hidden lane holding it is shown again, as a closed thread is opened.
    if (lane && hidden_.erase(static_cast<std::size_t>(lane - run_->timeline.lanes.data())) > 0)
      changed = true;
  }
  if (changed) {
    relayout();
    updateBucketItems();
  }
  if (flow) {
    // The other end's lane scrolled into view (the clicked one is on screen already).
    const bool host_selected = ref->track == flow->host_track;
    revealLane(host_selected ? laneShowing(ref->rank_index, flow->gpu_track, flow->gpu_index)
                             : laneShowing(ref->rank_index, flow->host_track, flow->host_index));
  }
  if (flow) {  // both ends in view
    const TimeRange r = session_->viewRange();
    if (lo < r.lo || hi > r.hi) {
      const TimeNs pad = std::max<TimeNs>((hi - lo) / 2, 1000);
      session_->setViewRange({std::min(r.lo, lo - pad), std::max(r.hi, hi + pad)});
    }
  }
}

void TimelineView::updateFlowItems() {
  for (auto* item : flow_items_)
    plot_->removeItem(item);
  flow_items_.clear();
  flow_mark_.reset();
  const auto& ref = session_->selectedEvent();
  if (!run_ || !ref) return;
  flow_mark_ = flowOf(*run_, *ref);
  if (!flow_mark_) return;
  const auto& rank = run_->run.ranks[static_cast<std::size_t>(ref->rank_index)];
  const auto& host = rank.tracks[static_cast<std::size_t>(flow_mark_->host_track)];
  const auto& gpu = rank.tracks[static_cast<std::size_t>(flow_mark_->gpu_track)];
  const LanePlottable* from =
      laneShowing(ref->rank_index, flow_mark_->host_track, flow_mark_->host_index);
  const LanePlottable* to =
      laneShowing(ref->rank_index, flow_mark_->gpu_track, flow_mark_->gpu_index);
  const bool host_selected = ref->track == flow_mark_->host_track;
  // The other end outlined like the selected one.
  const LanePlottable* other = host_selected ? to : from;
  if (other) {
    const auto& t = host_selected ? gpu : host;
    const auto i = host_selected ? flow_mark_->gpu_index : flow_mark_->host_index;
    auto* r = new QCPItemRect(plot_);
    r->setLayer("marks");
    r->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
    r->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
    r->topLeft->setCoords(static_cast<double>(t.start[i]), other->top() + 1);
    r->bottomRight->setCoords(static_cast<double>(t.end(i)), other->bottom() - 1);
    r->setPen(QPen(colours::kSelection, 2));
    r->setBrush(Qt::NoBrush);
    flow_items_.push_back(r);
  }
  if (from && to) {
    auto* line = new QCPItemLine(plot_);
    line->setLayer("marks");
    line->start->setAxes(plot_->xAxis2, plot_->yAxis);
    line->end->setAxes(plot_->xAxis2, plot_->yAxis);
    line->start->setCoords(static_cast<double>(host.start[flow_mark_->host_index]),
                           (from->top() + from->bottom()) / 2);
    line->end->setCoords(static_cast<double>(gpu.start[flow_mark_->gpu_index]),
                         (to->top() + to->bottom()) / 2);
    line->setPen(QPen(colours::kSelection, 1.5));
    line->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 8, 10));
    line->setTail(QCPLineEnding(QCPLineEnding::esDisc, 5, 5));
    flow_items_.push_back(line);
  }
}

void TimelineView::updateCollectiveItems() {
  for (auto* item : collective_items_)
    plot_->removeItem(item);
  collective_items_.clear();
  collective_marks_.clear();
  const auto& ref = session_->selectedEvent();
  if (!run_ || !ref) return;
  const std::int32_t j =
      matchedCollectiveOf(run_->timeline, ref->rank_index, ref->track, ref->index);
  if (j < 0) return;
  // The same collective on every rank that takes part: the analysis's kernel of each.
  const auto& mc = run_->report.matched[static_cast<std::size_t>(j)];
  for (std::size_t r = 0; r < mc.events.size() && r < run_->run.ranks.size(); ++r) {
    if (!mc.involves(r)) continue;
    const auto track = mc.events[r].track;
    const auto index = static_cast<std::uint32_t>(mc.events[r].row);
    collective_marks_.push_back({static_cast<std::int32_t>(r), track, index});
    const LanePlottable* lane = streamLane(static_cast<std::int32_t>(r), track);
    if (!lane) continue;
    const auto& t = run_->run.ranks[r].tracks[static_cast<std::size_t>(track)];
    auto* box = new QCPItemRect(plot_);
    box->setLayer("marks");
    box->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
    box->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
    box->topLeft->setCoords(static_cast<double>(t.start[index]), lane->top() + 1);
    box->bottomRight->setCoords(static_cast<double>(t.end(index)), lane->bottom() - 1);
    // The late rank's kernel solid, the others dashed: who the others waited for.
    const bool late = run_->run.ranks[r].rank == mc.last_rank;
    box->setPen(
        QPen(colours::kMatchedOutline, late ? 2.5 : 1.5, late ? Qt::SolidLine : Qt::DashLine));
    box->setBrush(Qt::NoBrush);
    collective_items_.push_back(box);
  }
  emit statusMessage(
      tr("%1 %2 on %3 ranks: skew %4%5")
          .arg(QString::fromUtf8(analysis::collectiveKindName(mc.kind).data()))
          .arg(mc.seq >= 0 ? tr("sequence %1").arg(mc.seq) : QStringLiteral("#%1").arg(mc.index))
          .arg(collective_marks_.size())
          .arg(formatTime(mc.skew_ns))
          .arg(mc.last_rank < 0 ? QString() : tr(", rank %1 arrived last").arg(mc.last_rank)));
}

void TimelineView::updateBucketItems() {
  for (auto* item : bucket_items_)
    plot_->removeItem(item);
  bucket_items_.clear();
  const auto& key = session_->selectedBucket();
  if (!run_ || !key) {
    plot_->replot(QCustomPlot::rpQueuedReplot);
    return;
  }
  const auto& rr = run_->report.ranks[static_cast<std::size_t>(key->rank_index)];
  const auto& b = rr.buckets[static_cast<std::size_t>(key->report_index)];
  const auto& rank = run_->run.ranks[static_cast<std::size_t>(key->rank_index)];
  const BucketLanes lanes = findBucketLanes(lanes_, *key, b);
  addOutline(lanes.bucket, std::min(b.ready_ns, b.start_ns), b.end_ns);
  addOutline(lanes.comm, b.start_ns, b.end_ns);
  const Consumer consumer = findConsumer(rank, lanes.compute, b.end_ns);
  if (consumer.start >= 0) addOutline(lanes.compute, consumer.kernel_lo, consumer.kernel_hi);
  addFlow(lanes.compute, b.ready_ns, lanes.comm, b.start_ns);
  if (consumer.start >= 0) addFlow(lanes.comm, b.end_ns, lanes.compute, consumer.start);
  revealBucket(lanes.bucket, std::min(b.ready_ns, b.start_ns), std::max(b.end_ns, consumer.start));
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

void TimelineView::addOutline(const LanePlottable* lane, TimeNs lo, TimeNs hi) {
  if (!lane) return;
  auto* r = new QCPItemRect(plot_);
  r->setLayer("marks");
  r->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
  r->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
  r->topLeft->setCoords(static_cast<double>(lo), lane->top() + 1);
  r->bottomRight->setCoords(static_cast<double>(hi), lane->bottom() - 1);
  r->setPen(QPen(colours::kSelection, 2));
  r->setBrush(Qt::NoBrush);
  bucket_items_.push_back(r);
}

void TimelineView::addFlow(const LanePlottable* from, TimeNs t0, const LanePlottable* to,
                           TimeNs t1) {
  if (!from || !to) return;
  auto* line = new QCPItemLine(plot_);
  line->setLayer("marks");
  line->start->setAxes(plot_->xAxis2, plot_->yAxis);
  line->end->setAxes(plot_->xAxis2, plot_->yAxis);
  line->start->setCoords(static_cast<double>(t0), (from->top() + from->bottom()) / 2);
  line->end->setCoords(static_cast<double>(t1), (to->top() + to->bottom()) / 2);
  line->setPen(QPen(colours::kSelection, 1.5));
  line->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 8, 10));
  line->setTail(QCPLineEnding(QCPLineEnding::esDisc, 5, 5));
  bucket_items_.push_back(line);
}

void TimelineView::revealBucket(const LanePlottable* bucket_lane, TimeNs lo, TimeNs hi) {
  const TimeRange r = session_->viewRange();
  if (lo < r.lo || hi > r.hi) {
    const TimeNs pad = std::max<TimeNs>((hi - lo) / 2, 1000);
    session_->setViewRange({lo - pad, hi + pad});
  }
  if (bucket_lane && !exporting_) {
    const int visible = plot_->axisRect()->height();
    if (bucket_lane->top() < vscroll_->value() ||
        bucket_lane->bottom() > vscroll_->value() + visible)
      vscroll_->setValue(static_cast<int>(bucket_lane->top()) - 20);
  }
}

QString TimelineView::hoverText(const QPointF& pos) const {
  if (!run_ || !plot_->axisRect()->rect().contains(pos.toPoint())) return {};
  LanePlottable* lp = laneAt(pos.y());
  if (!lp) return {};
  const DrawBox* box = lp->boxAt(pos.x());
  if (!box) return {};
  std::optional<double> busy;
  if (!drawnWhole(*box)) {
    const auto& occ = lp->occupancy();
    double sum = 0;
    for (int x = box->x0; x < box->x1 && x < static_cast<int>(occ.size()); ++x)
      sum += occ[static_cast<std::size_t>(x)];
    busy = sum / std::max(1, box->x1 - box->x0);
  }
  return laneBoxTooltip(*run_, lp->lane(), *box, busy);
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  if (watched != plot_) return QWidget::eventFilter(watched, event);
  switch (event->type()) {
    case QEvent::KeyPress:
      return onKeyPress(static_cast<QKeyEvent*>(event));
    case QEvent::Wheel:
      return onWheel(static_cast<QWheelEvent*>(event));
    case QEvent::MouseButtonPress:
      return onMousePress(static_cast<QMouseEvent*>(event));
    case QEvent::MouseMove:
      return onMouseMove(static_cast<QMouseEvent*>(event));
    case QEvent::MouseButtonRelease:
      return onMouseRelease(static_cast<QMouseEvent*>(event));
    case QEvent::MouseButtonDblClick:
      return onDoubleClick(static_cast<QMouseEvent*>(event));
    case QEvent::Leave:
      QToolTip::hideText();
      return false;
    default:
      return false;
  }
}

bool TimelineView::onKeyPress(QKeyEvent* k) {
  if (k->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)) return false;
  static const int kKeys[] = {Qt::Key_W, Qt::Key_A, Qt::Key_S,
                              Qt::Key_D, Qt::Key_F, Qt::Key_Escape};
  if (std::find(std::begin(kKeys), std::end(kKeys), k->key()) == std::end(kKeys)) return false;
  handleKey(k->key());
  return true;
}

bool TimelineView::onWheel(QWheelEvent* w) {
  const double steps = w->angleDelta().y() / 120.0;
  if (w->modifiers() & Qt::ShiftModifier) {
    vscroll_->setValue(vscroll_->value() - static_cast<int>(steps * 48));
  } else if (steps != 0) {
    zoomBy(std::pow(0.85, steps), timeAt(w->position().x()));
  }
  return true;
}

bool TimelineView::onMousePress(QMouseEvent* m) {
  if (m->button() == Qt::RightButton && run_) {
    std::unique_ptr<QMenu> menu(laneMenu(laneAt(m->position().y()), this));
    menu->exec(m->globalPosition().toPoint());
    return true;
  }
  if (m->button() != Qt::LeftButton) return false;
  plot_->setFocus();
  // A click on a host thread's label opens or closes its rows.
  if (m->position().x() < plot_->axisRect()->left()) {
    if (const LanePlottable* lp = laneAt(m->position().y());
        lp && lp->lane().kind == LaneKind::Host && lp->lane().depth == 0 && lp->lane().rows > 1) {
      const Lane& lane = lp->lane();
      setHostGroupExpanded(lane.rank_index, lane.track,
                           !hostGroupExpanded(lane.rank_index, lane.track));
      return true;
    }
  }
  press_pos_ = m->position().toPoint();
  press_range_ = session_->viewRange();
  press_scroll_ = vscroll_->value();
  moved_ = false;
  if (m->modifiers() & Qt::ShiftModifier) {
    drag_ = Drag::Select;
    select_anchor_ = timeAt(press_pos_.x());
  } else {
    drag_ = Drag::Pan;
    setCursor(Qt::ClosedHandCursor);
  }
  return true;
}

bool TimelineView::onMouseMove(QMouseEvent* m) {
  const QPoint p = m->position().toPoint();
  if (drag_ == Drag::None) {
    const QString text = hoverText(p);
    if (text.isEmpty()) {
      QToolTip::hideText();
    } else {
      QToolTip::showText(m->globalPosition().toPoint() + QPoint(12, 12), text, plot_);
    }
    return false;
  }
  if ((p - press_pos_).manhattanLength() > 3) moved_ = true;
  if (drag_ == Drag::Pan) {
    const double ns_per_px =
        static_cast<double>(press_range_.length()) / std::max(1, plot_->axisRect()->width());
    const auto dt = static_cast<TimeNs>(std::llround((p.x() - press_pos_.x()) * ns_per_px));
    session_->setViewRange({press_range_.lo - dt, press_range_.hi - dt});
    vscroll_->setValue(press_scroll_ - (p.y() - press_pos_.y()));
  } else if (drag_ == Drag::Select && moved_) {
    session_->setSelection(TimeRange{std::min(select_anchor_, timeAt(p.x())),
                                     std::max(select_anchor_, timeAt(p.x()))});
  }
  return true;
}

bool TimelineView::onMouseRelease(QMouseEvent* m) {
  if (m->button() != Qt::LeftButton || drag_ == Drag::None) return false;
  unsetCursor();
  const Drag was = drag_;
  drag_ = Drag::None;
  if (!moved_ && was == Drag::Pan) selectAt(m->position());
  return true;
}

void TimelineView::selectAt(const QPointF& pos) {
  // A click: select the bucket or the kernel under the cursor, or clear.
  LanePlottable* lp = laneAt(pos.y());
  const DrawBox* box = lp ? lp->boxAt(pos.x()) : nullptr;
  if (lp && box && lp->lane().kind == LaneKind::Buckets) {
    session_->selectBucket(BucketKey{
        lp->lane().rank_index, static_cast<std::int32_t>(lp->lane().events.source(box->first))});
  } else if (lp && box && box->count == 1 &&
             (lp->lane().kind == LaneKind::Stream || lp->lane().kind == LaneKind::Host ||
              lp->lane().kind == LaneKind::GpuAnnotation)) {
    session_->selectEvent(
        EventRef{lp->lane().rank_index, lp->lane().track, lp->lane().events.source(box->first)});
  } else {
    session_->selectEvent(std::nullopt);
  }
}

bool TimelineView::onDoubleClick(QMouseEvent* m) {
  const auto& sel = session_->selection();
  if (sel && timeAt(m->position().x()) >= sel->lo && timeAt(m->position().x()) <= sel->hi) fit();
  return true;
}

bool TimelineView::exportImage(const QString& path, double scale, QString* error, int width) {
  return exportRendered(path, error, [&](ExportFormat format, QByteArray* out, QString* why) {
    return renderNamedRanksImage(format, scale, out, why, width);
  });
}

bool TimelineView::renderNamedRanksImage(ExportFormat format, double scale, QByteArray* out,
                                         QString* error, int width, const QString& caption) {
  // The ranks the title names, beyond the first kExportRanks: their lanes pinned above the others
  // while the figure is drawn, so that a slide shows the rank it talks about. A note is said only
  // when lanes were pinned (they may be pinned already, or hidden).
  std::vector<std::size_t> pinned;
  QStringList notes;
  if (!caption.isEmpty()) notes << caption;
  for (const auto& [index, note] : namedRanksBeyondExport()) {
    const auto lanes = pinRankLanes(index);
    if (lanes.empty()) continue;
    pinned.insert(pinned.end(), lanes.begin(), lanes.end());
    notes << note;
  }
  const bool ok = renderImage(format, scale, out, error, width, notes.join(QStringLiteral("; ")));
  unpinLanes(pinned);
  return ok;
}

std::vector<std::pair<std::int32_t, QString>> TimelineView::namedRanksBeyondExport() const {
  std::vector<std::pair<std::int32_t, QString>> out;
  if (!run_) return out;
  const auto& ranks = run_->run.ranks;
  const auto indexOf = [&](std::int32_t rank) -> std::optional<std::int32_t> {
    for (std::size_t i = kExportRanks; i < ranks.size(); ++i)
      if (ranks[i].rank == rank) return static_cast<std::int32_t>(i);
    return std::nullopt;
  };
  const auto late = analysis::summarizeStragglers(run_->report).late_rank;
  if (late)
    if (const auto i = indexOf(*late))
      out.emplace_back(*i, tr("rank %1, pinned at the top, is the late rank").arg(*late));
  const std::int32_t quiet = run_->summary.first_quiet_rank;
  if (quiet >= 0 && quiet != late.value_or(-1))
    if (const auto i = indexOf(quiet))
      out.emplace_back(*i, tr("rank %1 pinned at the top").arg(quiet));
  return out;
}

int TimelineView::exportedRanks(int* height) const {
  // A figure for a slide: the lanes of at most kExportRanks ranks (64 ranks stacked would make
  // an image five times taller than wide); the app scrolls through all of them.
  *height = content_height_;
  for (std::size_t i = pinned_shown_; i < lanes_.size(); ++i) {  // pinned lanes are above them
    const LanePlottable* lane = lanes_[i];
    if (lane->lane().rank_index >= kExportRanks) {
      *height = static_cast<int>(lane->top()) - kRankGap;
      return kExportRanks;
    }
  }
  return run_ ? static_cast<int>(run_->run.ranks.size()) : 0;
}

QString TimelineView::exportTitleText() const {
  int height = 0;
  return exportTitle(exportedRanks(&height));
}

QString TimelineView::exportTitle(int shown_ranks) const {
  // The headline numbers and the source, so that a slide says what it shows.
  if (!run_) return {};
  QString text = runTitle(*run_, true);
  // The exposed split and the late rank, as the window's headline and a digest's figure say
  // them (none for one rank: nothing was matched across ranks).
  if (const QString split = stragglerText(*run_); !split.isEmpty())
    text += QStringLiteral("\n") + split;
  if (const QString quiet = firstQuietText(run_->summary); !quiet.isEmpty())
    text += QStringLiteral("\n") + quiet;
  const auto ranks = static_cast<int>(run_->run.ranks.size());
  if (shown_ranks < ranks) {
    // Ranks beyond those shown whose lanes are pinned above them are drawn too.
    std::set<std::int32_t> pinned_beyond;
    for (const std::size_t lane : pinned_)
      if (run_->timeline.lanes[lane].rank_index >= shown_ranks)
        pinned_beyond.insert(run_->timeline.lanes[lane].rank);
    QStringList pinned;
    for (const auto r : pinned_beyond)
      pinned << QString::number(r);
    const int below = ranks - shown_ranks - static_cast<int>(pinned_beyond.size());
    text += tr("\nlanes of ranks %1–%2%3 shown%4; the numbers cover all %5")
                .arg(run_->run.ranks.front().rank)
                .arg(run_->run.ranks[static_cast<std::size_t>(shown_ranks - 1)].rank)
                .arg(pinned.isEmpty() ? QString()
                                      : tr(" and, pinned above them, of %1 %2")
                                            .arg(pinned.size() == 1 ? tr("rank") : tr("ranks"),
                                                 pinned.join(QStringLiteral(", "))))
                .arg(below > 0 ? tr(" (%1 more below them in the app)").arg(below) : QString())
                .arg(ranks);
  }
  // Zoomed in: the window shown and its own figures (analysis::windowFigures).
  const TimeRange r = session_->viewRange();
  if (r.lo > run_->timeline.extent_lo || r.hi < run_->timeline.extent_hi) {
    analysis::AnalysisOptions options;
    options.rules = run_->rules;
    text += QStringLiteral("\n") + QString::fromStdString(analysis::windowFigureText(
                                       analysis::windowFigures(run_->run, options, r.lo, r.hi)));
  }
  return text;
}

std::vector<std::size_t> TimelineView::pinRankLanes(std::int32_t rank_index) {
  std::vector<std::size_t> pinned;
  if (!run_) return pinned;
  const auto& lanes = run_->timeline.lanes;
  for (std::size_t i = 0; i < lanes.size(); ++i)
    if (lanes[i].rank_index == rank_index && lanes[i].kind != LaneKind::Host &&
        std::find(pinned_.begin(), pinned_.end(), i) == pinned_.end() && !hidden_.contains(i))
      pinned.push_back(i);
  if (pinned.empty()) return pinned;
  // As setLanePinned, laid out once for all of them.
  pinned_.insert(pinned_.end(), pinned.begin(), pinned.end());
  relayout();
  updateBucketItems();
  updateEventItem();
  return pinned;
}

void TimelineView::unpinLanes(const std::vector<std::size_t>& lanes) {
  const auto before = pinned_.size();
  pinned_.erase(std::remove_if(pinned_.begin(), pinned_.end(),
                               [&](std::size_t i) {
                                 return std::find(lanes.begin(), lanes.end(), i) != lanes.end();
                               }),
                pinned_.end());
  if (pinned_.size() == before) return;
  relayout();
  updateBucketItems();
  updateEventItem();
}

bool TimelineView::renderImage(ExportFormat format, double scale, QByteArray* out, QString* error,
                               int width, const QString& note) {
  exporting_ = true;
  const QCPRange saved_y = plot_->yAxis->range();
  const bool scroll_visible = vscroll_->isVisible();
  applyPlotTheme(plot_, PlotTheme::Light);
  int shown_height = 0;
  const int shown_ranks = exportedRanks(&shown_height);
  plot_->yAxis->setRange(0, std::max(1, shown_height));
  const int w = width > 0 ? width : std::max(plot_->width(), 1200);
  // Axis and margins around the lanes, so that lanes keep their on-screen height.
  const int chrome = std::max(0, plot_->height() - plot_->axisRect()->height());
  const int h = shown_height + std::max(chrome, 40);
  bool ok = false;
  {
    const LabelsWithoutArrows plain_labels(plot_->yAxis);
    const TitleRow title(
        plot_,
        exportTitle(shown_ranks) + (note.isEmpty() ? QString() : QStringLiteral("\n") + note), 10);
    applyPlotTheme(plot_, PlotTheme::Light);
    // Wide enough for the whole title unless the caller fixed the width.
    const int fw = width > 0 ? w : std::max(w, title.width());
    ok = renderPlot(plot_, format, fw, h + 28 * title.lines(), scale, out, error);
  }
  applyPlotTheme(plot_, PlotTheme::System);
  exporting_ = false;
  plot_->yAxis->setRange(saved_y);
  vscroll_->setVisible(scroll_visible);
  plot_->replot(QCustomPlot::rpQueuedReplot);
  return ok;
}

void TimelineView::copyToClipboard(double scale) {
  exporting_ = true;
  applyPlotTheme(plot_, PlotTheme::Light);
  const QPixmap pm = [&] {
    const LabelsWithoutArrows plain_labels(plot_->yAxis);
    return plot_->toPixmap(0, 0, scale);
  }();
  applyPlotTheme(plot_, PlotTheme::System);
  exporting_ = false;
  QApplication::clipboard()->setPixmap(pm);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace ddpscope::ui
