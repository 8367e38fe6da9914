#include "app/ui/timeline_view.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QClipboard>
#include <QHBoxLayout>
#include <QKeyEvent>
#include <QMouseEvent>
#include <QScrollBar>
#include <QToolTip>
#include <QWheelEvent>
#include <algorithm>
#include <cmath>

#include "app/analysis/classify.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/plot_export.h"

namespace ddpscope::ui {

namespace {
constexpr double kKeyZoom = 0.8;   // W zooms in to 80 % of the range, S out by the inverse
constexpr double kKeyPan = 0.2;    // A/D pan by a fifth of the range
constexpr TimeNs kMinRange = 100;  // 100 ns across the widget at the deepest zoom
constexpr int kRankGap = 10;       // pixels between the lane groups of two ranks

QString row(const QString& key, const QString& value) {
  return QStringLiteral("<tr><td style='color:#777;padding-right:8px'>%1</td><td>%2</td></tr>")
      .arg(key, value.toHtmlEscaped());
}

}  // namespace

TimelineView::TimelineView(Session* session, QWidget* parent)
    : QWidget(parent),
      session_(session),
      plot_(new QCustomPlot(this)),
      vscroll_(new QScrollBar(Qt::Vertical, this)) {
  auto* layout = new QHBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(0);
  layout->addWidget(plot_, 1);
  layout->addWidget(vscroll_);
  setFocusProxy(plot_);
  plot_->setFocusPolicy(Qt::StrongFocus);
  plot_->setMouseTracking(true);
  plot_->setNoAntialiasingOnDrag(true);
  plot_->setPlottingHint(QCP::phCacheLabels, true);
  plot_->installEventFilter(this);
  plot_->setMinimumHeight(160);

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
  applyPlotTheme(plot_, PlotTheme::System);

  plot_->addLayer("marks", plot_->layer("main"), QCustomPlot::limAbove);
  plot_->layer("marks")->setMode(QCPLayer::lmBuffered);
  selection_rect_ = new QCPItemRect(plot_);
  selection_rect_->setLayer("marks");
  selection_rect_->setClipAxisRect(plot_->axisRect());
  selection_rect_->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
  selection_rect_->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
  selection_rect_->setPen(QPen(QColor(0x33, 0x33, 0x33), 1, Qt::DashLine));
  selection_rect_->setBrush(QColor(0x56, 0xB4, 0xE9, 40));
  selection_rect_->setVisible(false);
  event_rect_ = new QCPItemRect(plot_);
  event_rect_->setLayer("marks");
  event_rect_->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
  event_rect_->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
  event_rect_->setPen(QPen(QColor(0x11, 0x11, 0x11), 2));
  event_rect_->setBrush(Qt::NoBrush);
  event_rect_->setVisible(false);
  selection_label_ = new QCPItemText(plot_);
  selection_label_->setLayer("marks");
  selection_label_->setClipToAxisRect(true);
  selection_label_->position->setTypeX(QCPItemPosition::ptPlotCoords);
  selection_label_->position->setTypeY(QCPItemPosition::ptAxisRectRatio);
  selection_label_->position->setAxes(plot_->xAxis2, plot_->yAxis);
  selection_label_->setPositionAlignment(Qt::AlignHCenter | Qt::AlignTop);
  selection_label_->setPadding(QMargins(6, 3, 6, 3));
  selection_label_->setBrush(QColor(255, 255, 255, 230));
  selection_label_->setPen(QPen(QColor(0x33, 0x33, 0x33)));
  selection_label_->setVisible(false);

  connect(plot_, &QCustomPlot::afterLayout, this, [this] { updateVerticalRange(); });
  connect(vscroll_, &QScrollBar::valueChanged, this, [this] {
    updateVerticalRange();
    plot_->replot(QCustomPlot::rpQueuedReplot);
  });
  connect(session_, &Session::currentRunChanged, this, &TimelineView::rebuild);
  connect(session_, &Session::viewRangeChanged, this, &TimelineView::applyViewRange);
  connect(session_, &Session::selectionChanged, this, &TimelineView::updateSelectionItems);
  connect(session_, &Session::bucketSelected, this, &TimelineView::updateBucketItems);
  connect(session_, &Session::eventSelected, this, &TimelineView::updateEventItem);
  rebuild();
}

void TimelineView::rebuild() {
  for (auto* item : bucket_items_)
    plot_->removeItem(item);
  bucket_items_.clear();
  for (auto* l : lanes_)
    plot_->removePlottable(l);
  lanes_.clear();
  run_ = session_->current();
  content_height_ = 0;
  QSharedPointer<QCPAxisTickerText> labels(new QCPAxisTickerText);
  if (run_) {
    double y = 0;
    for (const Lane& lane : run_->timeline.lanes) {
      const auto& rank = run_->run.ranks[static_cast<std::size_t>(lane.rank_index)];
      if (lane.kind == LaneKind::Steps && lane.rank_index > 0) y += kRankGap;  // ranks apart
      auto* p = new LanePlottable(plot_->xAxis2, plot_->yAxis, &lane, &rank, y);
      p->setShaded(lane.rank_index % 2 == 1);
      lanes_.push_back(p);
      if (!lane.label.empty())
        labels->addTick(y + lane.height / 2.0, QString::fromStdString(lane.label));
      y += lane.height;
    }
    content_height_ = static_cast<int>(y);
  }
  const bool any_stream =
      run_ && std::any_of(run_->timeline.lanes.begin(), run_->timeline.lanes.end(),
                          [](const Lane& l) { return l.kind == LaneKind::Stream; });
  QString note;
  if (!run_) {
    note = tr("No run loaded: File ▸ Open files… or Open folder…, or run the agent (Run panel)");
  } else if (!any_stream) {
    note =
        tr("No GPU activity (kernels, copies, syncs) in this trace, so no stream to show.\n"
           "Record it with CUDA activities on (PyTorch: ProfilerActivity.CUDA).");
  }
  setEmptyNote(plot_, note, {plot_->xAxis, plot_->xAxis2});
  plot_->yAxis->setTicker(labels);
  vscroll_->setValue(0);
  applyViewRange();
  updateSelectionItems();
  updateBucketItems();
  updateEventItem();
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

void TimelineView::updateEventItem() {
  const auto& ref = session_->selectedEvent();
  event_rect_->setVisible(false);
  if (run_ && ref) {
    for (auto* l : lanes_) {
      const Lane& lane = l->lane();
      if (lane.kind != LaneKind::Stream || lane.rank_index != ref->rank_index ||
          lane.track != ref->track)
        continue;
      const auto& t = run_->run.ranks[static_cast<std::size_t>(ref->rank_index)]
                          .tracks[static_cast<std::size_t>(ref->track)];
      event_rect_->topLeft->setCoords(static_cast<double>(t.start[ref->index]), l->top() + 1);
      event_rect_->bottomRight->setCoords(static_cast<double>(t.end(ref->index)), l->bottom() - 1);
      event_rect_->setVisible(true);
    }
  }
  plot_->replot(QCustomPlot::rpQueuedReplot);
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
  const LanePlottable *bucket_lane = nullptr, *comm_lane = nullptr, *compute_lane = nullptr;
  for (auto* l : lanes_) {
    const Lane& lane = l->lane();
    if (lane.rank_index != key->rank_index) continue;
    if (lane.kind == LaneKind::Buckets) {
      for (std::size_t i = 0; i < lane.events.size() && !bucket_lane; ++i)
        if (lane.events.source(i) == static_cast<std::uint32_t>(key->report_index)) bucket_lane = l;
    }
    if (lane.kind == LaneKind::Stream && lane.device == b.device && lane.stream == b.stream)
      comm_lane = l;
    if (lane.kind == LaneKind::Stream && lane.role == analysis::StreamRole::Compute &&
        !compute_lane)
      compute_lane = l;
  }
  const QPen pen(QColor(0x11, 0x11, 0x11), 2);
  auto outline = [&](const LanePlottable* lane, TimeNs lo, TimeNs hi) {
    if (!lane) return;
    auto* r = new QCPItemRect(plot_);
    r->setLayer("marks");
    r->topLeft->setAxes(plot_->xAxis2, plot_->yAxis);
    r->bottomRight->setAxes(plot_->xAxis2, plot_->yAxis);
    r->topLeft->setCoords(static_cast<double>(lo), lane->top() + 1);
    r->bottomRight->setCoords(static_cast<double>(hi), lane->bottom() - 1);
    r->setPen(pen);
    r->setBrush(Qt::NoBrush);
    bucket_items_.push_back(r);
  };
  auto arrow = [&](const LanePlottable* from, TimeNs t0, const LanePlottable* to, TimeNs t1) {
    if (!from || !to) return;
    auto* line = new QCPItemLine(plot_);
    line->setLayer("marks");
    line->start->setAxes(plot_->xAxis2, plot_->yAxis);
    line->end->setAxes(plot_->xAxis2, plot_->yAxis);
    line->start->setCoords(static_cast<double>(t0), (from->top() + from->bottom()) / 2);
    line->end->setCoords(static_cast<double>(t1), (to->top() + to->bottom()) / 2);
    line->setPen(QPen(QColor(0x11, 0x11, 0x11), 1.5));
    line->setHead(QCPLineEnding(QCPLineEnding::esSpikeArrow, 8, 10));
    line->setTail(QCPLineEnding(QCPLineEnding::esDisc, 5, 5));
    bucket_items_.push_back(line);
  };
  outline(bucket_lane, std::min(b.ready_ns, b.start_ns), b.end_ns);
  outline(comm_lane, b.start_ns, b.end_ns);
  // The consumer of the reduced gradients: the first optimizer kernel after the allreduce (or the
  // first compute kernel when none is named like one).
  TimeNs consumer = -1;
  if (compute_lane && compute_lane->lane().track >= 0) {
    const auto& t = rank.tracks[static_cast<std::size_t>(compute_lane->lane().track)];
    const auto first = static_cast<std::size_t>(
        std::lower_bound(t.start.begin(), t.start.end(), b.end_ns) - t.start.begin());
    for (std::size_t i = first; i < t.size() && i < first + 5000; ++i) {
      if (analysis::isOptimizerName(rank.names[t.name[i]])) {
        consumer = t.start[i];
        break;
      }
    }
    if (consumer < 0 && first < t.size()) consumer = t.start[first];
    if (consumer >= 0) {
      const auto it = std::upper_bound(t.start.begin(), t.start.end(), consumer);
      const auto ci = static_cast<std::size_t>(it - t.start.begin()) - 1;
      outline(compute_lane, t.start[ci], t.end(ci));
    }
  }
  arrow(compute_lane, b.ready_ns, comm_lane, b.start_ns);
  if (consumer >= 0) arrow(comm_lane, b.end_ns, compute_lane, consumer);
  // Bring the bucket into view when it is not.
  const TimeRange r = session_->viewRange();
  const TimeNs lo = std::min(b.ready_ns, b.start_ns);
  const TimeNs hi = std::max(b.end_ns, consumer);
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
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

QString TimelineView::hoverText(const QPointF& pos) const {
  if (!run_ || !plot_->axisRect()->rect().contains(pos.toPoint())) return {};
  LanePlottable* lp = laneAt(pos.y());
  if (!lp) return {};
  const DrawBox* box = lp->boxAt(pos.x());
  if (!box) return {};
  const Lane& lane = lp->lane();
  const auto& rank = run_->run.ranks[static_cast<std::size_t>(lane.rank_index)];
  const auto src = lane.events.source(box->first);
  QString html = QStringLiteral("<table>");
  if (box->count > 1) {
    // Comm kernels are split into hidden/exposed pieces: count kernels, not pieces.
    std::vector<std::uint32_t> sources;
    sources.reserve(box->count);
    for (std::size_t i = box->first; i < box->first + box->count; ++i)
      sources.push_back(lane.events.source(i));
    std::sort(sources.begin(), sources.end());
    const auto distinct = std::unique(sources.begin(), sources.end()) - sources.begin();
    const QString what =
        lane.kind == LaneKind::Stream ? QStringLiteral("kernels") : QStringLiteral("events");
    const auto n = lane.kind == LaneKind::Stream ? distinct : box->count;
    html += QStringLiteral("<b>%1 %2, Σ %3</b>").arg(n).arg(what, formatTime(box->busy_ns));
    html += row("from", formatTime(lane.events.start(box->first)));
    return html + "</table>";
  }
  const TimeNs s = lane.events.start(box->first), e = lane.events.end(box->first);
  switch (lane.kind) {
    case LaneKind::Stream: {
      const auto& t = rank.tracks[static_cast<std::size_t>(lane.track)];
      const TimeNs dur = t.dur[src];
      html = QStringLiteral("<b>%1</b><table>")
                 .arg(QString::fromStdString(rank.names[t.name[src]]).toHtmlEscaped());
      html += row("stream", QStringLiteral("%1 (%2) · gpu %3 · rank %4")
                                .arg(QString::fromStdString(analysis::streamText(lane.stream)))
                                .arg(QString::fromUtf8(analysis::streamRoleName(lane.role).data()))
                                .arg(lane.device)
                                .arg(rank.rank));
      html += row("start", formatTime(t.start[src]));
      html += row("duration", formatTime(dur));
      std::int32_t bucket = t.bucket[src];
      std::int64_t bytes = t.bytes[src];
      const auto& rr = run_->report.ranks[static_cast<std::size_t>(lane.rank_index)];
      for (const auto& b : rr.buckets) {
        if (b.device == lane.device && b.stream == lane.stream && b.start_ns == t.start[src]) {
          if (bucket == trace::kNoBucket) bucket = b.id;
          if (bytes < 0) bytes = b.bytes;
          break;
        }
      }
      if (bucket != trace::kNoBucket) html += row("bucket", QString::number(bucket));
      if (bytes >= 0) {
        html += row("bytes", formatBytes(bytes));
        const std::string& name = rank.names[t.name[src]];
        for (const auto& [label, value] : bandwidthRows(
                 bytes, dur,
                 analysis::classify(t.kind_of[src], name) == analysis::ActivityClass::Communication,
                 name, rank.world_size))
          html += row(label, value);
      }
      if (const auto st = lane.events.style(box->first);
          st == kStyleCommHidden || st == kStyleCommExposed) {
        html += row(st == kStyleCommHidden ? "hidden part" : "exposed part", formatTime(e - s));
      }
      break;
    }
    case LaneKind::Steps: {
      if (src >= rank.steps.size()) {
        html = QStringLiteral("<b>cut short</b><table>");
        html += row("from", formatTime(s));
        html += row("to", formatTime(e));
        html += row("", QStringLiteral("rank %1 stopped here before its step finished; its trace "
                                       "is incomplete")
                            .arg(rank.rank));
        break;
      }
      const auto& step = rank.steps[src];
      html = QStringLiteral("<b>step %1</b><table>").arg(step.number);
      html += row("start", formatTime(step.start));
      html += row("duration", formatTime(step.end - step.start));
      for (const auto& sr : run_->report.ranks[static_cast<std::size_t>(lane.rank_index)].steps) {
        if (sr.step != step.number) continue;
        html += row("overlap", formatPct(sr.metrics.overlap_pct));
        html += row("exposed comm", formatTime(sr.metrics.exposed_ns));
        if (sr.dp_efficiency) html += row("DP efficiency", formatPct(*sr.dp_efficiency * 100.0, 1));
      }
      break;
    }
    case LaneKind::Buckets: {
      const auto& b = run_->report.ranks[static_cast<std::size_t>(lane.rank_index)].buckets[src];
      html = QStringLiteral("<b>bucket %1</b>%2<table>")
                 .arg(b.id)
                 .arg(b.inferred ? " (inferred)" : "");
      if (b.step != trace::kNoStep) html += row("step", QString::number(b.step));
      html += row("bytes", formatBytes(b.bytes));
      if (b.tensors > 0) html += row("tensors", QString::number(b.tensors));
      html += row("ready", formatTime(b.ready_ns));
      html += row("wait", formatTime(b.wait_ns));
      html += row("allreduce", formatTime(b.end_ns - b.start_ns));
      html += row("exposed", formatTime(b.exposed_ns));
      html += row("busbw", formatBandwidth(b.busbw_gbps));
      break;
    }
    case LaneKind::Overlap: {
      const bool hidden = lane.events.style(box->first) == kStyleCommHidden;
      html = QStringLiteral("<b>communication %1</b><table>")
                 .arg(hidden ? "hidden under compute" : "exposed");
      html += row("start", formatTime(s));
      html += row("duration", formatTime(e - s));
      break;
    }
  }
  return html + "</table>";
}

bool TimelineView::eventFilter(QObject* watched, QEvent* event) {
  if (watched != plot_) return QWidget::eventFilter(watched, event);
  switch (event->type()) {
    case QEvent::KeyPress: {
      auto* k = static_cast<QKeyEvent*>(event);
      if (k->modifiers() & (Qt::ControlModifier | Qt::AltModifier | Qt::MetaModifier)) return false;
      static const int kKeys[] = {Qt::Key_W, Qt::Key_A, Qt::Key_S,
                                  Qt::Key_D, Qt::Key_F, Qt::Key_Escape};
      if (std::find(std::begin(kKeys), std::end(kKeys), k->key()) == std::end(kKeys)) return false;
      handleKey(k->key());
      return true;
    }
    case QEvent::Wheel: {
      auto* w = static_cast<QWheelEvent*>(event);
      const double steps = w->angleDelta().y() / 120.0;
      if (w->modifiers() & Qt::ShiftModifier) {
        vscroll_->setValue(vscroll_->value() - static_cast<int>(steps * 48));
      } else if (steps != 0) {
        zoomBy(std::pow(0.85, steps), timeAt(w->position().x()));
      }
      return true;
    }
    case QEvent::MouseButtonPress: {
      auto* m = static_cast<QMouseEvent*>(event);
      if (m->button() != Qt::LeftButton) return false;
      plot_->setFocus();
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
    case QEvent::MouseMove: {
      auto* m = static_cast<QMouseEvent*>(event);
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
    case QEvent::MouseButtonRelease: {
      auto* m = static_cast<QMouseEvent*>(event);
      if (m->button() != Qt::LeftButton || drag_ == Drag::None) return false;
      unsetCursor();
      const Drag was = drag_;
      drag_ = Drag::None;
      if (!moved_ && was == Drag::Pan) {
        // A click: select the bucket under the cursor, or clear.
        LanePlottable* lp = laneAt(m->position().y());
        const DrawBox* box = lp ? lp->boxAt(m->position().x()) : nullptr;
        if (lp && box && lp->lane().kind == LaneKind::Buckets) {
          session_->selectBucket(
              BucketKey{lp->lane().rank_index,
                        static_cast<std::int32_t>(lp->lane().events.source(box->first))});
        } else if (lp && box && box->count == 1 && lp->lane().kind == LaneKind::Stream) {
          session_->selectEvent(EventRef{lp->lane().rank_index, lp->lane().track,
                                         lp->lane().events.source(box->first)});
        } else {
          session_->selectEvent(std::nullopt);
        }
      }
      return true;
    }
    case QEvent::MouseButtonDblClick: {
      auto* m = static_cast<QMouseEvent*>(event);
      const auto& sel = session_->selection();
      if (sel && timeAt(m->position().x()) >= sel->lo && timeAt(m->position().x()) <= sel->hi)
        fit();
      return true;
    }
    case QEvent::Leave:
      QToolTip::hideText();
      return false;
    default:
      return false;
  }
}

bool TimelineView::exportImage(const QString& path, double scale, QString* error, int width) {
  const auto format = checkExportPath(path, error);
  if (!format) return false;
  QByteArray bytes;
  return renderImage(*format, scale, &bytes, error, width) &&
         writeFileAtomically(path, bytes, error);
}

bool TimelineView::renderImage(ExportFormat format, double scale, QByteArray* out, QString* error,
                               int width) {
  exporting_ = true;
  const QCPRange saved_y = plot_->yAxis->range();
  const bool scroll_visible = vscroll_->isVisible();
  applyPlotTheme(plot_, PlotTheme::Light);
  // A figure for a slide: the lanes of at most kExportRanks ranks (64 ranks stacked would make
  // an image five times taller than wide); the app scrolls through all of them.
  int shown_height = content_height_;
  int shown_ranks = run_ ? static_cast<int>(run_->run.ranks.size()) : 0;
  for (const LanePlottable* lane : lanes_) {
    if (lane->lane().rank_index >= kExportRanks) {
      shown_height = static_cast<int>(lane->top()) - kRankGap;
      shown_ranks = kExportRanks;
      break;
    }
  }
  plot_->yAxis->setRange(0, std::max(1, shown_height));
  const int w = width > 0 ? width : std::max(plot_->width(), 1200);
  // Axis and margins around the lanes, so that lanes keep their on-screen height.
  const int chrome = std::max(0, plot_->height() - plot_->axisRect()->height());
  const int h = shown_height + std::max(chrome, 40);
  // A title with the headline numbers and the source, so that a slide says what it shows.
  QCPTextElement* title = nullptr;
  if (run_) {
    QString text = runTitle(*run_);
    const auto ranks = static_cast<int>(run_->run.ranks.size());
    if (shown_ranks < ranks) {
      text += tr("\nlanes of ranks %1–%2 shown (%3 more below them in the app); the numbers "
                 "cover all %4")
                  .arg(run_->run.ranks.front().rank)
                  .arg(run_->run.ranks[static_cast<std::size_t>(shown_ranks - 1)].rank)
                  .arg(ranks - shown_ranks)
                  .arg(ranks);
    }
    title = new QCPTextElement(plot_, text, QFont(font().family(), 10, QFont::Bold));
    plot_->plotLayout()->insertRow(0);
    plot_->plotLayout()->addElement(0, 0, title);
  }
  applyPlotTheme(plot_, PlotTheme::Light);
  const int title_height = title ? 28 * (1 + static_cast<int>(title->text().count('\n'))) : 0;
  const bool ok = renderPlot(plot_, format, w, h + title_height, scale, out, error);
  if (title) {
    plot_->plotLayout()->remove(title);
    plot_->plotLayout()->simplify();
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
  const QPixmap pm = plot_->toPixmap(0, 0, scale);
  applyPlotTheme(plot_, PlotTheme::System);
  exporting_ = false;
  QApplication::clipboard()->setPixmap(pm);
  plot_->replot(QCustomPlot::rpQueuedReplot);
}

}  // namespace ddpscope::ui
