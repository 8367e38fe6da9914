#pragma once
// How the app's QCustomPlot charts look: the theme of axes and background, the legend under the
// chart, integer tickers for category axes, and the note an empty chart shows.

#include <QBrush>
#include <QString>
#include <QVector>
#include <cstdint>
#include <initializer_list>

class QCPAxis;
class QCPBars;
class QCPTextElement;
class QCustomPlot;
class QPoint;
class QColor;

namespace ddpscope::ui {

enum class PlotTheme { System, Light };
// Colours a plot's axes, grid and background: the system palette, or white for export/slides.
void applyPlotTheme(QCustomPlot* plot, PlotTheme theme);
// Puts `text` as a bold line of its own above everything else of the chart; returns it.
QCPTextElement* addChartTitle(QCustomPlot* chart, const QString& text, int point_size = 9);
// Moves the plot's legend into a row of its own under everything else, laid out left to right,
// so that it never hides a bar or a point.
void putLegendBelow(QCustomPlot* plot);
// Shows or hides a legend put below: hidden, it leaves the layout, since a legend of no items
// left in it caps the width of its column (a grid of no columns is at most its margins wide),
// which squeezed the plot above it.
void showLegendBelow(QCustomPlot* plot, bool shown);
// A legend below of `columns` items a row (0: all on one row), fewer whenever the plot is too
// narrow for them: fitLegendToWidth, at every replot at the plot's width and by renderPlot at an
// export's, puts as many a row as fit with every item whole (at least one).
void setLegendColumns(QCustomPlot* plot, int columns);
void fitLegendToWidth(QCustomPlot* plot, int width);
// While it lives, the replots of `plot` fit its legend to `width` (a figure being rendered at a
// width of its own), not to the widget's.
class LegendRenderWidth {
 public:
  LegendRenderWidth(QCustomPlot* plot, int width);
  ~LegendRenderWidth();
  LegendRenderWidth(const LegendRenderWidth&) = delete;
  LegendRenderWidth& operator=(const LegendRenderWidth&) = delete;

 private:
  QCustomPlot* plot_;
};
// A ticker for a category axis of integer keys (steps, bucket ids): labels `prefix`N at integer
// steps of 1, 2, 5, 10, 20, ... chosen so that labels as wide as the last key's never collide at
// the axis's current width, on screen and in exports of any size; none past the last key.
void setIntegerTicker(QCPAxis* axis, const QString& prefix, std::int64_t last_key);
// The range that shows bars of width `bar` at keys first..last with a margin on both sides.
void setCategoryRange(QCPAxis* axis, double first, double last, double bar);
// Whether a widget position of `chart` lies on the bar of category `key` that rises from 0 to
// `top` (kBarWidth wide): the hit test of the charts whose bars lead to the timeline.
bool onBar(const QCustomPlot* chart, const QPoint& pos, double key, double top);
// The width of the bars of a category chart (keys 1 apart).
inline constexpr double kBarWidth = 0.7;
// A series of bars of the chart's key and value axes, filled with `colour`, no outline, named
// for the legend; stack one on another with QCPBars::moveAbove.
// The brush that hatches what the run's figures leave out (a warm-up step, one cut short): over
// the Summary tab's step bars and the Digest tab's step columns alike.
QBrush leftOutHatch();
QCPBars* addBars(QCustomPlot* chart, const QString& name, const QColor& colour,
                 const QVector<double>& keys, const QVector<double>& values);

// Says in the middle of the plot why it is empty (no steps, no buckets, no GPU activity), and
// hides the numbers of `axes`, which would otherwise show a meaningless default range. An
// empty text removes the note and shows the numbers again.
void setEmptyNote(QCustomPlot* plot, const QString& text, std::initializer_list<QCPAxis*> axes);
// An empty chart of a panel with no run: the note "No run loaded", no legend, replotted.
void showNoRun(QCustomPlot* chart);
// The note setEmptyNote put on the plot; empty when there is none.
QString emptyNote(QCustomPlot* plot);

}  // namespace ddpscope::ui
