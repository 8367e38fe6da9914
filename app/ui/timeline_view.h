#pragma once
// The timeline of the current run: lanes by rank, level-of-detail drawing, Perfetto/Nsight-style
// navigation, hover details, range measurement and the selected bucket's dependency flows.

#include <QWidget>
#include <memory>
#include <vector>

#include "app/ui/palette.h"
#include "app/ui/plot_export.h"
#include "app/ui/session.h"

class QCustomPlot;
class QScrollBar;
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
  void rebuild();
  void applyViewRange();
  void updateVerticalRange();
  void updateSelectionItems();
  void updateBucketItems();
  void updateEventItem();
  LanePlottable* laneAt(double y) const;
  trace::TimeNs timeAt(double x) const;
  void handleKey(int key);
  QString selectionText() const;

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
