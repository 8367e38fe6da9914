#pragma once
// One QCustomPlot plottable per timeline lane (docs/UI.md "How it draws millions of events"):
// draws only the visible window through the draw-list builder, caching the list per (range,
// width). Keys are nanoseconds; values are pixels from the top of the lane stack (the value
// axis is reversed).

#include <qcustomplot.h>

#include <vector>

#include "app/ui/draw_list.h"
#include "app/ui/timeline_model.h"

namespace ddpscope::ui {

class LanePlottable : public QCPAbstractPlottable {
  Q_OBJECT
 public:
  LanePlottable(QCPAxis* key_axis, QCPAxis* value_axis, const Lane* lane,
                const trace::RankTrace* rank, double top);

  const Lane& lane() const { return *lane_; }
  double top() const { return top_; }
  double bottom() const { return top_ + lane_->height; }
  void setShaded(bool shaded) { shaded_ = shaded; }
  // A rule in the gap above this lane: the first lane of a rank after another rank's.
  void setRuleAbove(bool rule) { rule_above_ = rule; }
  // Search matches in this lane (null: none), outlined over the events; the list must outlive
  // the plottable or be reset.
  void setMatches(const LaneEvents* matches) {
    matches_ = matches;
    match_window_ = {0, 0, -1};
  }
  // The matches' boxes in the current window (cached).
  const std::vector<DrawBox>& matchList() const;

  // The window the key axis shows, in pixel columns of the axis rect.
  ViewWindow currentWindow() const;
  // The draw list for the current window (cached).
  const std::vector<DrawBox>& drawList() const;
  // How busy each pixel column of the current window is, in [0, 1] (draw_list.h; cached with
  // the draw list).
  const std::vector<float>& occupancy() const;
  // Host rows at a coarse zoom (host_lanes.h firstHiddenHostRow): whether this row is hidden in
  // the current window (it then draws a note on its first hidden row and no boxes), and the depth
  // from which its thread's rows are hidden (its row count when none is).
  bool hiddenAtZoom() const;
  int hiddenFromDepth() const;
  // Rows of this thread down to `depth` stay drawn at any zoom (the rows holding the selected
  // event, an end of its launch flow or the current search match); -1: none kept.
  void setKeptDepth(int depth) {
    kept_depth_ = depth;
    hidden_window_ = {0, 0, -1};
  }
  // The box under an x pixel of the widget, or nullptr (also on a row hidden at this zoom).
  const DrawBox* boxAt(double pixel_x) const;

  double selectTest(const QPointF&, bool, QVariant* = nullptr) const override { return -1; }
  QCPRange getKeyRange(bool& found, QCP::SignDomain domain = QCP::sdBoth) const override;
  QCPRange getValueRange(bool& found, QCP::SignDomain domain = QCP::sdBoth,
                         const QCPRange& key_range = QCPRange()) const override;

 protected:
  void draw(QCPPainter* painter) override;
  void drawLegendIcon(QCPPainter*, const QRectF&) const override {}

 private:
  QString boxLabel(const DrawBox& box) const;
  void drawMatches(QCPPainter* painter, int left, int top_px, int lane_h) const;

  const Lane* lane_;
  const trace::RankTrace* rank_;
  double top_;
  bool shaded_ = false;
  bool rule_above_ = false;
  mutable ViewWindow cached_window_{0, 0, -1};
  mutable std::vector<DrawBox> cache_;
  mutable std::vector<float> occupancy_;
  mutable ViewWindow hidden_window_{0, 0, -1};
  mutable int hidden_from_ = 0;
  int kept_depth_ = -1;
  const LaneEvents* matches_ = nullptr;
  mutable ViewWindow match_window_{0, 0, -1};
  mutable std::vector<DrawBox> match_cache_;
};

// Fills `legend` (cleared first) with what the lanes' colours mean in these timelines, each
// colour once whichever timeline draws it: the roles present, each collective kind, the
// exposed band and the overlap strip, then the host lanes' colours on a row of their own (the
// legend wraps there). The timeline and the Compare tab's chart both call it (the Compare chart
// draws one rank of each run; its legend is of the runs' colours).
void fillLaneLegend(QCPLegend* legend, const std::vector<const TimelineModel*>& timelines);

// A legend entry of the timeline: a swatch of a colour and its meaning (the timeline's lanes are
// not QCustomPlot graphs, so they have no legend items of their own). `band` draws the swatch
// with the exposed-communication band along its bottom.

class SwatchLegendItem : public QCPAbstractLegendItem {
  Q_OBJECT
 public:
  // What the swatch shows: the colour alone; with the exposed band along its bottom; as a
  // bucket is drawn (its wait light, then its allreduce solid); or as columns of three heights
  // (how merged events show how busy each pixel column is).
  enum class Look : std::uint8_t { Plain, Band, Bucket, Heights };
  SwatchLegendItem(QCPLegend* legend, const QColor& colour, const QString& text,
                   Look look = Look::Plain);
  const QString& text() const { return text_; }

 protected:
  void draw(QCPPainter* painter) override;
  QSize minimumOuterSizeHint() const override;

 private:
  QColor colour_;
  QString text_;
  Look look_;
};

// The height in pixels a column of a merged box is drawn at: its occupancy of `box_h`, at least
// one pixel (an event is never invisible) and at most box_h.
int columnHeight(const std::vector<float>& occupancy, int x, int box_h);

// Time-axis labels in the unit that keeps the tick step readable (s, ms, µs, ns).
class TimeTicker : public QCPAxisTicker {
 public:
  // A tick at `ns`, ticks `step_ns` apart, on an axis whose largest |time| is `magnitude_ns`.
  static QString formatTick(double ns, double step_ns, double magnitude_ns = 0);

 protected:
  double getTickStep(const QCPRange& range) override;
  QString getTickLabel(double tick, const QLocale& locale, QChar format_char,
                       int precision) override;

 private:
  double step_ = 1;
  double magnitude_ = 0;
};

}  // namespace ddpscope::ui
