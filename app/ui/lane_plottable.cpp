#include "app/ui/lane_plottable.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "app/ui/host_lanes.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"

namespace ddpscope::ui {

LanePlottable::LanePlottable(QCPAxis* key_axis, QCPAxis* value_axis, const Lane* lane,
                             const trace::RankTrace* rank, double top)
    : QCPAbstractPlottable(key_axis, value_axis), lane_(lane), rank_(rank), top_(top) {
  setAntialiased(false);
  setAntialiasedFill(false);
  setSelectable(QCP::stNone);
}

ViewWindow LanePlottable::currentWindow() const {
  const QCPRange r = keyAxis()->range();
  return {static_cast<TimeNs>(std::llround(r.lower)), static_cast<TimeNs>(std::llround(r.upper)),
          keyAxis()->axisRect()->width()};
}

const std::vector<DrawBox>& LanePlottable::drawList() const {
  const ViewWindow w = currentWindow();
  if (!(w == cached_window_)) {
    cache_ = buildDrawList(lane_->events, w, 3, &occupancy_);
    cached_window_ = w;
  }
  return cache_;
}

const std::vector<float>& LanePlottable::occupancy() const {
  drawList();
  return occupancy_;
}

const std::vector<DrawBox>& LanePlottable::matchList() const {
  static const std::vector<DrawBox> kNone;
  if (!matches_) return kNone;
  const ViewWindow w = currentWindow();
  if (!(w == match_window_)) {
    match_cache_ = buildDrawList(*matches_, w);
    match_window_ = w;
  }
  return match_cache_;
}

int LanePlottable::hiddenFromDepth() const {
  if (lane_->kind != LaneKind::Host) return lane_->rows;
  const ViewWindow w = currentWindow();
  if (!(w == hidden_window_)) {
    // The thread's rows are consecutive in the model, its depth-0 row first.
    const Lane* first = lane_ - lane_->depth;
    hidden_from_ = std::max(firstHiddenHostRow(first, first->rows, w),
                            std::min<int>(kept_depth_ + 1, first->rows));
    hidden_window_ = w;
  }
  return hidden_from_;
}

bool LanePlottable::hiddenAtZoom() const {
  return lane_->kind == LaneKind::Host && lane_->depth > 0 && lane_->depth >= hiddenFromDepth();
}

const DrawBox* LanePlottable::boxAt(double pixel_x) const {
  if (hiddenAtZoom()) return nullptr;
  const int x = static_cast<int>(std::floor(pixel_x)) - keyAxis()->axisRect()->left();
  const auto& boxes = drawList();
  const DrawBox* found = boxAtColumn(boxes, x);
  // A sync band over a kernel: the kernel, which fills the lane below the band.
  if (found && found->style == kStyleSync && drawnWhole(*found)) {
    for (const DrawBox& b : boxes) {
      if (b.x0 > x) break;
      if (x < b.x1 && &b != found && b.style != kStyleSync) return &b;
    }
  }
  return found;
}

QCPRange LanePlottable::getKeyRange(bool& found, QCP::SignDomain) const {
  found = lane_->events.size() > 0;
  if (!found) return {};
  return {static_cast<double>(lane_->events.start(0)), static_cast<double>(lane_->events.maxEnd())};
}

QCPRange LanePlottable::getValueRange(bool& found, QCP::SignDomain, const QCPRange&) const {
  found = true;
  return {top_, bottom()};
}

QString LanePlottable::boxLabel(const DrawBox& box) const {
  const auto i = box.first;
  const auto src = lane_->events.source(i);
  switch (lane_->kind) {
    case LaneKind::Steps:
      if (box.count == 1 && src == rank_->steps.size()) return QStringLiteral("cut short");
      return box.count == 1 && src < rank_->steps.size()
                 ? QStringLiteral("step %1").arg(rank_->steps[src].number)
                 : QString();
    case LaneKind::Stream:
    case LaneKind::Host:
    case LaneKind::GpuAnnotation: {
      if (box.count != 1 || lane_->track < 0) return {};
      const auto& t = rank_->tracks[static_cast<std::size_t>(lane_->track)];
      return QString::fromStdString(rank_->names[t.name[src]]);
    }
    default:
      return {};
  }
}

int columnHeight(const std::vector<float>& occupancy, int x, int box_h) {
  const float f = x >= 0 && static_cast<std::size_t>(x) < occupancy.size()
                      ? occupancy[static_cast<std::size_t>(x)]
                      : 1.0f;
  return std::clamp(static_cast<int>(std::lround(f * static_cast<float>(box_h))), 1, box_h);
}

void LanePlottable::draw(QCPPainter* painter) {
  const QCPAxisRect* rect = keyAxis()->axisRect();
  const int left = rect->left();
  const double y0 = valueAxis()->coordToPixel(top_);
  const double y1 = valueAxis()->coordToPixel(bottom());
  const int top_px = static_cast<int>(std::lround(std::min(y0, y1)));
  const int lane_h = static_cast<int>(std::lround(std::fabs(y1 - y0)));
  if (top_px + lane_h < rect->top() || top_px > rect->bottom()) return;
  if (shaded_) painter->fillRect(QRect(left, top_px, rect->width(), lane_h), colours::kLaneShade);
  if (rule_above_) {
    // A rule between ranks, in the gap above this rank's first lane.
    painter->fillRect(QRect(left, top_px - 5, rect->width(), 1), colours::kRankRule);
  }
  const int pad = lane_h >= 16 ? 3 : lane_h >= 10 ? 1 : 0;
  if (hiddenAtZoom()) {
    // A coarse zoom: the first hidden row says so, the rows below it stay empty.
    if (lane_->depth == hiddenFromDepth()) {
      const Lane* first = lane_ - lane_->depth;
      const int n = first->rows - lane_->depth;
      painter->save();
      QFont f = painter->font();
      f.setItalic(true);
      painter->setFont(f);
      painter->setPen(colours::kLabelGrey);
      // A figure being exported (QCustomPlot paints those without its caches) cannot be
      // zoomed: no advice to.
      const bool figure = painter->modes().testFlag(QCPPainter::pmNoCaching);
      QString text = n == 1 ? QObject::tr(
                                  "1 deeper level hidden at this zoom: every range in "
                                  "it is under a pixel wide")
                            : QObject::tr(
                                  "%1 deeper levels hidden at this zoom: every range in "
                                  "them is under a pixel wide")
                                  .arg(n);
      if (!figure)
        text +=
            n == 1 ? QObject::tr(" (zoom in to see it)") : QObject::tr(" (zoom in to see them)");
      painter->drawText(QRect(left + 6, top_px, rect->width() - 12, lane_h),
                        Qt::AlignVCenter | Qt::AlignLeft, text);
      painter->restore();
    }
    drawMatches(painter, left, top_px, lane_h);
    return;
  }
  const int box_top = top_px + pad;
  const int box_h = std::max(1, lane_h - 2 * pad);
  painter->setAntialiasing(false);
  QColor fills[kStyleCount];
  for (int s = 0; s < kStyleCount; ++s)
    fills[s] = styleColour(static_cast<std::uint16_t>(s));
  const auto& boxes = drawList();
  const auto& occ = occupancy_;
  // Names in the boxes: a font whose line (descenders included) fits the lane, so that a thin
  // host row does not cut the bottom of "_", "g" or "p".
  const QFont lane_font = painter->font();
  QFont name_font = lane_font;
  if (QFontMetrics(name_font).height() > lane_h) {
    int px = std::max(7, lane_h - 2);
    name_font.setPixelSize(px);
    while (px > 7 && QFontMetrics(name_font).height() > lane_h)
      name_font.setPixelSize(--px);
  }
  const QFontMetrics fm(name_font);
  // Communication not hidden under compute: its collective's colour over a band of the exposed
  // colour along the bottom.
  const int band = std::max(2, box_h / 4);
  // A synchronisation record drawn whole is a wait (the host's, or the stream's for an event), not
  // work: a band along the top of the lane, painted after the rest, so that a kernel it lies over
  // stays visible and a kernel starting inside it does not hide it.
  const int sync_band = std::max(2, box_h / 4);
  const auto isSyncBand = [](const DrawBox& b) { return b.style == kStyleSync && drawnWhole(b); };
  for (const DrawBox& b : boxes) {
    const QColor& c = fills[std::min<int>(b.style, kStyleCount - 1)];
    if (isSyncBand(b)) continue;
    const bool exposed_band = isCommKindStyle(b.style) && isExposedCommStyle(b.style);
    if (drawnWhole(b)) {
      painter->fillRect(QRect(left + b.x0, box_top, b.x1 - b.x0, box_h), c);
      if (exposed_band)
        painter->fillRect(QRect(left + b.x0, box_top + box_h - band, b.x1 - b.x0, band),
                          colours::kCommExposed);
      continue;
    }
    // Merged events, column by column: each column as high as it is busy (at least a pixel, so
    // that no event disappears), from the bottom of the lane; runs of equal height in one rect.
    int x = b.x0;
    while (x < b.x1) {
      const int h = columnHeight(occ, x, box_h);
      int x_end = x + 1;
      while (x_end < b.x1 && columnHeight(occ, x_end, box_h) == h)
        ++x_end;
      painter->fillRect(QRect(left + x, box_top + box_h - h, x_end - x, h), c);
      if (exposed_band) {
        const int bh = std::min(h, band);
        painter->fillRect(QRect(left + x, box_top + box_h - bh, x_end - x, bh),
                          colours::kCommExposed);
      }
      x = x_end;
    }
  }
  for (const DrawBox& b : boxes)
    if (isSyncBand(b))
      painter->fillRect(QRect(left + b.x0, box_top, b.x1 - b.x0, sync_band), fills[kStyleSync]);
  // Edges and names only where there is room: a darker right edge separates back-to-back events.
  for (const DrawBox& b : boxes) {
    const int w = b.x1 - b.x0;
    if (w < 6 || b.count != 1 || isSyncBand(b)) continue;
    const QColor& c = fills[std::min<int>(b.style, kStyleCount - 1)];
    painter->fillRect(QRect(left + b.x1 - 1, box_top, 1, box_h), c.darker(140));
    if (w < 40 || box_h < 10) continue;
    const QString label = boxLabel(b);
    if (label.isEmpty()) continue;
    painter->setPen(textOn(c));
    painter->setFont(name_font);
    // Centred on the lane, not clipped to the box: the line may reach into the lane's padding.
    const QRect text_rect(left + b.x0 + 3, top_px, w - 6, lane_h);
    painter->drawText(text_rect, Qt::AlignVCenter | Qt::AlignLeft | Qt::TextDontClip,
                      fm.elidedText(label, Qt::ElideRight, text_rect.width()));
  }
  painter->setFont(lane_font);
  drawMatches(painter, left, top_px, lane_h);
}

void LanePlottable::drawMatches(QCPPainter* painter, int left, int top_px, int lane_h) const {
  // Search matches: an outline around each (merged where they are closer than a few pixels),
  // at least 3 px wide so that a sub-pixel kernel is found at any zoom.
  if (matches_) {
    painter->setPen(QPen(colours::kSearchMatch, 2));
    painter->setBrush(Qt::NoBrush);
    for (const DrawBox& b : matchList()) {
      const int x0 = left + b.x0 - (b.x1 - b.x0 < 3 ? 1 : 0);
      const int w = std::max(3, b.x1 - b.x0);
      painter->drawRect(QRect(x0, top_px + 1, w, std::max(2, lane_h - 2)));
    }
  }
}

void fillLaneLegend(QCPLegend* legend, const std::vector<const TimelineModel*>& timelines) {
  legend->clearItems();
  bool compute = false, memory = false, sync = false;
  std::vector<analysis::CollectiveKind> kinds;
  std::vector<std::uint8_t> host_styles;
  for (const TimelineModel* t : timelines) {
    compute = compute || t->has_compute;
    memory = memory || t->has_memory;
    sync = sync || t->has_sync;
    kinds.insert(kinds.end(), t->kinds_present.begin(), t->kinds_present.end());
    host_styles.insert(host_styles.end(), t->host_styles.begin(), t->host_styles.end());
  }
  // In their own order (CollectiveKind, style), each once.
  std::sort(kinds.begin(), kinds.end());
  kinds.erase(std::unique(kinds.begin(), kinds.end()), kinds.end());
  std::sort(host_styles.begin(), host_styles.end());
  host_styles.erase(std::unique(host_styles.begin(), host_styles.end()), host_styles.end());
  using Look = SwatchLegendItem::Look;
  auto add = [legend](const QColor& c, const QString& text, Look look = Look::Plain) {
    legend->addItem(new SwatchLegendItem(legend, c, text, look));
  };
  bool buckets = false;
  for (const TimelineModel* t : timelines) {
    for (const auto& lane : t->lanes)
      buckets = buckets || lane.kind == LaneKind::Buckets;
  }
  if (compute) add(colours::kCompute, QObject::tr("compute"));
  if (memory) add(colours::kMemory, QObject::tr("memory"));
  if (sync) add(colours::kSync, QObject::tr("sync"));
  for (const auto kind : kinds)
    add(collectiveKindColour(kind),
        kind == analysis::CollectiveKind::Unknown
            ? QObject::tr("communication (kind not named)")
            : QString::fromUtf8(analysis::collectiveKindName(kind).data()));
  if (!kinds.empty()) {
    add(collectiveKindColour(kinds.front()), QObject::tr("communication exposed (band)"),
        Look::Band);
    bool waiting = false;
    for (const TimelineModel* t : timelines)
      waiting = waiting || t->has_waiting;
    add(colours::kCommHidden, QObject::tr("hidden (overlap strip)"));
    if (waiting) {
      add(colours::kCommWaiting, QObject::tr("exposed: waiting for a late rank (overlap strip)"));
      add(colours::kCommExposed, QObject::tr("exposed: transfer (overlap strip)"));
    } else {
      add(colours::kCommExposed, QObject::tr("exposed (overlap strip)"));
    }
  }
  // The host lanes' colours, on a row of their own.
  const int gpu_items = legend->itemCount();
  for (const auto st : host_styles) {
    static const std::map<int, const char*> kNames = {
        {kStyleHostOp, "CPU op"},
        {kStyleHostAnnotation, "annotation"},
        {kStyleHostLaunch, "CUDA runtime/driver call"},
        {kStyleHostComm, "DDP / nccl range"},
        {kStyleHostDataLoader, "data loading"},
        {kStyleGpuAnnotation, "GPU annotation"}};
    add(styleColour(st), QObject::tr(kNames.at(st)));
  }
  // How to read the lanes, after the host's colours (the first row stays the GPU's colours).
  if (buckets)
    add(bucketColour(0),
        QObject::tr("bucket (%1 colours by id): waiting, then allreduce").arg(kBucketColours),
        Look::Bucket);
  if (compute || memory || sync || !kinds.empty()) {
    // Zoomed out, a pixel column holds many events and gaps: drawn as high as it is busy.
    add(colours::kCompute, QObject::tr("bar height: busy share of its pixel column"),
        Look::Heights);
  }
  // The GPU's colours on the first row; the host's and the reading items after them, in rows
  // as wide (at least two a row); fewer a row where the plot is too narrow for them.
  setLegendColumns(legend->parentPlot(),
                   legend->itemCount() == gpu_items ? 0 : std::max(gpu_items, 2));
}

SwatchLegendItem::SwatchLegendItem(QCPLegend* legend, const QColor& colour, const QString& text,
                                   Look look)
    : QCPAbstractLegendItem(legend), colour_(colour), text_(text), look_(look) {
  setSelectable(false);
  // The item is drawn clipped to its outer rect, and a row exactly the font's height lost the
  // antialiased bottom of its descenders ("p", "y", "g"): a pixel above, two below.
  setMargins(QMargins(0, 1, 0, 2));
}

QSize SwatchLegendItem::minimumOuterSizeHint() const {
  const QFontMetrics fm(mFont);
  const QSize icon = mParentLegend->iconSize();
  return {icon.width() + mParentLegend->iconTextPadding() + fm.horizontalAdvance(text_) +
              mMargins.left() + mMargins.right(),
          std::max(icon.height(), fm.height()) + mMargins.top() + mMargins.bottom()};
}

void SwatchLegendItem::draw(QCPPainter* painter) {
  const QSize icon = mParentLegend->iconSize();
  const QRect r = mRect;
  const QRect swatch(r.left(), r.top() + (r.height() - icon.height()) / 2, icon.width(),
                     icon.height());
  switch (look_) {
    case Look::Plain:
      painter->fillRect(swatch, colour_);
      break;
    case Look::Band: {
      painter->fillRect(swatch, colour_);
      const int h = std::max(2, icon.height() / 4);
      painter->fillRect(QRect(swatch.left(), swatch.bottom() + 1 - h, swatch.width(), h),
                        colours::kCommExposed);
      break;
    }
    case Look::Bucket: {
      // As the bucket lane draws bucket 0 (the palette's two styles, not colour_): its wait in
      // the light colour, then its allreduce.
      const int half = swatch.width() / 2;
      painter->fillRect(QRect(swatch.left(), swatch.top(), half, swatch.height()),
                        styleColour(bucketStyle(0, true)));
      painter->fillRect(
          QRect(swatch.left() + half, swatch.top(), swatch.width() - half, swatch.height()),
          styleColour(bucketStyle(0, false)));
      break;
    }
    case Look::Heights: {
      // Three columns, a third, two thirds and wholly busy, standing on the swatch's bottom.
      const int w = std::max(1, swatch.width() / 3);
      for (int k = 0; k < 3; ++k) {
        const int h = std::max(1, swatch.height() * (k + 1) / 3);
        painter->fillRect(QRect(swatch.left() + k * w, swatch.bottom() + 1 - h,
                                k == 2 ? swatch.width() - 2 * w : w - 1, h),
                          colour_);
      }
      break;
    }
  }
  painter->setFont(mFont);
  painter->setPen(QPen(mTextColor));
  const QRect text_rect(swatch.right() + 1 + mParentLegend->iconTextPadding(), r.top(),
                        r.width() - icon.width() - mParentLegend->iconTextPadding(), r.height());
  // Not clipped to the cell: a row the layout squeezed by a pixel would cut descenders ("_").
  painter->drawText(text_rect, Qt::AlignLeft | Qt::AlignVCenter | Qt::TextDontClip, text_);
}

double TimeTicker::getTickStep(const QCPRange& range) {
  step_ = QCPAxisTicker::getTickStep(range);
  magnitude_ = std::max(std::fabs(range.lower), std::fabs(range.upper));
  return step_;
}

QString TimeTicker::formatTick(double ns, double step_ns, double magnitude_ns) {
  // The unit follows the largest time on the axis, so that every label has the same unit and
  // stays short; the decimals follow the step, so that neighbouring ticks differ.
  const double a = std::max(std::fabs(step_ns), 1e-9);
  const double m = std::max(a, std::fabs(magnitude_ns));
  double scale = 1;
  const char* unit = "ns";
  if (m >= 1e9) {
    scale = 1e9;
    unit = "s";
  } else if (m >= 1e6) {
    scale = 1e6;
    unit = "ms";
  } else if (m >= 1e3) {
    scale = 1e3;
    unit = "µs";
  }
  const double step = a / scale;
  int decimals = 0;
  while (decimals < 9) {
    const double scaled = step * std::pow(10.0, decimals);
    if (std::fabs(scaled - std::round(scaled)) < 1e-6 * std::max(1.0, scaled)) break;
    ++decimals;
  }
  double v = ns / scale;
  if (std::fabs(v) < step * 1e-6) v = 0;
  return QString::number(v, 'f', decimals) + QString::fromUtf8(" ") + QString::fromUtf8(unit);
}

QString TimeTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
  return formatTick(tick, step_, magnitude_);
}

}  // namespace ddpscope::ui
