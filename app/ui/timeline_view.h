#pragma once
// The timeline of the current run: lanes by rank, level-of-detail drawing, Perfetto/Nsight-style
// navigation, hover details, range measurement and the selected bucket's dependency flows.

#include <QWidget>
#include <memory>
#include <vector>

#include "app/ui/plot_export.h"
#include "app/ui/session.h"

class QCustomPlot;
class QKeyEvent;
class QMouseEvent;
class QScrollBar;
class QWheelEvent;
class QCPItemRect;
class QCPItemText;
class QCPAbstractItem;

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

  // Renders all lanes (not only the visible ones) in the light theme; of a run of many ranks,
  // the first kExportRanks, the title saying how many of how many are shown.
  static constexpr int kExportRanks = 8;
  bool exportImage(const QString& path, double scale, QString* error, int width = 0);
  // The same into memory (the design report writes its figures together).
  bool renderImage(ExportFormat format, double scale, QByteArray* out, QString* error,
                   int width = 0);
  void copyToClipboard(double scale = 2.0);

 signals:
  void statusMessage(const QString& text);

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void setUpPlot();
  void createMarks();
  void rebuild();
  void applyViewRange();
  void updateVerticalRange();
  void updateSelectionItems();
  void updateEventItem();
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
  QCustomPlot* plot_;
  QScrollBar* vscroll_;
  std::shared_ptr<const LoadedRun> run_;
  std::vector<LanePlottable*> lanes_;
  std::vector<QCPAbstractItem*> bucket_items_;
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
