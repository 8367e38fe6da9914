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

  // The window the key axis shows, in pixel columns of the axis rect.
  ViewWindow currentWindow() const;
  // The draw list for the current window (cached).
  const std::vector<DrawBox>& drawList() const;
  // The box under an x pixel of the widget, or nullptr.
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

  const Lane* lane_;
  const trace::RankTrace* rank_;
  double top_;
  bool shaded_ = false;
  mutable ViewWindow cached_window_{0, 0, -1};
  mutable std::vector<DrawBox> cache_;
};

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
