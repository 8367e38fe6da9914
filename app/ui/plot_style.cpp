#include "app/ui/plot_style.h"

#include <qcustomplot.h>
#include <QApplication>
#include <QFontMetrics>
#include <QPalette>
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "app/ui/palette.h"

namespace ddpscope::ui {

namespace {
const QString kEmptyNoteName = QStringLiteral("ddpscope-empty-note");

class IntegerTicker : public QCPAxisTicker {
 public:
  IntegerTicker(QCPAxis* axis, QString prefix, int label_px, std::int64_t last_key)
      : axis_(axis), prefix_(std::move(prefix)), label_px_(label_px), last_key_(last_key) {}

 protected:
  double getTickStep(const QCPRange& range) override {
    // The ticker belongs to the axis, so the axis outlives it.
    const int width = axis_->axisRect() ? axis_->axisRect()->width() : 0;
    const double labels = std::max(2.0, static_cast<double>(width > 0 ? width : 400) / label_px_);
    const double want = range.size() / labels;
    double magnitude = 1;
    while (magnitude * 10 <= want)
      magnitude *= 10;
    for (const double m : {1.0, 2.0, 5.0, 10.0})
      if (m * magnitude >= want) return m * magnitude;
    return 10 * magnitude;
  }
  int getSubTickCount(double) override { return 0; }
  // No label past the last key (a "b150" under 149 buckets).
  QVector<double> createTickVector(double step, const QCPRange& range) override {
    QVector<double> ticks = QCPAxisTicker::createTickVector(step, range);
    ticks.removeIf([&](double t) { return t > static_cast<double>(last_key_) + 0.5; });
    return ticks;
  }
  QString getTickLabel(double tick, const QLocale&, QChar, int) override {
    return prefix_ + QString::number(std::llround(tick));
  }

 private:
  QCPAxis* axis_;
  QString prefix_;
  int label_px_;
  std::int64_t last_key_;
};

QCPItemText* findEmptyNote(QCustomPlot* plot) {
  for (int i = 0; i < plot->itemCount(); ++i) {
    if (auto* t = qobject_cast<QCPItemText*>(plot->item(i)); t && t->objectName() == kEmptyNoteName)
      return t;
  }
  return nullptr;
}
}  // namespace

void applyPlotTheme(QCustomPlot* plot, PlotTheme theme) {
  QColor bg = colours::kLightBackground, fg = colours::kLightForeground, grid = colours::kLightGrid;
  if (theme == PlotTheme::System) {
    const QPalette pal = QApplication::palette();
    bg = pal.color(QPalette::Base);
    fg = pal.color(QPalette::Text);
    grid = pal.color(QPalette::Mid);
    grid.setAlpha(70);
  }
  plot->setBackground(bg);
  for (QCPAxisRect* rect : plot->axisRects()) {
    rect->setBackground(bg);
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(fg, 1));
      axis->setTickPen(QPen(fg, 1));
      axis->setSubTickPen(QPen(fg, 1));
      axis->setTickLabelColor(fg);
      axis->setLabelColor(fg);
      axis->grid()->setPen(QPen(grid, 1, Qt::SolidLine));
      axis->grid()->setZeroLinePen(Qt::NoPen);
    }
  }
  for (int i = 0; i < plot->plotLayout()->elementCount(); ++i) {
    if (auto* t = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
      t->setTextColor(fg);
  }
  if (QCPItemText* note = findEmptyNote(plot)) {
    QColor c = fg;
    c.setAlpha(190);
    note->setColor(c);
  }
  if (plot->legend) {
    plot->legend->setBrush(bg);
    plot->legend->setTextColor(fg);
    plot->legend->setBorderPen(Qt::NoPen);
  }
}

QCPTextElement* addChartTitle(QCustomPlot* chart, const QString& text, int point_size) {
  auto* title =
      new QCPTextElement(chart, text, QFont(chart->font().family(), point_size, QFont::Bold));
  chart->plotLayout()->insertRow(0);
  chart->plotLayout()->addElement(0, 0, title);
  return title;
}

void putLegendBelow(QCustomPlot* plot) {
  auto* layout = plot->plotLayout();
  // Only from where it is: take() warns about an element it does not hold.
  if (plot->legend->layout() == plot->axisRect()->insetLayout())
    plot->axisRect()->insetLayout()->take(plot->legend);
  const int row = layout->rowCount();
  layout->addElement(row, 0, plot->legend);
  plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
  // Room under the last row: rendered at 2x, text is a little taller than twice its 1x
  // height, and a row flush with the bottom edge lost its descenders ("_", "p"). On the sides,
  // the room of the axis rect's own margin: a first swatch flush with the figure's edge looked
  // cut off.
  plot->legend->setMargins(QMargins(12, 0, 12, 6));
  layout->setRowStretchFactor(row, 0.001);
}

namespace {
constexpr const char* kColumnsProperty = "ddpscope_legend_columns";
// The width the legend was last fitted to: a replot at the same width (panning, zooming) has
// nothing to refit. setLegendColumns (new items, a new preference) forgets it.
constexpr const char* kFittedProperty = "ddpscope_legend_fitted_width";
// While a figure is rendered (renderPlot), its width: the replot inside the render fits the
// legend to it, not to the widget's own width (a legend fitted for a 1,500-pixel window was cut
// off in a 900-pixel figure).
constexpr const char* kRenderWidthProperty = "ddpscope_legend_render_width";
}  // namespace

LegendRenderWidth::LegendRenderWidth(QCustomPlot* plot, int width) : plot_(plot) {
  plot_->setProperty(kRenderWidthProperty, width);
}
LegendRenderWidth::~LegendRenderWidth() {
  plot_->setProperty(kRenderWidthProperty, QVariant());
}

void setLegendColumns(QCustomPlot* plot, int columns) {
  const bool connected = plot->property(kColumnsProperty).isValid();
  plot->setProperty(kColumnsProperty, columns);
  plot->setProperty(kFittedProperty, QVariant());
  if (!connected) {
    QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] {
      const QVariant rendering = plot->property(kRenderWidthProperty);
      fitLegendToWidth(plot, rendering.isValid() ? rendering.toInt() : plot->viewport().width());
    });
  }
  fitLegendToWidth(plot, plot->viewport().width());
}

void fitLegendToWidth(QCustomPlot* plot, int width) {
  const QVariant preferred = plot->property(kColumnsProperty);
  if (!preferred.isValid() || width <= 0) return;
  if (const QVariant fitted = plot->property(kFittedProperty);
      fitted.isValid() && fitted.toInt() == width)
    return;
  plot->setProperty(kFittedProperty, width);
  QCPLegend* legend = plot->legend;
  // The items' widths (the grid's empty cells, after the last item, aside).
  std::vector<int> widths;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (QCPAbstractLegendItem* item = legend->item(i))
      widths.push_back(item->minimumOuterSizeHint().width());
  const int n = static_cast<int>(widths.size());
  if (n == 0) return;
  const QMargins m = legend->margins();
  const int room = width - m.left() - m.right();
  int columns = preferred.toInt() <= 0 ? n : std::min(preferred.toInt(), n);
  for (; columns > 1; --columns) {
    // Filled a row at a time: item i in column i % columns, each column as wide as its widest.
    std::vector<int> column(static_cast<std::size_t>(columns), 0);
    for (int i = 0; i < n; ++i) {
      auto& c = column[static_cast<std::size_t>(i % columns)];
      c = std::max(c, widths[static_cast<std::size_t>(i)]);
    }
    int need = legend->columnSpacing() * (columns - 1);
    for (const int c : column)
      need += c;
    if (need <= room) break;
  }
  const int wrap = columns >= n ? 0 : columns;
  if (legend->wrap() == wrap) return;
  legend->setWrap(wrap);
  legend->setFillOrder(QCPLegend::foColumnsFirst, true);  // re-laid out at that wrap
}

void showLegendBelow(QCustomPlot* plot, bool shown) {
  auto* layout = plot->plotLayout();
  const bool placed = plot->legend->layout() == layout;
  if (shown && !placed) putLegendBelow(plot);
  if (!shown && placed) {
    layout->take(plot->legend);
    layout->simplify();
  }
  plot->legend->setVisible(shown);
}

void setIntegerTicker(QCPAxis* axis, const QString& prefix, std::int64_t last_key) {
  const QFontMetrics fm(axis->tickLabelFont());
  const QString widest = prefix + QString::number(last_key);
  // The label plus room for a gap of about two characters.
  const int px = fm.horizontalAdvance(widest) + fm.horizontalAdvance(QLatin1Char('0')) + 6;
  axis->setTicker(QSharedPointer<IntegerTicker>::create(axis, prefix, std::max(px, 12), last_key));
  axis->setSubTicks(false);
}

bool onBar(const QCustomPlot* chart, const QPoint& pos, double key, double top) {
  if (!chart->axisRect()->rect().contains(pos)) return false;
  const double k = chart->xAxis->pixelToCoord(pos.x());
  const double v = chart->yAxis->pixelToCoord(pos.y());
  return std::abs(k - key) <= kBarWidth / 2 && v >= 0 && v <= top;
}

void setCategoryRange(QCPAxis* axis, double first, double last, double bar) {
  const double margin = std::max(bar, 0.02 * (last - first));
  axis->setRange(first - margin, last + margin);
}

QBrush leftOutHatch() {
  return QBrush(QColor(90, 90, 90, 200), Qt::BDiagPattern);
}

QCPBars* addBars(QCustomPlot* chart, const QString& name, const QColor& colour,
                 const QVector<double>& keys, const QVector<double>& values) {
  auto* bars = new QCPBars(chart->xAxis, chart->yAxis);
  bars->setName(name);
  bars->setBrush(colour);
  bars->setPen(Qt::NoPen);
  bars->setWidth(kBarWidth);
  bars->setData(keys, values);
  return bars;
}

void showNoRun(QCustomPlot* chart) {
  setEmptyNote(chart, QObject::tr("No run loaded"), {chart->xAxis, chart->yAxis});
  chart->legend->setVisible(false);
  applyPlotTheme(chart, PlotTheme::System);
  chart->replot();
}

namespace {
constexpr char kNoteText[] = "ddpscopeNoteText";  // the note's text before it is wrapped

// `text` broken at spaces into lines at most `width` pixels wide in `font`, each of its own
// lines (paragraphs) apart; a word wider than that stays whole on its line.
QString wrapToWidth(const QString& text, const QFont& font, int width) {
  const QFontMetrics fm(font);
  QStringList out;
  for (const QString& paragraph : text.split(QLatin1Char('\n'))) {
    QString line;
    for (const QString& word : paragraph.split(QLatin1Char(' '), Qt::SkipEmptyParts)) {
      const QString longer = line.isEmpty() ? word : line + QLatin1Char(' ') + word;
      if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
        out << line;
        line = word;
      } else {
        line = longer;
      }
    }
    out << line;
  }
  return out.join(QLatin1Char('\n'));
}

// Sets the note's text for the axis rect's width as laid out (a narrow chart beside a table
// clipped a long line on both sides).
void fitNote(QCustomPlot* plot, QCPItemText* note) {
  const QString text = note->property(kNoteText).toString();
  const int width = plot->axisRect()->width() - 24;
  note->setText(width > 60 ? wrapToWidth(text, note->font(), width) : text);
}
}  // namespace

QString emptyNote(QCustomPlot* plot) {
  const QCPItemText* note = findEmptyNote(plot);
  return note ? note->property(kNoteText).toString() : QString();
}

void setEmptyNote(QCustomPlot* plot, const QString& text, std::initializer_list<QCPAxis*> axes) {
  QCPItemText* note = findEmptyNote(plot);
  for (QCPAxis* axis : axes)
    axis->setTickLabels(text.isEmpty());
  if (text.isEmpty()) {
    if (note) plot->removeItem(note);
    return;
  }
  if (!note) {
    note = new QCPItemText(plot);
    note->setObjectName(kEmptyNoteName);
    note->position->setType(QCPItemPosition::ptAxisRectRatio);
    note->position->setCoords(0.5, 0.45);
    note->setPositionAlignment(Qt::AlignCenter);
    note->setTextAlignment(Qt::AlignCenter);
    note->setClipToAxisRect(false);
    note->setSelectable(false);
    // Re-wrapped whenever the layout changes (a resize, a splitter moved, an export's size).
    QObject::connect(plot, &QCustomPlot::afterLayout, note, [plot, note] { fitNote(plot, note); });
  }
  QFont font = plot->font();
  font.setPointSizeF(font.pointSizeF() > 0 ? font.pointSizeF() + 1 : 10);
  note->setFont(font);
  note->setProperty(kNoteText, text);
  fitNote(plot, note);
}

}  // namespace ddpscope::ui
