// The timeline's views on real traces: honest density at a far zoom (each pixel column as busy
// as its events make it), communication coloured by collective kind with a legend, one matched
// collective outlined on every rank, search and go-to-step.
//
// DDPSCOPE_TEST_PNGS=DIR keeps the rendered windows as PNGs in DIR, to look at.
#include <gtest/gtest.h>

#include <qcustomplot.h>
#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFile>
#include <QImage>
#include <QLineEdit>
#include <QMenuBar>
#include <QRegularExpression>
#include <QSpinBox>
#include <QTabWidget>
#include <QTest>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "app/analysis/intervals.h"
#include "app/analysis/statistics.h"
#include "app/ui/lane_plottable.h"
#include "app/ui/main_window.h"
#include "app/ui/palette.h"
#include "app/ui/run_load_job.h"
#include "app/ui/search_bar.h"
#include "app/ui/session.h"
#include "app/ui/timeline_model.h"
#include "app/ui/timeline_tooltip.h"
#include "app/ui/timeline_view.h"
#include "tests/common/trace_builder.h"
#include "tests/ui/ui_test_app.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using ddpscope::ui::testing::app;
using ddpscope::ui::testing::waitFor;

namespace {
const QString kResnet = QStringLiteral(DDPSCOPE_TEST_DATA "/resnet50_ddp_rank0.json.gz");
const QString kSample = QStringLiteral(DDPSCOPE_SAMPLE_DIR);

std::unique_ptr<MainWindow> openWindow(const QString& path) {
  app();
  auto w = std::make_unique<MainWindow>();
  w->setErrorDialogsEnabled(false);
  w->resize(1400, 900);
  w->show();
  w->openPaths({path});
  EXPECT_TRUE(waitFor([&] { return !w->session()->runs().empty(); }));
  QApplication::processEvents();
  w->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
  return w;
}

// Keeps a picture of the window when DDPSCOPE_TEST_PNGS names a folder.
void keep(QWidget* widget, const QString& name) {
  const QByteArray dir = qgetenv("DDPSCOPE_TEST_PNGS");
  if (dir.isEmpty()) return;
  QDir().mkpath(QString::fromLocal8Bit(dir));
  widget->grab().save(QString::fromLocal8Bit(dir) + QLatin1Char('/') + name);
}

LanePlottable* laneOf(TimelineView* view, LaneKind kind, analysis::StreamRole role,
                      std::int32_t rank_index = 0) {
  for (auto* l : view->lanes())
    if (l->lane().kind == kind && l->lane().rank_index == rank_index &&
        (kind != LaneKind::Stream || l->lane().role == role))
      return l;
  return nullptr;
}

// The rows of a lane's boxes in a grab of the plot, and the share of its pixels in `colour`.
double shareOfColour(const QImage& image, const LanePlottable* lane, QCustomPlot* plot,
                     const QColor& colour) {
  const int y0 = static_cast<int>(std::lround(plot->yAxis->coordToPixel(lane->top()))) + 3;
  const int y1 = static_cast<int>(std::lround(plot->yAxis->coordToPixel(lane->bottom()))) - 3;
  const QRect r = plot->axisRect()->rect();
  long hit = 0, all = 0;
  for (int y = y0; y < y1; ++y) {
    for (int x = r.left(); x < r.right(); ++x) {
      ++all;
      hit += QColor(image.pixel(x, y)) == colour ? 1 : 0;
    }
  }
  return all ? static_cast<double>(hit) / static_cast<double>(all) : 0.0;
}
}  // namespace

TEST(UiTimelineDensity, ResnetAtFullViewShowsHowBusyTheComputeStreamIs) {
  auto w = openWindow(kResnet);
  const auto run = w->session()->current();
  ASSERT_TRUE(run);
  auto* plot = w->timeline()->plot();
  LanePlottable* compute = laneOf(w->timeline(), LaneKind::Stream, analysis::StreamRole::Compute);
  ASSERT_NE(compute, nullptr);
  const ViewWindow win = compute->currentWindow();
  const auto& occ = compute->occupancy();
  ASSERT_EQ(static_cast<int>(occ.size()), win.width);
  // Σ occupancy × column length is the stream's busy time in the window: at full view, the
  // analysis's busy time of the stream (StreamReport::busy_ns), up to float rounding.
  const double ns_per_col = static_cast<double>(win.hi - win.lo) / win.width;
  double busy = 0;
  for (const float f : occ)
    busy += static_cast<double>(f) * ns_per_col;
  TimeNs want = 0;
  for (const auto& s : run->report.ranks[0].streams)
    if (s.stream == compute->lane().stream) want = s.busy_ns;
  ASSERT_GT(want, 0);
  EXPECT_NEAR(busy, static_cast<double>(want), 1e-4 * static_cast<double>(want));
  // The stream is busy about a quarter of its span: the painted lane is far from solid. Columns
  // are drawn at their occupancy, so the compute colour covers about the busy share of the
  // lane's area (boxes drawn whole add their edge columns).
  const double busy_share = static_cast<double>(want) / static_cast<double>(win.hi - win.lo);
  EXPECT_LT(busy_share, 0.5);
  const QImage image = plot->toPixmap().toImage();
  const double painted = shareOfColour(image, compute, plot, colours::kCompute);
  EXPECT_GT(painted, 0.5 * busy_share) << "painted " << painted << " busy " << busy_share;
  EXPECT_LT(painted, 0.6) << "the compute lane is drawn nearly solid: " << painted;
  keep(w.get(), "density-resnet-full-view.png");
  // Zoomed into one step the same holds column by column: the busy time in the window.
  ASSERT_TRUE(w->timeline()->goToStep(5));
  plot->replot(QCustomPlot::rpImmediateRefresh);
  const ViewWindow step_win = compute->currentWindow();
  double step_busy = 0;
  const double step_col = static_cast<double>(step_win.hi - step_win.lo) / step_win.width;
  for (const float f : compute->occupancy())
    step_busy += static_cast<double>(f) * step_col;
  const auto& track = run->run.ranks[0].tracks[static_cast<std::size_t>(compute->lane().track)];
  const double want_step =
      static_cast<double>(analysis::streamBusyWithin(track, step_win.lo, step_win.hi));
  EXPECT_NEAR(step_busy, want_step, 1e-4 * want_step);
  keep(w.get(), "density-resnet-step5.png");
}

TEST(UiTimelineKinds, CommunicationIsColouredByCollectiveAndTheLegendSaysWhich) {
  auto w = openWindow(kResnet);
  const auto run = w->session()->current();
  LanePlottable* comm =
      laneOf(w->timeline(), LaneKind::Stream, analysis::StreamRole::Communication);
  ASSERT_NE(comm, nullptr);
  const auto& ev = comm->lane().events;
  ASSERT_GT(ev.size(), 0u);
  // Every piece of the comm lane is drawn in its kernel's collective colour: the kind the run's
  // rules give the kernel's name.
  std::set<analysis::CollectiveKind> kinds;
  const auto& rank = run->run.ranks[0];
  const auto& track = rank.tracks[static_cast<std::size_t>(comm->lane().track)];
  for (std::size_t i = 0; i < ev.size(); ++i) {
    const auto src = ev.source(i);
    const auto c =
        run->rules->classify(track.kind_of[src], rank.names[track.name[src]], track.stream());
    ASSERT_EQ(c.cls, analysis::ActivityClass::Communication);
    ASSERT_EQ(commKindOfStyle(ev.style(i)), c.kind) << i;
    kinds.insert(c.kind);
  }
  EXPECT_TRUE(kinds.contains(analysis::CollectiveKind::AllReduce));
  EXPECT_EQ(styleColour(commKindStyle(analysis::CollectiveKind::AllReduce, false)),
            colours::kAllReduce);
  // The legend names exactly the kinds drawn.
  const QStringList legend = w->timeline()->legendTexts();
  EXPECT_TRUE(legend.contains("compute")) << legend.join(", ").toStdString();
  for (int k = 1; k < analysis::kCollectiveKindCount - 1; ++k) {
    const auto kind = static_cast<analysis::CollectiveKind>(k);
    EXPECT_EQ(legend.contains(QString::fromUtf8(analysis::collectiveKindName(kind).data())),
              kinds.contains(kind))
        << k << ": " << legend.join(", ").toStdString();
  }
  // Every kind's colour differs from the role colours and from the other kinds'.
  std::vector<QColor> seen = {colours::kCompute, colours::kCommHidden, colours::kCommExposed,
                              colours::kMemory, colours::kSync};
  for (int k = 1; k < analysis::kCollectiveKindCount; ++k) {
    const QColor c = collectiveKindColour(static_cast<analysis::CollectiveKind>(k));
    for (const QColor& other : seen)
      EXPECT_NE(c, other) << "kind " << k;
    seen.push_back(c);
  }
}

TEST(UiTimelineKinds, AnFsdpStyleTraceShowsReduceScatterAndAllGather) {
  app();
  ddpscope::testing::TraceBuilder b;
  b.step(0, 0, 20'000);
  b.kernel("gemm", 0, 8'000);
  b.add({"ncclDevKernel_AllGather_RING_LL", 1'000, 2'000, 40, 0, trace::EventKind::Kernel, 0, 0});
  b.add({"ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 9'000, 3'000, 40, 0,
         trace::EventKind::Kernel, 0, 0});
  trace::Run r;
  r.ranks.push_back(b.build());
  MainWindow w;
  w.setErrorDialogsEnabled(false);
  w.resize(1400, 700);
  w.show();
  w.session()->addRun(prepareRun(std::move(r), {QStringLiteral("fsdp")}));
  QApplication::processEvents();
  const QStringList legend = w.timeline()->legendTexts();
  EXPECT_TRUE(legend.contains("all_gather")) << legend.join(", ").toStdString();
  EXPECT_TRUE(legend.contains("reduce_scatter"));
  EXPECT_FALSE(legend.contains("allreduce"));
  const auto run = w.session()->current();
  std::map<analysis::CollectiveKind, TimeNs> by_kind;
  for (const auto& lane : run->timeline.lanes)
    for (std::size_t i = 0; i < lane.events.size(); ++i)
      if (isCommKindStyle(lane.events.style(i)))
        by_kind[commKindOfStyle(lane.events.style(i))] += lane.events.end(i) - lane.events.start(i);
  EXPECT_EQ(by_kind[analysis::CollectiveKind::AllGather], 2'000);
  EXPECT_EQ(by_kind[analysis::CollectiveKind::ReduceScatter], 3'000);
  auto* plot = w.timeline()->plot();
  plot->replot(QCustomPlot::rpImmediateRefresh);
  keep(&w, "kinds-fsdp.png");
  // On screen: the all-gather in sand, the reduce-scatter in rose over the exposed band (it runs
  // after the compute), the all-gather without one (hidden under the gemm).
  LanePlottable* comm = laneOf(w.timeline(), LaneKind::Stream, analysis::StreamRole::Communication);
  ASSERT_NE(comm, nullptr);
  const QImage image = plot->toPixmap().toImage();
  EXPECT_GT(shareOfColour(image, comm, plot, colours::kAllGather), 0.0);
  EXPECT_GT(shareOfColour(image, comm, plot, colours::kReduceScatter), 0.0);
  const double band = shareOfColour(image, comm, plot, colours::kCommExposed);
  EXPECT_GT(band, 0.0);
  // The band is a quarter of the reduce-scatter's height: less than its body.
  EXPECT_LT(band, shareOfColour(image, comm, plot, colours::kReduceScatter));
}

TEST(UiTimelineCollective, SelectingAKernelOutlinesItsCollectiveOnEveryRank) {
  auto w = openWindow(kSample);
  const auto run = w->session()->current();
  ASSERT_TRUE(run);
  ASSERT_GE(run->run.ranks.size(), 2u);
  ASSERT_FALSE(run->report.matched.empty());
  const std::size_t ranks = run->run.ranks.size();
  // A matched allreduce that rank 1 takes part in: select rank 1's kernel of it.
  std::size_t j = 0;
  while (j < run->report.matched.size() &&
         (run->report.matched[j].kind != analysis::CollectiveKind::AllReduce ||
          !run->report.matched[j].involves(1)))
    ++j;
  ASSERT_LT(j, run->report.matched.size());
  const auto& mc = run->report.matched[j];
  const auto k_track = mc.events[1].track;
  const auto k_index = static_cast<std::uint32_t>(mc.events[1].row);
  w->session()->selectEvent(EventRef{1, k_track, k_index});
  QApplication::processEvents();
  EXPECT_EQ(matchedCollectiveOf(run->timeline, 1, k_track, k_index), static_cast<std::int32_t>(j));
  const auto& marks = w->timeline()->collectiveMarks();
  std::size_t involved = 0;
  for (std::size_t r = 0; r < ranks; ++r)
    involved += mc.involves(r) ? 1 : 0;
  EXPECT_EQ(involved, ranks);  // an allreduce of the whole world
  ASSERT_EQ(marks.size(), involved);
  // Each outlined kernel is that rank's part of the collective: its start is the first start or
  // later, the last start is one of them, and its wait + transfer is its duration.
  TimeNs first = std::numeric_limits<TimeNs>::max(), last = std::numeric_limits<TimeNs>::min();
  for (const auto& m : marks) {
    const auto& t = run->run.ranks[static_cast<std::size_t>(m.rank_index)]
                        .tracks[static_cast<std::size_t>(m.track)];
    first = std::min(first, t.start[m.index]);
    last = std::max(last, t.start[m.index]);
    const auto r = static_cast<std::size_t>(m.rank_index);
    EXPECT_EQ(m.track, mc.events[r].track);
    EXPECT_EQ(static_cast<std::int64_t>(m.index), mc.events[r].row);
    EXPECT_EQ(mc.wait_ns[r] + mc.transfer_ns[r], t.dur[m.index]) << "rank " << r;
    if (mc.last_start_ns <= t.end(m.index)) {
      EXPECT_EQ(t.start[m.index] + mc.wait_ns[r], mc.last_start_ns) << "rank " << r;
    }
  }
  EXPECT_EQ(first, mc.first_start_ns);
  EXPECT_EQ(last, mc.last_start_ns);
  // The tooltip of the kernel states the collective's skew, its late rank and this rank's parts.
  LanePlottable* lane = nullptr;
  for (auto* l : w->timeline()->lanes())
    if (l->lane().kind == LaneKind::Stream && l->lane().rank_index == 1 &&
        l->lane().track == k_track)
      lane = l;
  ASSERT_NE(lane, nullptr);
  std::size_t item = 0;
  while (item < lane->lane().events.size() && lane->lane().events.source(item) != k_index)
    ++item;
  ASSERT_LT(item, lane->lane().events.size());
  DrawBox box;
  box.first = static_cast<std::uint32_t>(item);
  box.count = 1;
  const QString tip = laneBoxTooltip(*run, lane->lane(), box);
  EXPECT_TRUE(tip.contains("allreduce")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("skew")) << tip.toStdString();
  EXPECT_TRUE(tip.contains("late rank"));
  EXPECT_TRUE(tip.contains("wait (this rank)"));
  EXPECT_TRUE(tip.contains("transfer (this rank)"));
  EXPECT_TRUE(tip.contains(mc.last_rank < 0 ? QStringLiteral("none")
                                            : QStringLiteral("rank %1").arg(mc.last_rank)));
  // Zoomed on it, every rank's outline is visible.
  const TimeNs pad = (mc.last_start_ns - mc.first_start_ns) + 200'000;
  w->session()->setViewRange({mc.first_start_ns - pad, mc.last_start_ns + pad});
  w->timeline()->plot()->replot(QCustomPlot::rpImmediateRefresh);
  keep(w.get(), "collective-on-every-rank.png");
  // Clearing the selection clears the outlines.
  w->session()->selectEvent(std::nullopt);
  EXPECT_TRUE(w->timeline()->collectiveMarks().empty());
}

TEST(UiTimelineSearch, ARegularExpressionFindsHighlightsAndStepsThroughKernels) {
  auto w = openWindow(kResnet);
  const auto run = w->session()->current();
  TimelineView* view = w->timeline();
  // Ctrl+F focuses the field.
  QAction* find = nullptr;
  for (QAction* a : w->findChildren<QAction*>())
    if (a->shortcut() == QKeySequence(QKeySequence::Find)) find = a;
  ASSERT_NE(find, nullptr);
  find->trigger();
  QApplication::processEvents();
  EXPECT_EQ(w->focusWidget(), view->searchBar()->field());
  // An independent count, from the trace model: the events the lanes draw (GPU activity and GPU
  // annotations of the GPU tracks, every event of the host threads) whose name contains "nccl".
  // From the JSON with python: 21 kernels, 21 gpu_user_annotation and 21 user_annotation events.
  std::size_t want = 0;
  for (const auto& r : run->run.ranks)
    for (const auto& t : r.tracks)
      for (std::size_t i = 0; i < t.size(); ++i)
        if ((t.kind == trace::TrackKind::Host || trace::isGpuActivity(t.kind_of[i]) ||
             t.kind_of[i] == trace::EventKind::GpuAnnotation) &&
            QString::fromStdString(r.names[t.name[i]]).contains("nccl", Qt::CaseSensitive))
          ++want;
  EXPECT_EQ(want, 63u);
  EXPECT_TRUE(view->search(QStringLiteral("nccl")));
  EXPECT_EQ(view->matches().size(), want);
  for (std::size_t i = 1; i < view->matches().size(); ++i)
    EXPECT_LE(view->matches()[i - 1].start, view->matches()[i].start);
  EXPECT_EQ(view->searchBar()->countText(), QStringLiteral("%1 matches").arg(want));
  // Every match is outlined in its lane (the lanes' match lists hold them all at full view).
  std::size_t outlined = 0;
  for (auto* l : view->lanes())
    for (const auto& b : l->matchList())
      outlined += b.count;
  EXPECT_EQ(outlined, want);
  // Next / previous walk the matches and wrap; the view shows the current one.
  view->showMatch(0);
  view->nextMatch();
  EXPECT_EQ(view->currentMatch(), 1);
  EXPECT_EQ(view->searchBar()->countText(), QStringLiteral("2 / %1").arg(want));
  const auto& m = view->matches()[1];
  const TimeRange r = w->session()->viewRange();
  EXPECT_LE(r.lo, m.start);
  EXPECT_GE(r.hi, m.end);
  view->previousMatch();
  view->previousMatch();
  EXPECT_EQ(view->currentMatch(), static_cast<int>(want) - 1);
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  keep(w.get(), "search-nccl.png");
  // Anchored expressions, and no match.
  EXPECT_TRUE(view->search(QStringLiteral("^nccl.*(?i)allreduce")));  // kernels only
  EXPECT_GT(view->matches().size(), 0u);
  EXPECT_LT(view->matches().size(), want);  // the broadcast is not an allreduce
  EXPECT_EQ(view->searchBar()->field()->text(), QStringLiteral("^nccl.*(?i)allreduce"));
  EXPECT_TRUE(view->search(QStringLiteral("no such kernel")));
  EXPECT_TRUE(view->matches().empty());
  EXPECT_EQ(view->searchBar()->countText(), QStringLiteral("no match"));
  // An expression that does not compile says so and highlights nothing.
  // The status bar no longer says "match 2 of 21" from before.
  QString status;
  QObject::connect(view, &TimelineView::statusMessage, [&](const QString& t) { status = t; });
  view->searchBar()->field()->setText(QStringLiteral("gemm("));
  EXPECT_FALSE(view->search(QStringLiteral("gemm(")));
  EXPECT_TRUE(view->matches().empty());
  EXPECT_EQ(view->searchBar()->countText(), QStringLiteral("invalid expression"));
  EXPECT_TRUE(status.contains(QStringLiteral("not a valid regular expression")))
      << status.toStdString();
}

TEST(UiTimelineSearch, HostLanesCpuOpsAnnotationsAndLaunchesAreSearched) {
  auto w = openWindow(kResnet);
  const auto run = w->session()->current();
  const auto& rank = run->run.ranks[0];
  TimelineView* view = w->timeline();
  // Counted once from the JSON with python (gzip + json, events with ph "X", re.search on the
  // name): 147 cpu_op events named aten::relu or aten::relu_, all on thread 2910249; 2700
  // cuda_runtime cudaLaunchKernel calls; 3 user_annotation ranges ProfilerStep#N.
  EXPECT_TRUE(view->search(QStringLiteral("^aten::relu_?$")));
  EXPECT_EQ(view->matches().size(), 147u);
  EXPECT_EQ(view->searchBar()->countText(), QStringLiteral("147 matches"));
  for (const auto& m : view->matches()) {
    EXPECT_EQ(m.kind, LaneKind::Host);
    const auto& t = rank.tracks[static_cast<std::size_t>(m.track)];
    EXPECT_EQ(t.kind_of[m.index], trace::EventKind::CpuOp);
    EXPECT_EQ(t.tid, 2910249);
  }
  EXPECT_TRUE(view->search(QStringLiteral("cudaLaunchKernel")));
  EXPECT_EQ(view->matches().size(), 2700u);
  EXPECT_TRUE(view->search(QStringLiteral("ProfilerStep#\\d+")));
  EXPECT_EQ(view->matches().size(), 3u);

  // The relu ops are nested (inside forward, the model's modules): every match sits on a deeper
  // row of the main thread, which starts collapsed; at full view the collapsed thread's first row
  // outlines them all.
  EXPECT_TRUE(view->search(QStringLiteral("^aten::relu_?$")));
  const auto& first = view->matches().front();
  EXPECT_GT(first.row, 0);
  EXPECT_FALSE(view->hostGroupExpanded(first.rank_index, first.track));
  view->fit();
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  std::size_t outlined = 0;
  for (auto* l : view->lanes())
    for (const auto& b : l->matchList())
      outlined += b.count;
  EXPECT_EQ(outlined, 147u);
  // Next opens the thread, moves to the match and scrolls its row into view.
  view->nextMatch();
  const int cur = view->currentMatch();
  ASSERT_GE(cur, 0);
  const auto& m = view->matches()[static_cast<std::size_t>(cur)];
  EXPECT_TRUE(view->hostGroupExpanded(m.rank_index, m.track));
  const LanePlottable* lane = view->laneShowing(m.rank_index, m.track, m.index);
  ASSERT_NE(lane, nullptr);
  EXPECT_EQ(lane->lane().depth, m.row);
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  const QCPRange y = view->plot()->yAxis->range();
  EXPECT_GE(lane->top(), y.lower);
  EXPECT_LE(lane->bottom(), y.upper);
  const TimeRange r = w->session()->viewRange();
  EXPECT_LE(r.lo, m.start);
  EXPECT_GE(r.hi, m.end);
  EXPECT_EQ(view->searchBar()->countText(), QStringLiteral("%1 / 147").arg(cur + 1));
  // The matches stay after the thread opened, each on its own row: the current one is outlined
  // in its row.
  EXPECT_FALSE(lane->matchList().empty());
  keep(w.get(), "search-host-relu.png");
  // Previous from a collapsed thread opens it too.
  view->setHostGroupExpanded(m.rank_index, m.track, false);
  EXPECT_EQ(view->currentMatch(), cur);
  view->previousMatch();
  EXPECT_TRUE(view->hostGroupExpanded(m.rank_index, m.track));
  EXPECT_EQ(view->currentMatch(), (cur + 146) % 147);
}

TEST(UiTimelineSearch, GoToStepZoomsToTheStep) {
  auto w = openWindow(kResnet);
  const auto run = w->session()->current();
  const auto& steps = run->run.ranks[0].steps;
  ASSERT_FALSE(steps.empty());
  const auto& st = steps[1];
  auto* box = w->timeline()->searchBar()->stepBox();
  EXPECT_TRUE(box->isEnabled());
  EXPECT_EQ(box->minimum(), steps.front().number);
  EXPECT_EQ(box->maximum(), steps.back().number);
  ASSERT_TRUE(w->timeline()->goToStep(st.number));
  const TimeRange r = w->session()->viewRange();
  EXPECT_LE(r.lo, st.start);
  EXPECT_GE(r.hi, st.end);
  EXPECT_LT(r.length(), (st.end - st.start) * 11 / 10);
  EXPECT_FALSE(w->timeline()->goToStep(9999));
}

TEST(UiTimelineExport, AZoomedExportTitleGivesTheWindowAndItsFigures) {
  auto w = openWindow(kResnet);
  const auto run = w->session()->current();
  TimelineView* view = w->timeline();
  // The whole run: the run's figures only.
  view->fit();
  EXPECT_FALSE(view->exportTitleText().contains(QStringLiteral("window ")));
  // Zoomed to step 5 of rank 0 (the figures' first step, communication in it).
  const auto& steps = run->run.ranks[0].steps;
  ASSERT_GE(steps.size(), 2u);
  const auto& st = steps[1];
  w->session()->setViewRange({st.start, st.end});
  view->plot()->replot(QCustomPlot::rpImmediateRefresh);
  // The window's figures computed apart from the view: the activities from the whole analysis
  // (analyzeRun) with the run's rules, then the library's function for that window.
  analysis::AnalysisOptions options;
  options.rules = run->rules;
  std::vector<analysis::RankActivity> activities;
  analysis::analyzeRun(run->run, options, &activities);
  const auto f = analysis::windowFigures(activities, st.start, st.end);
  // Cross-checks of the function on this window: the status bar's overlap of a selected range,
  // and the GPU busy time as the union of the trace's GPU work inside it (syncs are not work).
  ASSERT_TRUE(f.overlap_pct.has_value());
  EXPECT_NEAR(*f.overlap_pct, *run->overlap[0].pctWithin(st.start, st.end), 1e-9);
  std::vector<analysis::Interval> gpu;
  for (const auto& t : run->run.ranks[0].tracks)
    for (std::size_t i = 0; i < t.size(); ++i)
      if (trace::occupiesGpu(t.kind_of[i])) gpu.push_back({t.start[i], t.end(i)});
  const TimeNs busy = analysis::lengthWithin(analysis::unionOf(gpu), st.start, st.end);
  EXPECT_EQ(f.busy_ns, busy);
  EXPECT_NEAR(*f.gpu_idle_pct,
              100.0 * static_cast<double>((st.end - st.start) - busy) /
                  static_cast<double>(st.end - st.start),
              1e-9);
  const QString line = QString::fromStdString(analysis::windowFigureText(f));
  EXPECT_TRUE(line.startsWith(QStringLiteral("window ")));
  const QString title = view->exportTitleText();
  EXPECT_TRUE(title.contains(line)) << title.toStdString() << "\nwant " << line.toStdString();
  // The export itself: a title row more than the whole run's.
  QString error;
  const QByteArray dir = qgetenv("DDPSCOPE_TEST_PNGS");
  const QString path = (dir.isEmpty() ? QDir::tempPath() : QString::fromLocal8Bit(dir)) +
                       QStringLiteral("/export-zoomed-step.png");
  if (!dir.isEmpty()) QDir().mkpath(QString::fromLocal8Bit(dir));
  ASSERT_TRUE(view->exportImage(path, 1.0, &error)) << error.toStdString();
  const QImage zoomed(path);
  view->fit();
  ASSERT_TRUE(view->exportImage(path + QStringLiteral(".whole.png"), 1.0, &error));
  const QImage whole(path + QStringLiteral(".whole.png"));
  EXPECT_GT(zoomed.height(), whole.height());
  if (dir.isEmpty()) {
    QFile::remove(path);
    QFile::remove(path + QStringLiteral(".whole.png"));
  }
}
