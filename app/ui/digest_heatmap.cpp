#include "app/ui/digest_heatmap.h"

#include <qcustomplot.h>
#include <QToolTip>
#include <QVBoxLayout>
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "app/ui/format.h"
#include "app/ui/palette.h"
#include "app/ui/plot_style.h"

namespace ddpscope::ui {

namespace {

// OKLab (Björn Ottosson's definition) to and from sRGB, channels in [0, 1].
struct Lab {
  double L, a, b;
};

double toLinear(double c) {
  return c <= 0.04045 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}
double toGamma(double c) {
  return c <= 0.0031308 ? 12.92 * c : 1.055 * std::pow(c, 1.0 / 2.4) - 0.055;
}

Lab toOklab(const QColor& c) {
  const double r = toLinear(c.redF()), g = toLinear(c.greenF()), b = toLinear(c.blueF());
  const double l = std::cbrt(0.4122214708 * r + 0.5363325363 * g + 0.0514459929 * b);
  const double m = std::cbrt(0.2119034982 * r + 0.6806995451 * g + 0.1073969566 * b);
  const double s = std::cbrt(0.0883024619 * r + 0.2817188376 * g + 0.6299787005 * b);
  return {0.2104542553 * l + 0.7936177850 * m - 0.0040720468 * s,
          1.9779984951 * l - 2.4285922050 * m + 0.4505937099 * s,
          0.0259040371 * l + 0.7827717662 * m - 0.8086757660 * s};
}

// Linear sRGB of an OKLab colour (may be out of gamut).
std::array<double, 3> linearOf(const Lab& c) {
  const double l = std::pow(c.L + 0.3963377774 * c.a + 0.2158037573 * c.b, 3);
  const double m = std::pow(c.L - 0.1055613458 * c.a - 0.0638541728 * c.b, 3);
  const double s = std::pow(c.L - 0.0894841775 * c.a - 1.2914855480 * c.b, 3);
  return {4.0767416621 * l - 3.3077115913 * m + 0.2309699292 * s,
          -1.2684380046 * l + 2.6097574011 * m - 0.3413193965 * s,
          -0.0041960863 * l - 0.7034186147 * m + 1.7076147010 * s};
}

bool inGamut(const std::array<double, 3>& rgb) {
  return std::all_of(rgb.begin(), rgb.end(), [](double v) { return v >= -1e-9 && v <= 1 + 1e-9; });
}

constexpr double kLightL = 0.97;  // the scale's light end
constexpr double kDarkL = 0.30;   // its dark end

// Formats `ns` in the unit the colour scale uses.
double inUnit(trace::TimeNs ns, double unit_ns) {
  return static_cast<double>(ns) / unit_ns;
}

// A ticker that labels integer positions with given numbers (row → rank, column → step) at a
// step that keeps them apart.
class IndexTicker : public QCPAxisTicker {
 public:
  explicit IndexTicker(std::vector<std::int32_t> labels) : labels_(std::move(labels)) {
    setTickCount(8);
  }

 protected:
  double getTickStep(const QCPRange& range) override {
    return std::max(1.0, std::ceil(QCPAxisTicker::getTickStep(range)));
  }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    const auto i = static_cast<long long>(std::llround(tick));
    if (i < 0 || i >= static_cast<long long>(labels_.size()) || std::fabs(tick - double(i)) > 1e-6)
      return {};
    return QString::number(labels_[static_cast<std::size_t>(i)]);
  }

 private:
  std::vector<std::int32_t> labels_;
};

}  // namespace

QColor sequentialColour(const QColor& hue, double t) {
  t = std::clamp(t, 0.0, 1.0);
  const Lab h = toOklab(hue);
  const double chroma = std::hypot(h.a, h.b);
  const double angle = std::atan2(h.b, h.a);
  const double L = kLightL + (kDarkL - kLightL) * t;
  // Chroma: a tenth of the hue's at the light end, all of it at the hue's own lightness, 60 %
  // at the dark end; linear in lightness between.
  const double at_hue = std::clamp((kLightL - h.L) / (kLightL - kDarkL), 0.01, 0.99);
  double c = t <= at_hue ? chroma * (0.1 + 0.9 * t / at_hue)
                         : chroma * (1.0 - 0.4 * (t - at_hue) / (1.0 - at_hue));
  // Into the sRGB gamut by giving up chroma, never lightness.
  std::array<double, 3> rgb = linearOf({L, c * std::cos(angle), c * std::sin(angle)});
  for (int i = 0; i < 40 && !inGamut(rgb); ++i) {
    c *= 0.95;
    rgb = linearOf({L, c * std::cos(angle), c * std::sin(angle)});
  }
  return QColor::fromRgbF(static_cast<float>(std::clamp(toGamma(rgb[0]), 0.0, 1.0)),
                          static_cast<float>(std::clamp(toGamma(rgb[1]), 0.0, 1.0)),
                          static_cast<float>(std::clamp(toGamma(rgb[2]), 0.0, 1.0)));
}

QCPColorGradient sequentialGradient(const QColor& hue) {
  QCPColorGradient g;
  g.clearColorStops();
  constexpr int kStops = 32;
  for (int i = 0; i <= kStops; ++i) {
    const double t = static_cast<double>(i) / kStops;
    g.setColorStopAt(t, sequentialColour(hue, t));
  }
  g.setColorInterpolation(QCPColorGradient::ciRGB);
  g.setLevelCount(256);
  g.setNanHandling(QCPColorGradient::nhNanColor);
  g.setNanColor(colours::kLightGrid);
  return g;
}

DigestHeatmap::DigestHeatmap(QWidget* parent) : QWidget(parent), plot_(new QCustomPlot(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(plot_);
  plot_->setObjectName(QStringLiteral("digestHeatmap"));
  // Never laid out at no height (a tab not yet shown, grabbed whole): a plot painted at no size
  // has no buffer to paint into; under 120 px no rank could be told apart anyway.
  plot_->setMinimumHeight(120);
  applyPlotTheme(plot_, PlotTheme::System);
  plot_->setMouseTracking(true);
  plot_->xAxis->setLabel(tr("step"));
  plot_->yAxis->setLabel(tr("rank"));
  plot_->yAxis->setRangeReversed(true);  // rank 0 at the top
  plot_->xAxis->grid()->setVisible(false);
  plot_->yAxis->grid()->setVisible(false);
  map_ = new QCPColorMap(plot_->xAxis, plot_->yAxis);
  map_->setInterpolate(false);
  map_->setTightBoundary(false);
  scale_ = new QCPColorScale(plot_);
  // The map and its scale side by side in a grid of their own, the plot's layout one column: a
  // title row an export inserts above spans the whole figure and is centred on it, not on the
  // map's column alone (where a long line ran off the left edge).
  auto* body = new QCPLayoutGrid;
  QCPAxisRect* map_rect = plot_->axisRect();
  plot_->plotLayout()->take(map_rect);
  plot_->plotLayout()->simplify();
  plot_->plotLayout()->addElement(0, 0, body);
  body->addElement(0, 0, map_rect);
  body->addElement(0, 1, scale_);
  scale_->setType(QCPAxis::atRight);
  map_->setColorScale(scale_);
  auto* margins = new QCPMarginGroup(plot_);
  plot_->axisRect()->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  scale_->setMarginGroup(QCP::msBottom | QCP::msTop, margins);
  // Above the cells: the hatching of the steps left out, then the selection over it.
  plot_->addLayer(QStringLiteral("left out"), plot_->layer(QStringLiteral("main")),
                  QCustomPlot::limAbove);
  plot_->addLayer(QStringLiteral("selection"), plot_->layer(QStringLiteral("left out")),
                  QCustomPlot::limAbove);
  halo_ = new QCPItemRect(plot_);
  halo_->setLayer(QStringLiteral("selection"));
  halo_->setPen(QPen(colours::kLightBackground, 5));
  halo_->setBrush(Qt::NoBrush);
  halo_->setVisible(false);
  band_ = new QCPItemRect(plot_);
  band_->setLayer(QStringLiteral("selection"));
  band_->setPen(QPen(colours::kSelection, 2));
  band_->setBrush(Qt::NoBrush);
  band_->setVisible(false);
  plot_->setSelectionRectMode(QCP::srmCustom);
  connect(plot_->selectionRect(), &QCPSelectionRect::accepted, this,
          [this](const QRect& rect, QMouseEvent*) { onRectangle(rect); });
  connect(plot_, &QCustomPlot::mouseMove, this, &DigestHeatmap::onHover);
  setGrid({}, colours::kCompute);
}

void DigestHeatmap::setGrid(analysis::DigestGrid grid, const QColor& hue) {
  grid_ = std::move(grid);
  const int nx = static_cast<int>(grid_.steps.size());
  const int ny = static_cast<int>(grid_.ranks.size());
  const trace::TimeNs top = grid_.max_ns.value_or(0);
  unit_ns_ = top >= 1'000'000'000 ? 1e9 : top >= 1'000'000 ? 1e6 : top >= 1'000 ? 1e3 : 1.0;
  unit_ = unit_ns_ == 1e9   ? QStringLiteral("s")
          : unit_ns_ == 1e6 ? QStringLiteral("ms")
          : unit_ns_ == 1e3 ? QStringLiteral("µs")
                            : QStringLiteral("ns");
  auto* cells = map_->data();
  // A single rank or step is stored as two cells of one value a half apart (centres at ±0.25,
  // together covering −0.5 to 0.5): QCPColorMap draws a data range of zero width as nothing.
  const auto cellsOf = [](int n) { return n == 1 ? 2 : std::max(n, 1); };
  const auto rangeOf = [](int n) {
    return n == 1 ? QCPRange(-0.25, 0.25) : QCPRange(0, std::max(n - 1, 0));
  };
  cells->setSize(cellsOf(nx), cellsOf(ny));
  cells->setRange(rangeOf(nx), rangeOf(ny));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  if (nx > 0 && ny > 0)
    for (int y = 0; y < cellsOf(ny); ++y)
      for (int x = 0; x < cellsOf(nx); ++x) {
        const auto& v = grid_.at(static_cast<std::size_t>(std::min(y, ny - 1)),
                                 static_cast<std::size_t>(std::min(x, nx - 1)));
        cells->setCell(x, y, v ? inUnit(*v, unit_ns_) : nan);
      }
  if (nx == 0 || ny == 0) cells->fill(nan);
  map_->setGradient(sequentialGradient(hue));
  double lo = grid_.min_ns ? inUnit(*grid_.min_ns, unit_ns_) : 0.0;
  double hi = grid_.max_ns ? inUnit(*grid_.max_ns, unit_ns_) : 1.0;
  if (hi <= lo) {  // one value: a range about it (the label says the value), none below 0
    const double half = lo > 0 ? lo * 0.01 : 0.0;
    hi = lo > 0 ? lo + half : 1.0;
    lo -= half;
  }
  map_->setDataRange(QCPRange(lo, hi));
  scale_->axis()->setLabel(scaleLabel());
  plot_->xAxis->setTicker(QSharedPointer<QCPAxisTicker>(new IndexTicker(grid_.steps)));
  plot_->yAxis->setTicker(QSharedPointer<QCPAxisTicker>(new IndexTicker(grid_.ranks)));
  plot_->xAxis->setRange(-0.5, std::max(nx, 1) - 0.5);
  plot_->yAxis->setRange(-0.5, std::max(ny, 1) - 0.5);
  // The steps the run's figures leave out (a warm-up step, one cut short) stay drawn, hatched:
  // outside the scale, a cut-short step's few ms read as the palest, fastest colour.
  for (auto* item : left_out_)
    plot_->removeItem(item);
  left_out_.clear();
  bool any_left_out = false;
  for (int x = 0; x < nx; ++x) {
    if (static_cast<std::size_t>(x) >= grid_.left_out.size() || !grid_.left_out[x]) continue;
    any_left_out = true;
    auto* hatch = new QCPItemRect(plot_);
    hatch->setLayer(QStringLiteral("left out"));
    hatch->setClipToAxisRect(true);
    hatch->setSelectable(false);
    hatch->topLeft->setCoords(x - 0.5, std::max(ny, 1) - 0.5);
    hatch->bottomRight->setCoords(x + 0.5, -0.5);
    hatch->setPen(Qt::NoPen);
    hatch->setBrush(leftOutHatch());
    left_out_.push_back(hatch);
  }
  plot_->xAxis->setLabel(any_left_out ? tr("step (hatched: left out of the run's figures)")
                                      : tr("step"));
  // Ranks of the world without a trace: grey rows, dotted so as not to read as cells without a
  // value (the same grey).
  for (int y = 0; y < ny; ++y) {
    if (static_cast<std::size_t>(y) >= grid_.no_trace.size() || !grid_.no_trace[y]) continue;
    int last = y;
    while (last + 1 < ny && grid_.no_trace[static_cast<std::size_t>(last + 1)])
      ++last;
    auto* rows = new QCPItemRect(plot_);
    rows->setLayer(QStringLiteral("left out"));
    rows->setClipToAxisRect(true);
    rows->setSelectable(false);
    rows->topLeft->setCoords(-0.5, y - 0.5);
    rows->bottomRight->setCoords(std::max(nx, 1) - 0.5, last + 0.5);
    rows->setPen(Qt::NoPen);
    rows->setBrush(QBrush(QColor(110, 110, 110, 150), Qt::Dense6Pattern));
    left_out_.push_back(rows);
    y = last;
  }
  // Ranks without a step (a trace without step markers): say so rather than draw an empty
  // map under a colour scale of no values.
  // (The plots' empty note: wrapped to the plot and recoloured with its theme, in an export too.)
  setEmptyNote(plot_,
               ny > 0 && nx == 0
                   ? tr("No steps: the traces have no step markers, so there is no cell per rank "
                        "and step. The headline's figures are the whole trace's.")
                   : QString(),
               {});
  scale_->setVisible(grid_.max_ns.has_value());
  clearSelection();
  plot_->replot();
}

QString DigestHeatmap::scaleLabel() const {
  const QString label = QStringLiteral("%1 (%2)")
                            .arg(QString::fromUtf8(analysis::digestFigureName(grid_.figure)))
                            .arg(unit_);
  if (grid_.min_ns && grid_.max_ns && *grid_.min_ns == *grid_.max_ns)
    return label + tr(": every cell on the scale %1").arg(formatTime(*grid_.min_ns));
  return label;
}

bool DigestHeatmap::saysNoSteps() const {
  return !emptyNote(plot_).isEmpty();
}

std::optional<double> DigestHeatmap::drawnValue(std::size_t row, std::size_t column) const {
  const double v = map_->data()->cell(static_cast<int>(column), static_cast<int>(row));
  if (std::isnan(v)) return std::nullopt;
  return v;
}

std::optional<std::pair<std::size_t, std::size_t>> DigestHeatmap::cellAt(
    const QPoint& plot_pos) const {
  if (grid_.steps.empty() || grid_.ranks.empty()) return std::nullopt;
  if (!plot_->axisRect()->rect().contains(plot_pos)) return std::nullopt;
  const double x = plot_->xAxis->pixelToCoord(plot_pos.x());
  const double y = plot_->yAxis->pixelToCoord(plot_pos.y());
  const auto column = std::llround(x), row = std::llround(y);
  if (column < 0 || row < 0 || column >= static_cast<long long>(grid_.steps.size()) ||
      row >= static_cast<long long>(grid_.ranks.size()))
    return std::nullopt;
  return std::pair{static_cast<std::size_t>(row), static_cast<std::size_t>(column)};
}

QString DigestHeatmap::cellText(std::size_t row, std::size_t column) const {
  if (row < grid_.no_trace.size() && grid_.no_trace[row])
    return tr("rank %1 · no trace: the rank is of the run's world, but the digest was made "
              "without its trace file")
        .arg(grid_.ranks[row]);
  const auto& v = grid_.at(row, column);
  const QString text = tr("rank %1 · step %2 · %3 %4")
                           .arg(grid_.ranks[row])
                           .arg(grid_.steps[column])
                           .arg(QString::fromUtf8(analysis::digestFigureName(grid_.figure)))
                           .arg(v ? formatTime(*v) : tr("no value")) +
                       (column < grid_.left_out.size() && grid_.left_out[column]
                            ? tr(" (left out of the run's figures)")
                            : QString());
  if (const auto it = row_notes_.find(grid_.ranks[row]);
      it != row_notes_.end() && !it->second.isEmpty())
    return text + QLatin1Char('\n') + it->second;
  return text;
}

void DigestHeatmap::onHover(QMouseEvent* event) {
  const auto cell = cellAt(event->pos());
  if (!cell) {
    QToolTip::hideText();
    return;
  }
  QToolTip::showText(event->globalPosition().toPoint(), cellText(cell->first, cell->second), plot_);
}

void DigestHeatmap::onRectangle(const QRect& rect) {
  if (grid_.ranks.empty()) return;
  const double a = plot_->yAxis->pixelToCoord(rect.top());
  const double b = plot_->yAxis->pixelToCoord(rect.bottom());
  const auto last_row = static_cast<long long>(grid_.ranks.size()) - 1;
  const long long first = std::clamp(std::llround(std::min(a, b)), 0LL, last_row);
  const long long last = std::clamp(std::llround(std::max(a, b)), 0LL, last_row);
  selectRows(static_cast<std::size_t>(first), static_cast<std::size_t>(last));
}

void DigestHeatmap::selectRows(std::size_t first, std::size_t last) {
  if (grid_.ranks.empty()) return;
  last = std::min(last, grid_.ranks.size() - 1);
  first = std::min(first, last);
  selected_.clear();
  for (std::size_t row = first; row <= last; ++row)
    if (row >= grid_.no_trace.size() || !grid_.no_trace[row]) selected_.push_back(grid_.ranks[row]);
  band_->topLeft->setCoords(-0.5, static_cast<double>(first) - 0.5);
  band_->bottomRight->setCoords(static_cast<double>(grid_.steps.size()) - 0.5,
                                static_cast<double>(last) + 0.5);
  band_->setVisible(true);
  halo_->topLeft->setCoords(band_->topLeft->coords());
  halo_->bottomRight->setCoords(band_->bottomRight->coords());
  halo_->setVisible(true);
  plot_->replot(QCustomPlot::rpQueuedReplot);
  emit ranksSelected(selected_);
}

void DigestHeatmap::clearSelection() {
  selected_.clear();
  band_->setVisible(false);
  halo_->setVisible(false);
}

}  // namespace ddpscope::ui
