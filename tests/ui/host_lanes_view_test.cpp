// The host side on the timeline of the ResNet-50 reference trace: host lanes shown (collapsed),
// a kernel clicked shows its launch with an arrow and "launched by" in Details, a launch clicked
// shows its kernel, and a click on a thread's label opens and closes its rows.
//
// DDPSCOPE_SCREENSHOTS=DIR writes host-lanes.png (the picture in docs/UI.md) to DIR.
#include <gtest/gtest.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QDir>
#include <QSplitter>
#include <QTest>
#include <cmath>

#include "app/ui/details_panel.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/main_window.h"
#include "app/ui/session.h"
#include "app/ui/timeline_view.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");

std::size_t shownHostRows(const TimelineView* view) {
  std::size_t n = 0;
  for (const auto* l : view->lanes())
    n += l->lane().kind == LaneKind::Host ? 1 : 0;
  return n;
}

// The widget position of the middle of [t0, t1) in a lane.
QPoint pointIn(const TimelineView* view, const LanePlottable* lane, TimeNs t0, TimeNs t1) {
  auto* plot = view->plot();
  const double x = plot->xAxis2->coordToPixel(static_cast<double>(t0 + t1) / 2.0);
  const double y = plot->yAxis->coordToPixel((lane->top() + lane->bottom()) / 2.0);
  return {static_cast<int>(std::lround(x)), static_cast<int>(std::lround(y))};
}

void click(TimelineView* view, QPoint p) {
  QTest::mouseClick(view->plot(), Qt::LeftButton, Qt::NoModifier, p);
  QApplication::processEvents();
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
}
}  // namespace

TEST(UiHostLanes, ResnetKernelAndLaunchFlowAndCollapse) {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(1400, 900);
  w->show();
  w->openPaths({kResnet});
  ASSERT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  QApplication::processEvents();
  TimelineView* view = w->timeline();
  // Room for the timeline whatever divider position the settings keep.
  if (auto* split = qobject_cast<QSplitter*>(view->parentWidget())) split->setSizes({560, 300});
  QApplication::processEvents();
  auto* plot = view->plot();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const auto run = w->session()->current();
  const auto& rank = run->run.ranks[0];

  // Three threads with events, each collapsed to its first row.
  EXPECT_EQ(shownHostRows(view), 3u);
  std::size_t annotation_lanes = 0;
  for (const auto* l : view->lanes())
    annotation_lanes += l->lane().kind == LaneKind::GpuAnnotation ? 1 : 0;
  EXPECT_EQ(annotation_lanes, 2u);

  // The kernel of correlation 22548 on stream 7 (from the JSON: launched by cudaLaunchKernel on
  // thread 2910249, 12.705 µs before it starts).
  std::int32_t ktrack = -1;
  std::uint32_t kindex = 0;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t.correlation[i] == 22548 && t.kind_of[i] == trace::EventKind::Kernel) {
        ktrack = static_cast<std::int32_t>(ti);
        kindex = static_cast<std::uint32_t>(i);
      }
  }
  ASSERT_GE(ktrack, 0);
  const auto& kt = rank.tracks[static_cast<std::size_t>(ktrack)];
  EXPECT_EQ(kt.stream(), 7);
  const TimeNs ks = kt.start[kindex], ke = kt.end(kindex);
  w->session()->setViewRange({ks - 20'000, ke + 5'000});
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const LanePlottable* klane = view->laneShowing(0, ktrack, kindex);
  ASSERT_NE(klane, nullptr);
  click(view, pointIn(view, klane, ks, ke));
  ASSERT_TRUE(w->session()->selectedEvent().has_value());
  EXPECT_EQ(w->session()->selectedEvent()->track, ktrack);
  EXPECT_EQ(w->session()->selectedEvent()->index, kindex);
  // Its launch is resolved, its thread's rows opened to show it, and an arrow drawn.
  ASSERT_TRUE(view->flowMark().has_value());
  const auto flow = *view->flowMark();
  const auto& ht = rank.tracks[static_cast<std::size_t>(flow.host_track)];
  EXPECT_EQ(ht.tid, 2910249);
  EXPECT_EQ(ht.correlation[flow.host_index], 22548);
  EXPECT_EQ(rank.names[ht.name[flow.host_index]], "cudaLaunchKernel");
  EXPECT_TRUE(view->hostGroupExpanded(0, flow.host_track));
  const LanePlottable* llane = view->laneShowing(0, flow.host_track, flow.host_index);
  ASSERT_NE(llane, nullptr);
  EXPECT_GT(shownHostRows(view), 3u);
  const QString details = w->details()->text();
  EXPECT_TRUE(details.contains(QStringLiteral("launched by"))) << details.toStdString();
  EXPECT_TRUE(
      details.contains(QStringLiteral("(cudaLaunchKernel) on thread 2910249 (pt_main_thread)")))
      << details.toStdString();
  EXPECT_TRUE(details.contains(QStringLiteral("launch latency 12.7 µs"))) << details.toStdString();
  const QByteArray dir = qgetenv("DDPSCOPE_SCREENSHOTS");
  if (!dir.isEmpty()) {
    QDir().mkpath(QString::fromLocal8Bit(dir));
    w->grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/host-lanes.png"));
  }

  // The reverse: the launch clicked shows its kernel.
  const TimeNs ls = ht.start[flow.host_index], le = ht.end(flow.host_index);
  ASSERT_GE(plot->yAxis->coordToPixel(llane->top()), plot->axisRect()->top());
  ASSERT_LE(plot->yAxis->coordToPixel(llane->bottom()), plot->axisRect()->bottom());
  click(view, pointIn(view, llane, ls, le));
  ASSERT_TRUE(w->session()->selectedEvent().has_value());
  EXPECT_EQ(w->session()->selectedEvent()->track, flow.host_track);
  EXPECT_EQ(w->session()->selectedEvent()->index, flow.host_index);
  ASSERT_TRUE(view->flowMark().has_value());
  EXPECT_EQ(view->flowMark()->gpu_track, ktrack);
  EXPECT_EQ(view->flowMark()->gpu_index, kindex);
  EXPECT_TRUE(w->details()->text().contains(QStringLiteral("launch latency 12.7 µs")));

  // A click on the thread's label closes its rows, a second opens them again.
  const std::size_t open_rows = shownHostRows(view);
  const LanePlottable* first = nullptr;
  for (const auto* l : view->lanes())
    if (l->lane().kind == LaneKind::Host && l->lane().track == flow.host_track &&
        l->lane().depth == 0)
      first = l;
  ASSERT_NE(first, nullptr);
  const QPoint label(
      plot->axisRect()->left() - 20,
      static_cast<int>(plot->yAxis->coordToPixel((first->top() + first->bottom()) / 2)));
  click(view, label);
  EXPECT_FALSE(view->hostGroupExpanded(0, flow.host_track));
  EXPECT_EQ(shownHostRows(view), 3u);
  EXPECT_LT(shownHostRows(view), open_rows);
  click(view, label);
  EXPECT_TRUE(view->hostGroupExpanded(0, flow.host_track));
  EXPECT_EQ(shownHostRows(view), open_rows);
}
