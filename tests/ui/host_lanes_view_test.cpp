// The host side on the timeline of the ResNet-50 reference trace: host lanes shown (collapsed),
// a kernel clicked shows its launch with an arrow and "launched by" in Details, a launch clicked
// shows its kernel, and a click on a thread's label opens and closes its rows; deeper rows hidden
// at a coarse zoom, names in thin rows drawn whole, the rows reset for the next screenshot.
//
// DDPSCOPE_SCREENSHOTS=DIR writes host-lanes.png and host-rows-coarse.png (the pictures in
// docs/UI.md) to DIR; DDPSCOPE_TEST_PNGS=DIR keeps the others to look at.
#include <gtest/gtest.h>

#include <qcustomplot.h>
#include <QApplication>
#include <QDir>
#include <QLabel>
#include <QMenu>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSplitter>
#include <QTableView>
#include <QTest>
#include <cmath>

#include "app/ui/compare_panel.h"
#include "app/ui/details_panel.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/loaded_run.h"
#include "app/ui/main_window.h"
#include "app/ui/palette.h"
#include "app/ui/session.h"
#include "app/ui/summary_panel.h"
#include "app/ui/timeline_view.h"
#include "tests/common/trace_builder.h"
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

// A window of the given size with the ResNet-50 reference trace loaded and drawn.
std::unique_ptr<MainWindow> openResnet(int width, int height) {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(width, height);
  w->show();
  w->openPaths({kResnet});
  waitFor([&] { return !w->session()->runs().empty(); });
  QApplication::processEvents();
  return w;
}

void click(TimelineView* view, QPoint p) {
  QTest::mouseClick(view->plot(), Qt::LeftButton, Qt::NoModifier, p);
  QApplication::processEvents();
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
}
}  // namespace

TEST(UiHostLanes, ResnetKernelAndLaunchFlowAndCollapse) {
  auto w = openResnet(1400, 900);
  ASSERT_FALSE(w->session()->runs().empty());
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
  // The thread's first row, where it is now (closing rows lays the lanes out again).
  const auto firstRow = [&]() -> const LanePlottable* {
    for (const auto* l : view->lanes())
      if (l->lane().kind == LaneKind::Host && l->lane().track == flow.host_track &&
          l->lane().depth == 0)
        return l;
    return nullptr;
  };
  ASSERT_NE(firstRow(), nullptr);
  const auto label = [&] {
    const LanePlottable* row = firstRow();
    return QPoint(plot->axisRect()->left() - 20,
                  static_cast<int>(plot->yAxis->coordToPixel((row->top() + row->bottom()) / 2)));
  };
  click(view, label());
  EXPECT_FALSE(view->hostGroupExpanded(0, flow.host_track));
  EXPECT_EQ(shownHostRows(view), 3u);
  EXPECT_LT(shownHostRows(view), open_rows);
  click(view, label());
  EXPECT_TRUE(view->hostGroupExpanded(0, flow.host_track));
  EXPECT_EQ(shownHostRows(view), open_rows);
}

namespace {
// Brute force over a row's events: the first row of depth 1 or more that has ranges in the
// window, all narrower than a pixel column ((end − start) × width < hi − lo); `rows` when none.
int expectedHiddenFrom(const std::vector<const LanePlottable*>& rows, const QCustomPlot* plot) {
  const QCPRange r = plot->xAxis2->range();
  const auto lo = static_cast<TimeNs>(std::llround(r.lower));
  const auto hi = static_cast<TimeNs>(std::llround(r.upper));
  const int width = plot->axisRect()->width();
  for (std::size_t d = 1; d < rows.size(); ++d) {
    const LaneEvents& ev = rows[d]->lane().events;
    bool any = false, wide = false;
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (ev.start(i) >= hi || ev.end(i) < lo) continue;
      any = true;
      wide = wide || (ev.end(i) - ev.start(i)) * width >= hi - lo;
    }
    if (any && !wide) return static_cast<int>(d);
  }
  return static_cast<int>(rows.size());
}
}  // namespace

TEST(UiHostLanes, DeeperRowsHiddenAtACoarseZoomShownZoomedIn) {
  auto w = openResnet(1400, 900);
  ASSERT_FALSE(w->session()->runs().empty());
  TimelineView* view = w->timeline();
  if (auto* split = qobject_cast<QSplitter*>(view->parentWidget())) split->setSizes({600, 260});
  QApplication::processEvents();
  auto* plot = view->plot();
  const auto run = w->session()->current();
  const auto& rank = run->run.ranks[0];
  // The main thread (2910249): 8 rows.
  std::int32_t main_track = -1;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti)
    if (rank.tracks[ti].kind == trace::TrackKind::Host && rank.tracks[ti].tid == 2910249)
      main_track = static_cast<std::int32_t>(ti);
  ASSERT_GE(main_track, 0);
  view->setHostGroupExpanded(0, main_track, true);
  const auto rowsOf = [&] {
    std::vector<const LanePlottable*> rows;
    for (const auto* l : view->lanes())
      if (l->lane().kind == LaneKind::Host && l->lane().track == main_track) rows.push_back(l);
    return rows;
  };
  auto rows = rowsOf();
  ASSERT_EQ(rows.size(), 8u);
  // The whole trace: the deepest ranges are all under a pixel wide, so the rows from some depth
  // on are hidden; the first row never is.
  view->fit();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const int coarse = expectedHiddenFrom(rows, plot);
  EXPECT_GE(coarse, 1);
  EXPECT_LT(coarse, 8);
  for (const auto* l : rows) {
    EXPECT_EQ(l->hiddenFromDepth(), coarse);
    EXPECT_EQ(l->hiddenAtZoom(), l->lane().depth >= coarse);
  }
  // A hidden row offers nothing to hover or click.
  const LanePlottable* hidden = rows[static_cast<std::size_t>(coarse)];
  const double mid_y = plot->yAxis->coordToPixel((hidden->top() + hidden->bottom()) / 2);
  for (int x = plot->axisRect()->left(); x < plot->axisRect()->right(); x += 7)
    EXPECT_EQ(hidden->boxAt(x), nullptr);
  EXPECT_TRUE(view->hoverText(QPointF(plot->axisRect()->center().x(), mid_y)).isEmpty());
  const QByteArray dir = qgetenv("DDPSCOPE_SCREENSHOTS");
  if (!dir.isEmpty()) {
    QDir().mkpath(QString::fromLocal8Bit(dir));
    w->grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/host-rows-coarse.png"));
  }
  // A selected event on a hidden row keeps its row (and those above it) drawn at this zoom;
  // cleared, the rows hide again.
  const LaneEvents& deep = rows.back()->lane().events;
  ASSERT_GT(deep.size(), 0u);
  const std::uint32_t src = deep.source(deep.size() / 2);
  w->session()->selectEvent(EventRef{0, main_track, src});
  view->fit();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const LanePlottable* sel = view->laneShowing(0, main_track, src);
  ASSERT_NE(sel, nullptr);
  EXPECT_EQ(sel->lane().depth, 7);
  EXPECT_FALSE(sel->hiddenAtZoom());
  EXPECT_EQ(sel->hiddenFromDepth(), 8);
  w->session()->selectEvent(std::nullopt);
  plot->replot(QCustomPlot::rpImmediateRefresh);
  rows = rowsOf();
  ASSERT_EQ(rows.size(), 8u);
  EXPECT_EQ(rows.back()->hiddenFromDepth(), coarse);
  // Zoomed in to 200 µs of the deepest row's ranges: every row is drawn.
  const TimeNs t0 = deep.start(deep.size() / 2);
  w->session()->setViewRange({t0 - 100'000, t0 + 100'000});
  plot->replot(QCustomPlot::rpImmediateRefresh);
  EXPECT_EQ(expectedHiddenFrom(rows, plot), 8);
  for (const auto* l : rows) {
    EXPECT_EQ(l->hiddenFromDepth(), 8);
    EXPECT_FALSE(l->hiddenAtZoom());
  }
  if (const QByteArray keep = qgetenv("DDPSCOPE_TEST_PNGS"); !keep.isEmpty()) {
    QDir().mkpath(QString::fromLocal8Bit(keep));
    w->grab().save(QString::fromLocal8Bit(keep) + QStringLiteral("/host-rows-zoomed.png"));
  }
}

TEST(UiHostLanes, ResetHostRowsClosesGroupsAndScrollsToTheTop) {
  auto w = openResnet(1400, 700);
  ASSERT_FALSE(w->session()->runs().empty());
  TimelineView* view = w->timeline();
  const auto run = w->session()->current();
  const auto& rank = run->run.ranks[0];
  // A launch on the main thread selected: its group opens (the kernel-details screenshot does so).
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Host || t.tid != 2910249) continue;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (rank.names[t.name[i]] == "cudaLaunchKernel") {
        w->session()->selectEvent(
            EventRef{0, static_cast<std::int32_t>(ti), static_cast<std::uint32_t>(i)});
        break;
      }
    EXPECT_TRUE(view->hostGroupExpanded(0, static_cast<std::int32_t>(ti)));
  }
  EXPECT_GT(shownHostRows(view), 3u);
  // Scrolled down (a short timeline pane, so that the lanes overflow it).
  if (auto* split = qobject_cast<QSplitter*>(view->parentWidget())) split->setSizes({220, 480});
  QApplication::processEvents();
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  auto* bar = view->findChild<QScrollBar*>();
  ASSERT_NE(bar, nullptr);
  bar->setValue(bar->maximum());
  EXPECT_GT(view->scrollPosition(), 0);
  view->resetHostRows();
  EXPECT_EQ(shownHostRows(view), 3u);
  EXPECT_EQ(view->scrollPosition(), 0);
}

namespace {
// The rightmost column, from the box's left edge, of the text drawn in a lane's box starting at
// t0: the pixels of the grab much darker than the box's (light) fill.
int inkExtent(const QImage& img, const TimelineView* view, const LanePlottable* lane, TimeNs t0,
              const QColor& fill) {
  const auto* plot = view->plot();
  const int x0 = static_cast<int>(std::lround(plot->xAxis2->coordToPixel(static_cast<double>(t0))));
  const int y0 = static_cast<int>(std::lround(plot->yAxis->coordToPixel(lane->top())));
  const int y1 = static_cast<int>(std::lround(plot->yAxis->coordToPixel(lane->bottom())));
  int right = -1;
  for (int y = y0; y < y1; ++y)
    for (int x = x0 + 1; x < x0 + 300 && x < img.width(); ++x) {
      // Text: dark on the light fill (the lane's background and the grid are lighter still).
      const QColor c = img.pixelColor(x, y);
      if (c.red() + c.green() + c.blue() < fill.red() + fill.green() + fill.blue() - 150)
        right = std::max(right, x - x0);
    }
  return right;
}
}  // namespace

TEST(UiHostLanes, NamesInThinRowsKeepATrailingUnderscore) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 900);
  w.show();
  // One thread: "aten::relu_" [0, 1 ms) around "aten::relu" [0.1, 0.9 ms), a row each (14 px).
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 0, 1'000'000);
  b.add({"aten::relu_", 0, 1'000'000, 1, 0, trace::EventKind::CpuOp});
  b.add({"aten::relu", 100'000, 800'000, 1, 0, trace::EventKind::CpuOp});
  trace::Run r;
  r.ranks.push_back(b.build());
  w.session()->addRun(prepareRun(std::move(r), {QStringLiteral("underscore")}));
  QApplication::processEvents();
  TimelineView* view = w.timeline();
  const LanePlottable* row0 = nullptr;
  for (const auto* l : view->lanes())
    if (l->lane().kind == LaneKind::Host) row0 = l;
  ASSERT_NE(row0, nullptr);
  view->setHostGroupExpanded(0, row0->lane().track, true);
  const LanePlottable *outer = nullptr, *inner = nullptr;
  for (const auto* l : view->lanes())
    if (l->lane().kind == LaneKind::Host) (l->lane().depth == 0 ? outer : inner) = l;
  ASSERT_NE(outer, nullptr);
  ASSERT_NE(inner, nullptr);
  ASSERT_EQ(outer->lane().height, inner->lane().height);
  w.session()->setViewRange({-50'000, 1'050'000});
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  const QImage img = view->plot()->grab().toImage();
  const QColor fill = styleColour(kStyleHostOp);
  const int with = inkExtent(img, view, outer, 0, fill);
  const int without = inkExtent(img, view, inner, 100'000, fill);
  ASSERT_GT(without, 20);  // "aten::relu" is drawn
  // The trailing "_" reaches past the end of "aten::relu": drawn, not cut off below the box.
  EXPECT_GE(with - without, 3) << "with _: " << with << " px, without: " << without << " px";
  if (const QByteArray keep = qgetenv("DDPSCOPE_TEST_PNGS"); !keep.isEmpty()) {
    QDir().mkpath(QString::fromLocal8Bit(keep));
    img.save(QString::fromLocal8Bit(keep) + QStringLiteral("/host-underscore.png"));
  }
}

namespace {

// A kernel of rank `rank_index` whose launch the timeline resolves (a flow), selected.
std::optional<EventRef> selectKernelWithLaunch(MainWindow* w, std::int32_t rank_index) {
  const auto run = w->session()->current();
  const auto& rank = run->run.ranks[static_cast<std::size_t>(rank_index)];
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.kind_of[i] != trace::EventKind::Kernel || t.correlation[i] == trace::kNoCorrelation)
        continue;
      const EventRef ref{rank_index, static_cast<std::int32_t>(ti), static_cast<std::uint32_t>(i)};
      w->session()->selectEvent(ref);
      if (w->timeline()->flowMark()) return ref;
    }
  }
  return std::nullopt;
}

}  // namespace

// The launch flow of a selection belongs to its run: when another run becomes current (one with
// fewer ranks), the old flow is forgotten before the new layout asks for its rows (it used to
// read the old rank's index in the new run). The read past the end is what the sanitizer build
// catches; the checks below pin the bounds and the new run's own flow.
TEST(UiHostLanes, AnotherRunForgetsTheLaunchFlowOfTheLast) {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(1400, 900);
  w->show();
  w->openPaths({QStringLiteral(DDPSCOPE_SAMPLE_DIR)});
  ASSERT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  QApplication::processEvents();
  ASSERT_EQ(w->session()->current()->run.ranks.size(), 4u);
  ASSERT_TRUE(selectKernelWithLaunch(w.get(), 3).has_value());
  EXPECT_EQ(w->timeline()->flowMark()->rank_index, 3);
  w->openPaths({kResnet});
  ASSERT_TRUE(waitFor([&] { return w->session()->runs().size() == 2; }));
  QApplication::processEvents();
  EXPECT_EQ(w->session()->current()->run.ranks.size(), 1u);
  EXPECT_FALSE(w->timeline()->flowMark().has_value());
  // Rows of ranks the run does not have are no row at all.
  EXPECT_EQ(w->timeline()->laneShowing(3, 0, 0), nullptr);
  EXPECT_EQ(w->timeline()->laneShowing(-1, 0, 0), nullptr);
  // A selection in the new run gets its own flow.
  ASSERT_TRUE(selectKernelWithLaunch(w.get(), 0).has_value());
  EXPECT_EQ(w->timeline()->flowMark()->rank_index, 0);
}

// Pin and hide lanes (docs/UI.md "Pin and hide lanes"), through the lane menu's actions.
TEST(UiHostLanes, PinAndHideLanesFromTheLaneMenu) {
  auto w = openResnet(1400, 800);
  ASSERT_FALSE(w->session()->runs().empty());
  TimelineView* view = w->timeline();
  const auto& all = w->session()->current()->timeline.lanes;
  const std::size_t shown = view->lanes().size();
  const int height = view->contentHeight();
  auto trigger = [&](const LanePlottable* lane, const QString& starts) {
    std::unique_ptr<QMenu> menu(view->laneMenu(lane, view));
    for (QAction* a : menu->actions())
      if (a->text().startsWith(starts) && a->isEnabled()) {
        a->trigger();
        QApplication::processEvents();
        return true;
      }
    return false;
  };
  auto find = [&](LaneKind kind) -> const LanePlottable* {
    for (const auto* l : view->lanes())
      if (l->lane().kind == kind) return l;
    return nullptr;
  };
  // The compute stream pinned: drawn first, its rank in its label, and nowhere else.
  const LanePlottable* compute = nullptr;
  for (const auto* l : view->lanes())
    if (l->lane().kind == LaneKind::Stream && l->lane().role == analysis::StreamRole::Compute)
      compute = l;
  ASSERT_NE(compute, nullptr);
  const std::size_t compute_index = view->laneIndex(compute);
  const TimeNs first_kernel = compute->lane().events.start(0);
  ASSERT_TRUE(trigger(compute, "Pin "));
  ASSERT_EQ(view->pinnedLanes(), std::vector<std::size_t>{compute_index});
  EXPECT_EQ(view->laneIndex(view->lanes().front()), compute_index);
  EXPECT_EQ(view->lanes().front()->top(), 0.0);
  EXPECT_EQ(view->lanes().size(), shown);
  std::size_t copies = 0;
  for (const auto* l : view->lanes())
    copies += view->laneIndex(l) == compute_index ? 1 : 0;
  EXPECT_EQ(copies, 1u);
  EXPECT_EQ(view->lanes().front()->lane().events.start(0), first_kernel);
  const auto ticks = view->plot()->yAxis->tickVectorLabels();
  EXPECT_TRUE(std::any_of(ticks.begin(), ticks.end(), [](const QString& t) {
    return t.startsWith("rank 0 · compute") && t.endsWith("pinned");
  })) << ticks.join(" | ").toStdString();
  // A thread's deeper row pinned while the thread is closed: shown, named after its thread.
  std::size_t deep = all.size();
  for (std::size_t i = 0; i < all.size(); ++i)
    if (all[i].kind == LaneKind::Host && all[i].depth == 2) deep = i;
  ASSERT_LT(deep, all.size());
  view->setLanePinned(deep, true);
  EXPECT_EQ(view->laneIndex(view->lanes()[1]), deep);
  EXPECT_EQ(view->lanes().size(), shown + 1);
  if (const QByteArray keep = qgetenv("DDPSCOPE_TEST_PNGS"); !keep.isEmpty()) {
    view->plot()->replot(QCustomPlot::rpImmediateRefresh);
    w->grab().save(QDir(QString::fromLocal8Bit(keep)).filePath("timeline-pinned.png"));
  }
  // The steps lane hidden: not drawn, the content shorter by its height; the menu brings it back.
  const LanePlottable* steps = find(LaneKind::Steps);
  ASSERT_NE(steps, nullptr);
  const int steps_height = steps->lane().height;
  const std::size_t steps_index = view->laneIndex(steps);
  const int before_hide = view->contentHeight();
  ASSERT_TRUE(trigger(steps, "Hide "));
  EXPECT_TRUE(view->hiddenLanes().contains(steps_index));
  EXPECT_EQ(find(LaneKind::Steps), nullptr);
  EXPECT_EQ(view->contentHeight(), before_hide - steps_height);
  // Unpinning and hiding a pinned lane: it leaves the top.
  ASSERT_TRUE(trigger(view->lanes()[1], "Hide "));
  EXPECT_EQ(view->pinnedLanes(), std::vector<std::size_t>{compute_index});
  ASSERT_TRUE(trigger(view->lanes().front(), "Unpin "));
  EXPECT_TRUE(view->pinnedLanes().empty());
  ASSERT_TRUE(trigger(view->lanes().front(), "Show hidden lanes (2)"));
  EXPECT_TRUE(view->hiddenLanes().empty());
  EXPECT_EQ(view->lanes().size(), shown);
  EXPECT_EQ(view->contentHeight(), height);
  // Nothing hidden: the menu's "Show hidden lanes (0)" is disabled.
  EXPECT_FALSE(trigger(view->lanes().front(), "Show hidden lanes"));
  // A kernel selected on a hidden lane (a Statistics row, a search) shows the lane again.
  view->setLaneHidden(compute_index, true);
  ASSERT_TRUE(view->hiddenLanes().contains(compute_index));
  const Lane& compute_lane = all[compute_index];
  w->session()->selectEvent(
      EventRef{compute_lane.rank_index, compute_lane.track, compute_lane.events.source(0)});
  QApplication::processEvents();
  EXPECT_FALSE(view->hiddenLanes().contains(compute_index));
  EXPECT_NE(
      view->laneShowing(compute_lane.rank_index, compute_lane.track, compute_lane.events.source(0)),
      nullptr);
}

// The Summary's chart bars and rank rows lead to the timeline: a bar zooms to its step, as
// "Go to step" does; a rank's row is announced for the timeline to scroll to.
TEST(UiHostLanes, SummaryChartBarZoomsToItsStep) {
  auto w = openResnet(1500, 900);
  ASSERT_FALSE(w->session()->runs().empty());
  auto* summary = w->findChild<SummaryPanel*>();
  ASSERT_NE(summary, nullptr);
  QCustomPlot* chart = summary->chart();
  chart->replot(QCustomPlot::rpImmediateRefresh);
  // The middle of step 5's bar (ResNet-50: steps 4, 5 and 6, each about 220 ms).
  const QPoint bar(static_cast<int>(chart->xAxis->coordToPixel(5.0)),
                   static_cast<int>(chart->yAxis->coordToPixel(100.0)));
  EXPECT_EQ(summary->stepAt(bar), 5);
  EXPECT_EQ(summary->stepAt({bar.x(), static_cast<int>(chart->yAxis->coordToPixel(400.0))}), -1);
  EXPECT_EQ(summary->stepAt({static_cast<int>(chart->xAxis->coordToPixel(5.5)), bar.y()}), -1);
  const TimeRange whole = w->session()->viewRange();
  QTest::mouseClick(chart, Qt::LeftButton, Qt::NoModifier, bar);
  QApplication::processEvents();
  const TimeRange clicked = w->session()->viewRange();
  EXPECT_LT(clicked.length(), whole.length() / 2);
  w->timeline()->fit();
  ASSERT_TRUE(w->timeline()->goToStep(5));
  EXPECT_EQ(w->session()->viewRange().lo, clicked.lo);
  EXPECT_EQ(w->session()->viewRange().hi, clicked.hi);

  QSignalSpy ranks(summary, &SummaryPanel::rankActivated);
  QTableView* table = summary->table();
  const QRect row0 = table->visualRect(table->model()->index(0, 0));
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, row0.center());
  ASSERT_EQ(ranks.size(), 1);
  EXPECT_EQ(ranks.front().front().toInt(), 0);
  // The second row is rank 1, which has no trace: nothing to show.
  const QRect row1 = table->visualRect(table->model()->index(1, 0));
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::NoModifier, row1.center());
  EXPECT_EQ(ranks.size(), 1);
}

// A synchronisation record lying over a kernel on its stream (a host waiting in
// cudaStreamSynchronize while the kernel runs) is a band along the top of the lane: the kernel
// stays visible under it.
TEST(UiHostLanes, ASyncOverAKernelLeavesTheKernelVisible) {
  app();
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 900);
  w.show();
  ddpscope::testing::TraceBuilder b;
  b.kernel("flash_fwd_kernel", 0, 1'000'000);
  b.add({"Stream Sync", 100'000, 900'000, 7, 0, trace::EventKind::Sync});
  trace::Run r;
  r.ranks.push_back(b.build());
  w.session()->addRun(prepareRun(std::move(r), {QStringLiteral("sync")}));
  QApplication::processEvents();
  TimelineView* view = w.timeline();
  const LanePlottable* stream = nullptr;
  for (const auto* l : view->lanes())
    if (l->lane().kind == LaneKind::Stream) stream = l;
  ASSERT_NE(stream, nullptr);
  w.session()->setViewRange({-50'000, 1'050'000});
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  const QImage img = view->plot()->grab().toImage();
  auto* plot = view->plot();
  const int x = static_cast<int>(std::lround(plot->xAxis2->coordToPixel(500'000.0)));
  const int top = static_cast<int>(std::lround(plot->yAxis->coordToPixel(stream->top())));
  const int bottom = static_cast<int>(std::lround(plot->yAxis->coordToPixel(stream->bottom())));
  int compute = 0, sync = 0;
  for (int y = top; y < bottom; ++y) {
    const QColor c = img.pixelColor(x, y);
    compute += c == styleColour(kStyleCompute) ? 1 : 0;
    sync += c == styleColour(kStyleSync) ? 1 : 0;
  }
  EXPECT_GT(sync, 0);            // the wait is shown
  EXPECT_GT(compute, 2 * sync);  // and most of the lane is the kernel under it
}

// Two runs without a step in common (here one has no step at all) still compare: the table of
// figures, and each run's lanes from its first GPU activity, labelled.
TEST(UiHostLanes, CompareRunsWithoutACommonStep) {
  auto w = openResnet(1400, 900);
  ASSERT_FALSE(w->session()->runs().empty());
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 5'000'000, 1'000'000);
  b.comm(5'500'000, 2'000'000);
  trace::Run r;
  r.ranks.push_back(b.build());
  w->session()->addRun(prepareRun(std::move(r), {QStringLiteral("no steps")}));
  QApplication::processEvents();
  // Its Summary says every figure covers the whole trace (not "over no step markers").
  const QString note = w->summary()->note()->text();
  EXPECT_TRUE(note.contains(QStringLiteral("every figure over the whole trace")))
      << note.toStdString();
  EXPECT_FALSE(note.contains(QStringLiteral("over no step"))) << note.toStdString();
  ComparePanel* compare = w->comparePanel();
  compare->setRuns(0, 1);
  QApplication::processEvents();
  EXPECT_EQ(compare->step(), -1);
  EXPECT_TRUE(compare->stepNote().contains(QStringLiteral("no step in common")))
      << compare->stepNote().toStdString();
  ASSERT_FALSE(compare->rows().empty());
  EXPECT_EQ(compare->table()->model()->rowCount(), static_cast<int>(compare->rows().size()));
  QCustomPlot* plot = compare->findChild<QCustomPlot*>();
  ASSERT_NE(plot, nullptr);
  for (int i = 0; i < 2; ++i) {
    auto* rect = plot->axisRect(i);
    auto ticker = rect->axis(QCPAxis::atLeft)->ticker().dynamicCast<QCPAxisTickerText>();
    ASSERT_FALSE(ticker.isNull());
    EXPECT_GT(ticker->ticks().size(), 1) << "rect " << i;
    EXPECT_GT(rect->axis(QCPAxis::atLeft)->range().size(), 20.0);  // the lanes' height
  }
  if (const QByteArray keep = qgetenv("DDPSCOPE_TEST_PNGS"); !keep.isEmpty()) {
    w->tabs()->setCurrentWidget(compare);
    QApplication::processEvents();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    w->grab().save(QDir(QString::fromLocal8Bit(keep)).filePath("compare-no-common-step.png"));
  }
  // Back to a pair with steps in common: the steps' view again.
  compare->setRuns(0, 0);
  QApplication::processEvents();
  EXPECT_GE(compare->step(), 4);
}

// The timeline's legend under the lanes: every row has room below the font's descent (a row
// exactly the font's height lost the bottom of "p", "y", "g": items are clipped to their cell),
// and the whole legend lies inside the plot at the window's first layout.
TEST(UiHostLanes, LegendRowsKeepTheirDescenders) {
  auto w = openResnet(1600, 1000);
  auto* plot = w->timeline()->plot();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  ASSERT_TRUE(plot->legend->visible());
  int items = 0;
  for (int i = 0; i < plot->legend->itemCount(); ++i) {
    auto* item = plot->legend->item(i);
    if (item == nullptr) continue;  // an empty cell of the last row
    ++items;
    const QFontMetrics fm(item->font());
    EXPECT_GE(item->outerRect().height(), fm.height() + 2) << i;
    EXPECT_LE(item->outerRect().bottom(), plot->height()) << i;
  }
  EXPECT_GE(items, 8);  // the stream colours and the host kinds
}

// The legend says how to read the lanes as well as their colours: a bucket's two parts (the
// reference trace's buckets are inferred) and what a bar's height means zoomed out; every item
// gets the width its swatch and text need (at the window's width, nothing is cut or overlaps).
TEST(UiHostLanes, LegendSaysHowToReadBucketsAndBarHeights) {
  auto w = openResnet(1600, 1000);
  auto* plot = w->timeline()->plot();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const QStringList legend = w->timeline()->legendTexts();
  EXPECT_TRUE(legend.contains("bucket (6 colours by id): waiting, then allreduce"))
      << legend.join(", ").toStdString();
  EXPECT_TRUE(legend.contains("bar height: busy share of its pixel column"))
      << legend.join(", ").toStdString();
  // Every item whole, at the plot's width in the window and narrower (fewer a row, more rows),
  // and the legend within the plot.
  int rows_before = 0;
  for (const int width : {plot->width(), 800, 600, 420}) {
    plot->setFixedWidth(width);
    QCoreApplication::processEvents();
    plot->replot(QCustomPlot::rpImmediateRefresh);
    int rows = 0;
    for (int i = 0; i < plot->legend->itemCount(); ++i) {
      auto* item = plot->legend->item(i);
      if (item == nullptr) continue;
      const QCPLayoutElement* element = item;
      EXPECT_GE(item->outerRect().width(), element->minimumOuterSizeHint().width())
          << "item " << i << " at " << width << " px";
      EXPECT_LE(item->outerRect().right(), plot->width()) << "item " << i << " at " << width;
      rows = std::max(rows, plot->legend->rowCount());
    }
    EXPECT_GE(rows, rows_before) << width;  // narrower: as many rows or more
    rows_before = rows;
    if (const QByteArray dir = qgetenv("DDPSCOPE_SCREENSHOTS"); !dir.isEmpty()) {
      QDir().mkpath(QString::fromLocal8Bit(dir));
      plot->grab().save(QString::fromLocal8Bit(dir) + QStringLiteral("/legend-%1.png").arg(width));
    }
  }
  EXPECT_GT(rows_before, 4);  // at 420 px the 15 items take more rows than at the window's width
}
