#pragma once
// The Digest view's chart: one figure of a run digest over ranks (rows, rank 0 at the top) and
// steps (columns) as a QCPColorMap, its colour scale beside it, the value under the cursor in a
// tooltip, and a rectangle drag that selects ranks. It draws what analysis::digestGrid gives and
// derives nothing.

#include <QColor>
#include <QWidget>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "app/analysis/digest_reader.h"

class QCustomPlot;
class QCPColorMap;
class QCPColorScale;
class QCPColorGradient;
class QCPItemRect;

namespace ddpscope::ui {

// A sequential colour scale from almost white to a dark shade of `hue`, perceptually uniform:
// lightness falls linearly in OKLab (so its order reads the same without colour vision), the hue
// stays that of `hue` and its chroma peaks where the ramp passes `hue` itself. t in [0, 1].
QColor sequentialColour(const QColor& hue, double t);
// The scale as a QCustomPlot gradient (stops computed with sequentialColour).
QCPColorGradient sequentialGradient(const QColor& hue);

class DigestHeatmap : public QWidget {
  Q_OBJECT
 public:
  explicit DigestHeatmap(QWidget* parent = nullptr);

  // Shows `grid`, coloured on the scale of `hue`. Empty cells are drawn in a neutral grey.
  void setGrid(analysis::DigestGrid grid, const QColor& hue);
  const analysis::DigestGrid& grid() const { return grid_; }
  QCustomPlot* plot() const { return plot_; }
  QCPColorMap* colourMap() const { return map_; }
  QCPColorScale* colourScale() const { return scale_; }
  // The unit the colour scale and the cells' values are in ("ms", "µs", "s").
  QString unit() const { return unit_; }
  // The value a cell is drawn with, in unit(); none for an empty cell.
  std::optional<double> drawnValue(std::size_t row, std::size_t column) const;
  // The (row, column) under a widget position of the plot; none outside the cells.
  std::optional<std::pair<std::size_t, std::size_t>> cellAt(const QPoint& plot_pos) const;
  // What hovering a cell says: "rank 3 · step 5 · step time 41.2 ms" (or "no value"), and the
  // row's note (setRowNotes) on the lines after it.
  QString cellText(std::size_t row, std::size_t column) const;
  // A note per rank (by rank number; none: no note), shown when a cell of its row is hovered: the
  // rank's own warnings. Kept until set again, whatever figure the grid shows.
  void setRowNotes(std::map<std::int32_t, QString> notes) { row_notes_ = std::move(notes); }
  // The scale's label: the figure and unit, and when every cell on the scale has one value, that
  // value (a scale of one colour says nothing by itself).
  QString scaleLabel() const;
  // Selects the rows [first, last] (as a rectangle drag does) and emits ranksSelected.
  void selectRows(std::size_t first, std::size_t last);
  void clearSelection();
  // Whether the map says it has no cell to draw (ranks without a step), instead of cells.
  bool saysNoSteps() const;
  // The ranks selected (digest rank numbers), in row order; rows of ranks without a trace are
  // never selected.
  const std::vector<std::int32_t>& selectedRanks() const { return selected_; }

 signals:
  void ranksSelected(const std::vector<std::int32_t>& ranks);

 private:
  void onRectangle(const QRect& rect);
  void onHover(QMouseEvent* event);

  QCustomPlot* plot_;
  QCPColorMap* map_;
  QCPColorScale* scale_;
  QCPItemRect* halo_;  // the selected rows: a light halo under a dark outline, seen on any cell
  QCPItemRect* band_;
  analysis::DigestGrid grid_;
  QString unit_;
  double unit_ns_ = 1e6;
  std::vector<std::int32_t> selected_;
  std::map<std::int32_t, QString> row_notes_;
  std::vector<QCPItemRect*> left_out_;  // hatched over the steps outside the run's selection
};

}  // namespace ddpscope::ui
