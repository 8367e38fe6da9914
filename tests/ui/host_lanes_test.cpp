// The host side of the timeline: nesting depths, host colours, the enclosing op, launches
// resolved by correlation id, and the host lanes of the ResNet-50 reference trace (figures
// counted independently from its JSON).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>

#include "app/analysis/launches.h"
#include "app/analysis/step_breakdown.h"
#include "app/ui/details_panel.h"
#include "app/ui/host_lanes.h"
#include "app/ui/session.h"
#include "app/ui/timeline_model.h"
#include "app/ui/timeline_tooltip.h"
#include "app/ui/timeline_view.h"
#include "tests/common/trace_builder.h"
#include "tests/ui/ui_test_app.h"
#include "tracer/format/run_loader.h"

using namespace ddpscope;
using namespace ddpscope::ui;
using trace::EventKind;

namespace {
trace::Track hostTrack(const std::vector<std::pair<TimeNs, TimeNs>>& spans,
                       const std::vector<EventKind>& kinds = {}) {
  trace::Track t;
  for (std::size_t i = 0; i < spans.size(); ++i) {
    trace::EventRow r;
    r.start = spans[i].first;
    r.dur = spans[i].second;
    r.kind = i < kinds.size() ? kinds[i] : EventKind::CpuOp;
    t.push(r);
  }
  return t;
}

// Adds a host event on thread `tid` (the builder puts every host event on thread 1).
void hostEvent(ddpscope::testing::TraceBuilder& b, std::int64_t tid, const std::string& name,
               TimeNs start, TimeNs dur, EventKind kind,
               std::int64_t correlation = trace::kNoCorrelation) {
  auto& tr = b.trace();
  const auto ti = tr.trackIndex(trace::TrackKind::Host, 100, tid);
  tr.tracks[static_cast<std::size_t>(ti)].push(
      {start, dur, tr.names.intern(name), tr.names.intern(trace::categoryName(kind)), kind,
       correlation, trace::kNoBucket, trace::kNoStep, trace::kNoBytes});
}
}  // namespace

TEST(HostLanes, DepthsFollowContainment) {
  // A [0,100) holds B [10,40) which holds C [15,20); D [40,60) starts as B ends, so it is not
  // inside B; E [50,55) is inside D; F [100,110) starts as A ends; G, zero-length at 105, is
  // inside F; H [120,130); I [125,140) starts inside H and outlasts it (one deeper); J [132,135)
  // starts inside I after H ended (deeper still: rows never overlap); K [140,150) is inside none.
  const auto t = hostTrack({{0, 100},
                            {10, 30},
                            {15, 5},
                            {40, 20},
                            {50, 5},
                            {100, 10},
                            {105, 0},
                            {120, 10},
                            {125, 15},
                            {132, 3},
                            {140, 10}});
  EXPECT_EQ(nestingDepths(t), (std::vector<std::uint16_t>{0, 1, 2, 1, 2, 0, 1, 0, 1, 2, 0}));
  EXPECT_TRUE(nestingDepths(trace::Track{}).empty());
}

TEST(HostLanes, RowsNeverOverlapAndNestedCallsAreDeeper) {
  // Random call trees (every child inside its parent): the depth is the tree depth, and no two
  // events of one depth overlap.
  std::mt19937 rng(7);
  for (int round = 0; round < 50; ++round) {
    std::vector<std::pair<TimeNs, TimeNs>> spans;
    std::vector<std::uint16_t> want;
    // Each node: a span and its depth; children split the parent's time.
    std::function<void(TimeNs, TimeNs, std::uint16_t)> grow = [&](TimeNs s, TimeNs e,
                                                                  std::uint16_t d) {
      spans.emplace_back(s, e - s);
      want.push_back(d);
      if (d >= 6 || e - s < 4) return;
      TimeNs cursor = s;
      const int kids = static_cast<int>(rng() % 4);
      for (int k = 0; k < kids && cursor < e; ++k) {
        const TimeNs gap = static_cast<TimeNs>(rng() % 3);
        const TimeNs len =
            1 + static_cast<TimeNs>(
                    rng() % static_cast<std::uint32_t>(std::max<TimeNs>(1, (e - cursor) / 2)));
        if (cursor + gap + len > e) break;
        grow(cursor + gap, cursor + gap + len, static_cast<std::uint16_t>(d + 1));
        cursor += gap + len;
      }
    };
    TimeNs at = 0;
    for (int root = 0; root < 5; ++root) {
      const TimeNs len = 50 + static_cast<TimeNs>(rng() % 200);
      grow(at, at + len, 0);
      at += len + static_cast<TimeNs>(rng() % 3);
    }
    // Track order: start ascending, longer first (pre-order of the tree is that order).
    const auto t = hostTrack(spans);
    const auto depth = nestingDepths(t);
    ASSERT_EQ(depth, want) << "round " << round;
    std::map<std::uint16_t, TimeNs> row_end;
    for (std::size_t i = 0; i < t.size(); ++i) {
      auto [it, fresh] = row_end.try_emplace(depth[i], t.end(i));
      if (!fresh) {
        EXPECT_LE(it->second, t.start[i]) << "round " << round << " event " << i;
        it->second = t.end(i);
      }
    }
  }
}

TEST(HostLanes, ColoursByKindAndName) {
  EXPECT_EQ(hostStyleOf(EventKind::Runtime, "cudaLaunchKernel"), kStyleHostLaunch);
  EXPECT_EQ(hostStyleOf(EventKind::Driver, "cuLaunchKernel"), kStyleHostLaunch);
  EXPECT_EQ(hostStyleOf(EventKind::UserAnnotation, "nccl:all_reduce"), kStyleHostComm);
  EXPECT_EQ(hostStyleOf(EventKind::CpuOp, "nccl:broadcast"), kStyleHostComm);
  EXPECT_EQ(hostStyleOf(EventKind::UserAnnotation, "DistributedDataParallel.forward"),
            kStyleHostComm);
  EXPECT_EQ(hostStyleOf(EventKind::CpuOp, "c10d::allreduce_"), kStyleHostComm);
  EXPECT_EQ(hostStyleOf(EventKind::UserAnnotation,
                        "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"),
            kStyleHostDataLoader);
  // Data loading is the step breakdown's data loader range, not any name mentioning a loader.
  EXPECT_EQ(hostStyleOf(EventKind::CpuOp, "enumerate(DataLoader)#_MultiProcessingDataLoaderIter"),
            kStyleHostDataLoader);
  EXPECT_EQ(hostStyleOf(EventKind::CpuOp, "_MultiProcessingDataLoaderIter._next_data"),
            kStyleHostOp);
  EXPECT_EQ(hostStyleOf(EventKind::UserAnnotation, "build_dataloader"), kStyleHostAnnotation);
  for (const std::string_view n :
       {"enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "enumerate(DataLoader)",
        "DataLoader", "my_dataloader", "x enumerate(DataLoader)", "aten::mm"})
    EXPECT_EQ(hostStyleOf(EventKind::UserAnnotation, n) == kStyleHostDataLoader,
              analysis::isDataLoaderRange(n))
        << n;
  EXPECT_EQ(hostStyleOf(EventKind::UserAnnotation, "ProfilerStep#5"), kStyleHostAnnotation);
  EXPECT_EQ(hostStyleOf(EventKind::CpuOp, "aten::conv2d"), kStyleHostOp);
  EXPECT_EQ(hostStyleOf(EventKind::Other, "something"), kStyleHostOp);
  // Six distinct colours, none a GPU lane's style.
  const std::set<std::uint8_t> styles{kStyleHostOp,   kStyleHostAnnotation, kStyleHostLaunch,
                                      kStyleHostComm, kStyleHostDataLoader, kStyleGpuAnnotation};
  EXPECT_EQ(styles.size(), 6u);
  for (const auto st : styles) {
    EXPECT_FALSE(isCommKindStyle(st));
    EXPECT_LT(st, kStyleCount);
  }
}

TEST(HostLanes, EnclosingOpIsTheInnermostContainingOp) {
  // aten::linear [0,100) ⊃ aten::addmm [10,60) ⊃ cudaLaunchKernel [20,30); a second launch
  // [70,75) inside aten::linear only; a launch [200,205) inside nothing.
  const auto t = hostTrack({{0, 100}, {10, 50}, {20, 10}, {70, 5}, {200, 5}},
                           {EventKind::CpuOp, EventKind::CpuOp, EventKind::Runtime,
                            EventKind::Runtime, EventKind::Runtime});
  EXPECT_EQ(enclosingRange(t, 2), 1);
  EXPECT_EQ(enclosingRange(t, 3), 0);
  EXPECT_EQ(enclosingRange(t, 4), -1);
  EXPECT_EQ(enclosingRange(t, 1), 0);
  EXPECT_EQ(enclosingRange(t, 0), -1);
  EXPECT_EQ(enclosingRange(t, 2, 1), 1);
  EXPECT_EQ(enclosingRange(t, 3, 0), -1);  // looks back at nothing
}

TEST(Launches, ResolvedByCorrelationBothWays) {
  ddpscope::testing::TraceBuilder b;
  // Host calls: corr 1, 2 (a graph: two kernels), 3 (launched nothing recorded), 4 (a copy).
  b.add({"cudaLaunchKernel", 100, 10, 1, 0, EventKind::Runtime, -1, -1, 1});
  b.add({"cudaGraphLaunch", 200, 10, 1, 0, EventKind::Runtime, -1, -1, 2});
  b.add({"cudaLaunchKernel", 300, 10, 1, 0, EventKind::Runtime, -1, -1, 3});
  b.add({"cuMemcpyAsync", 400, 10, 1, 0, EventKind::Driver, -1, -1, 4});
  b.add({"aten::mm", 90, 400, 1, 0, EventKind::CpuOp, -1, -1, 99});  // not a launch
  b.add({"gemm", 130, 50, 7, 0, EventKind::Kernel, -1, -1, 1});
  b.add({"graph_a", 260, 50, 7, 0, EventKind::Kernel, -1, -1, 2});
  b.add({"graph_b", 320, 50, 7, 0, EventKind::Kernel, -1, -1, 2});
  b.add({"copy", 450, 20, 9, 0, EventKind::Memcpy, -1, -1, 4});
  b.add({"orphan", 500, 20, 7, 0, EventKind::Kernel, -1, -1, 5});         // no host call
  b.add({"annot", 130, 500, 7, 0, EventKind::GpuAnnotation, -1, -1, 1});  // not GPU work
  b.add({"mm_kernel", 600, 20, 7, 0, EventKind::Kernel, -1, -1, 99});     // a CPU op's id
  const auto rank = b.build();
  const auto links = analysis::resolveLaunches(rank);
  ASSERT_EQ(links.size(), 4u);
  auto name = [&](std::int32_t track, std::uint32_t i) {
    return rank.names[rank.tracks[static_cast<std::size_t>(track)].name[i]];
  };
  EXPECT_EQ(links[0].correlation, 1);
  EXPECT_EQ(name(links[0].host_track, links[0].host_index), "cudaLaunchKernel");
  EXPECT_EQ(name(links[0].gpu_track, links[0].gpu_index), "gemm");
  const auto graph = analysis::launchLinks(links, 2);
  ASSERT_EQ(graph.size(), 2u);
  EXPECT_EQ(name(graph[0].host_track, graph[0].host_index), "cudaGraphLaunch");
  EXPECT_EQ(name(graph[0].gpu_track, graph[0].gpu_index), "graph_a");
  EXPECT_EQ(name(graph[1].gpu_track, graph[1].gpu_index), "graph_b");
  const auto copy = analysis::launchLinks(links, 4);
  ASSERT_EQ(copy.size(), 1u);
  EXPECT_EQ(name(copy[0].gpu_track, copy[0].gpu_index), "copy");
  EXPECT_TRUE(analysis::launchLinks(links, 3).empty());
  EXPECT_TRUE(analysis::launchLinks(links, 5).empty());
  EXPECT_TRUE(analysis::launchLinks(links, 99).empty());
  EXPECT_TRUE(analysis::launchLinks(links, trace::kNoCorrelation).empty());
  // The index resolves each id on demand to the same links.
  const analysis::LaunchIndex index(rank);
  for (const std::int64_t c :
       {std::int64_t{1}, std::int64_t{2}, std::int64_t{3}, std::int64_t{4}, std::int64_t{5},
        std::int64_t{99}, std::int64_t{1000}, trace::kNoCorrelation}) {
    const auto want = analysis::launchLinks(links, c);
    EXPECT_EQ(index.links(rank, c), std::vector<analysis::LaunchLink>(want.begin(), want.end()))
        << c;
  }
  EXPECT_EQ(analysis::launchLatency(100, 130), 30);
  // No host calls, no links.
  EXPECT_TRUE(analysis::resolveLaunches(ddpscope::testing::twoBuckets().build()).empty());
}

TEST(Launches, OnlyTheLaunchReportsWhatItLaunched) {
  // One thread: aten::mm [0,500) and the launches inside it all carry correlation 5; the call
  // at 100 is the launch of gemm (the first in track order), the call at 200 a second call with
  // the same id. Neither the op nor the second call launched anything.
  ddpscope::testing::TraceBuilder b;
  b.add({"aten::mm", 0, 500, 1, 0, EventKind::CpuOp, -1, -1, 5});
  b.add({"cudaLaunchKernel", 100, 10, 1, 0, EventKind::Runtime, -1, -1, 5});
  b.add({"cudaLaunchKernel", 200, 10, 1, 0, EventKind::Runtime, -1, -1, 5});
  b.add({"gemm", 300, 50, 7, 0, EventKind::Kernel, -1, -1, 5});
  trace::Run built;
  built.ranks.push_back(b.build());
  const std::shared_ptr<const LoadedRun> run = prepareRun(std::move(built), {});
  const auto& rank = run->run.ranks[0];
  const auto& links = run->timeline.launches[0];
  ASSERT_EQ(links.links(rank, 5).size(), 1u);
  std::int32_t host = -1, gpu = -1;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti)
    (rank.tracks[ti].kind == trace::TrackKind::Host ? host : gpu) = static_cast<std::int32_t>(ti);
  const auto& ht = rank.tracks[static_cast<std::size_t>(host)];
  ASSERT_EQ(ht.size(), 3u);  // track order: aten::mm, the call at 100, the call at 200
  ASSERT_EQ(ht.start, (trace::Column<TimeNs>{0, 100, 200}));
  const auto launched = links.launchesOf(rank, 5, host, 1);
  ASSERT_EQ(launched.size(), 1u);
  EXPECT_EQ(launched[0].gpu_track, gpu);
  EXPECT_EQ(launched[0].gpu_index, 0u);
  EXPECT_TRUE(links.launchesOf(rank, 5, host, 0).empty());
  EXPECT_TRUE(links.launchesOf(rank, 5, host, 2).empty());
  EXPECT_TRUE(links.launchesOf(rank, 6, host, 1).empty());
  EXPECT_TRUE(links.launchesOf(rank, 5, gpu, 0).empty());
  // The same over the links resolved whole.
  const auto all = analysis::resolveLaunches(rank);
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(analysis::launchesOf(all, 5, host, 1).size(), 1u);
  EXPECT_TRUE(analysis::launchesOf(all, 5, host, 2).empty());

  // The tooltip and Details of each host event: only the call at 100 names gemm; and only it
  // gets the arrow to gemm.
  ddpscope::ui::testing::app();
  Session session;
  DetailsPanel details(&session);
  TimelineView view(&session);
  session.addRun(run);
  std::vector<const Lane*> lane_of(3, nullptr);
  std::vector<std::uint32_t> box_of(3, 0);
  for (const Lane* l : run->timeline.lanesOf(LaneKind::Host, 0))
    for (std::uint32_t k = 0; k < l->events.size(); ++k) {
      lane_of[l->events.source(k)] = l;
      box_of[l->events.source(k)] = k;
    }
  for (std::uint32_t i = 0; i < 3; ++i) {
    ASSERT_NE(lane_of[i], nullptr) << i;
    const bool launch = i == 1;
    DrawBox box;
    box.x1 = 1;
    box.first = box_of[i];
    box.count = 1;
    box.busy_ns = ht.dur[i];
    const QString tip = laneBoxTooltip(*run, *lane_of[i], box);
    EXPECT_EQ(tip.contains(QStringLiteral("gemm")), launch) << i << ": " << tip.toStdString();
    EXPECT_EQ(tip.contains(QStringLiteral("launch latency")), launch) << i;
    session.selectEvent(EventRef{0, host, i});
    const QString text = details.text();
    EXPECT_EQ(text.contains(QStringLiteral("gemm")), launch) << i << ": " << text.toStdString();
    EXPECT_EQ(text.contains(QStringLiteral("launch latency")), launch) << i;
    EXPECT_EQ(view.flowMark().has_value(), launch) << i;
  }
  // The kernel's end: launched by the call at 100.
  session.selectEvent(EventRef{0, gpu, 0});
  ASSERT_TRUE(view.flowMark().has_value());
  EXPECT_EQ(view.flowMark()->host_index, 1u);
  EXPECT_TRUE(details.text().contains(QStringLiteral("launched by")))
      << details.text().toStdString();
}

TEST(Details, AStreamWithoutAnIdReadsNone) {
  // A GPU record without a stream is written with -1 or 2^32 - 1; the Details tab says "none", as
  // the lanes, tooltips and statistics do, not the sentinel.
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 0, 50, 0xFFFFFFFFll);
  trace::Run built;
  built.ranks.push_back(b.build());
  const std::shared_ptr<const LoadedRun> run = prepareRun(std::move(built), {});
  ddpscope::ui::testing::app();
  Session session;
  DetailsPanel details(&session);
  session.addRun(run);
  session.selectEvent(EventRef{0, 0, 0});
  const QString text = details.text();
  EXPECT_TRUE(text.contains(QStringLiteral("0 · none"))) << text.toStdString();
  EXPECT_FALSE(text.contains(QStringLiteral("4294967295"))) << text.toStdString();
}

TEST(HostLanes, ThreadIdsShownUnsignedWhenWrittenSigned) {
  EXPECT_EQ(threadIdText(2910249), "2910249");
  EXPECT_EQ(threadIdText(0), "0");
  EXPECT_EQ(threadIdText(-1), "4294967295");                      // 2^32 - 1
  EXPECT_EQ(threadIdText(-2147483648LL), "2147483648");           // 2^31
  EXPECT_EQ(threadIdText(-4294967296LL), "-4294967296");          // not a 32-bit id: as written
  EXPECT_EQ(threadIdText(140234567890123LL), "140234567890123");  // a 64-bit pthread id
}

TEST(HostLanes, ThreadsOrderedByLaunchCount) {
  // Threads 1 (one launch), 2 (three), 3 (none), 4 (three): the launching threads first, most
  // launches first (ties in track order), then the rest.
  ddpscope::testing::TraceBuilder b;
  std::int64_t corr = 1;
  for (const auto& [tid, launches] :
       std::vector<std::pair<std::int64_t, int>>{{1, 1}, {2, 3}, {3, 0}, {4, 3}}) {
    hostEvent(b, tid, "aten::mm", 0, 10, EventKind::CpuOp);
    for (int k = 0; k < launches; ++k, ++corr) {
      hostEvent(b, tid, "cudaLaunchKernel", 20 + 10 * k, 5, EventKind::Runtime, corr);
      b.add({"gemm", 1'000 * corr, 50, 7, 0, EventKind::Kernel, -1, -1, corr});
    }
  }
  trace::Run built;
  built.ranks.push_back(b.build());
  const auto run = prepareRun(std::move(built), {});
  const auto& rank = run->run.ranks[0];
  ASSERT_EQ(analysis::resolveLaunches(rank).size(), 7u);
  std::vector<std::int64_t> host_tids;  // in track order
  for (const auto& t : rank.tracks)
    if (t.kind == trace::TrackKind::Host) host_tids.push_back(t.tid);
  ASSERT_EQ(host_tids.size(), 4u);
  std::vector<std::int64_t> want;
  for (const auto tid : host_tids)  // the two with three launches, in track order
    if (tid == 2 || tid == 4) want.push_back(tid);
  want.push_back(1);
  want.push_back(3);
  std::vector<std::int64_t> order;
  for (const Lane* l : run->timeline.lanesOf(LaneKind::Host, 0))
    if (l->depth == 0) order.push_back(l->stream);
  EXPECT_EQ(order, want);
}

TEST(HostLanes, BuiltTraceGivesRowsPerDepthAndLaneOfEvent) {
  ddpscope::testing::TraceBuilder b;
  b.kernel("gemm", 1'000, 500);
  b.add({"aten::linear", 0, 900, 1, 0, EventKind::CpuOp});
  b.add({"aten::addmm", 100, 700, 1, 0, EventKind::CpuOp});
  b.add({"cudaLaunchKernel", 200, 50, 1, 0, EventKind::Runtime, -1, -1, 11});
  b.add({"gemm2", 2'000, 100, 7, 0, EventKind::Kernel, -1, -1, 11});
  b.add({"ProfilerStep#1", 0, 3'000, 1, 0, EventKind::UserAnnotation});
  trace::Run built;
  built.ranks.push_back(b.build());
  const auto run = prepareRun(std::move(built), {});
  const auto& m = run->timeline;
  const auto host = m.lanesOf(LaneKind::Host, 0);
  // One thread: ProfilerStep (0) ⊃ aten::linear (1) ⊃ aten::addmm (2) ⊃ the launch (3).
  ASSERT_EQ(host.size(), 4u);
  EXPECT_EQ(host[0]->rows, 4);
  EXPECT_EQ(host[0]->label, "thread 1 (unnamed)");  // the builder names no thread
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(host[static_cast<std::size_t>(d)]->depth, d);
    ASSERT_EQ(host[static_cast<std::size_t>(d)]->events.size(), 1u);
  }
  EXPECT_EQ(host[3]->events.style(0), kStyleHostLaunch);
  EXPECT_EQ(host[2]->events.style(0), kStyleHostOp);
  EXPECT_EQ(host[0]->events.style(0), kStyleHostAnnotation);
  const auto& rank = run->run.ranks[0];
  ASSERT_EQ(m.launches.size(), 1u);
  const auto found = m.launches[0].links(rank, 11);
  ASSERT_EQ(found.size(), 1u);
  const auto& link = found[0];
  EXPECT_EQ(laneOfEvent(m, rank, 0, link.host_track, link.host_index), host[3]);
  const Lane* stream = laneOfEvent(m, rank, 0, link.gpu_track, link.gpu_index);
  ASSERT_NE(stream, nullptr);
  EXPECT_EQ(stream->kind, LaneKind::Stream);
  // The host side does not widen the extent (the GPU side's: steps, streams).
  EXPECT_EQ(m.extent_lo, 0);
  EXPECT_EQ(m.extent_hi, 3'000);
}

TEST(HostLanes, Resnet50ReferenceTrace) {
  const auto run = prepareRun(
      trace::loadRun({std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz"}), {});
  const auto& m = run->timeline;
  const auto& rank = run->run.ranks[0];
  // Counted from the JSON with python: 3774 GPU events (2700 kernels, 960 copies, 114 sets),
  // every one with a cuda_runtime call of the same correlation id; 2373 of them launched from
  // thread 2919752 (the autograd thread), 1401 from 2910249 (the main thread).
  ASSERT_EQ(m.launches.size(), 1u);
  const auto resolved = analysis::resolveLaunches(rank);
  EXPECT_EQ(resolved.size(), 3774u);
  // The model's index gives every one of them, id by id.
  std::size_t from_index = 0;
  for (std::size_t k = 0; k < resolved.size();) {
    const auto c = resolved[k].correlation;
    const auto want = analysis::launchLinks(resolved, c);
    ASSERT_EQ(m.launches[0].links(rank, c),
              std::vector<analysis::LaunchLink>(want.begin(), want.end()))
        << c;
    from_index += want.size();
    k += want.size();
  }
  EXPECT_EQ(from_index, 3774u);
  std::map<std::int64_t, std::size_t> per_thread;
  for (const auto& l : resolved) {
    ++per_thread[rank.tracks[static_cast<std::size_t>(l.host_track)].tid];
    const auto& host = rank.tracks[static_cast<std::size_t>(l.host_track)];
    const auto& gpu = rank.tracks[static_cast<std::size_t>(l.gpu_track)];
    ASSERT_EQ(host.correlation[l.host_index], gpu.correlation[l.gpu_index]);
  }
  EXPECT_EQ(per_thread, (std::map<std::int64_t, std::size_t>{{2910249, 1401}, {2919752, 2373}}));
  // The index counts the same per track, in one pass.
  const auto per_track = m.launches[0].launchesPerTrack(rank);
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto it = per_thread.find(rank.tracks[ti].tid);
    const bool launching = rank.tracks[ti].kind == trace::TrackKind::Host && it != per_thread.end();
    EXPECT_EQ(per_track[ti], launching ? it->second : 0u) << ti;
  }
  // Host lane groups: three threads with events (12174, 10912 and 42 events), the launching ones
  // first, most launches first; their rows hold every host event once.
  std::vector<std::int64_t> order;
  std::map<std::int64_t, std::size_t> events;
  for (const Lane* l : m.lanesOf(LaneKind::Host, 0)) {
    if (l->depth == 0) order.push_back(l->stream);
    events[l->stream] += l->events.size();
  }
  EXPECT_EQ(order, (std::vector<std::int64_t>{2919752, 2910249, -549452224}));
  // Nesting (the same rule over the JSON's host events with python): 5, 7 and 0 levels deep.
  std::vector<int> rows;
  for (const Lane* l : m.lanesOf(LaneKind::Host, 0))
    if (l->depth == 0) rows.push_back(l->rows);
  EXPECT_EQ(rows, (std::vector<int>{6, 8, 1}));
  EXPECT_EQ(events, (std::map<std::int64_t, std::size_t>{
                        {2919752, 12174}, {2910249, 10912}, {-549452224, 42}}));
  const auto host = m.lanesOf(LaneKind::Host, 0);
  EXPECT_EQ(host.front()->label, "thread 2919752 (pt_autograd_0)");
  // The third thread has no thread_name in the JSON and a negative tid, -549452224: a 32-bit id
  // written signed, shown as its unsigned value 2^32 - 549452224 = 3745515072.
  std::vector<std::string> labels;
  for (const Lane* l : host)
    if (l->depth == 0) labels.push_back(l->label);
  EXPECT_EQ(labels, (std::vector<std::string>{"thread 2919752 (pt_autograd_0)",
                                              "thread 2910249 (pt_main_thread)",
                                              "thread 3745515072 (unnamed)"}));
  // GPU annotations: 9 on stream 7, 21 on stream 40.
  const auto ann = m.lanesOf(LaneKind::GpuAnnotation, 0);
  ASSERT_EQ(ann.size(), 2u);
  EXPECT_EQ(ann[0]->stream, 7);
  EXPECT_EQ(ann[0]->events.size(), 9u);
  EXPECT_EQ(ann[1]->stream, 40);
  EXPECT_EQ(ann[1]->events.size(), 21u);
  // Colours, by the same rules applied to the JSON's host events with python: 8740 runtime
  // calls, 72 DDP ranges (27 record_param_comms, 15 c10d::allreduce_, 15 nccl:all_reduce, 6
  // c10d::broadcast_, 6 nccl:broadcast, 3 DistributedDataParallel.forward), 18 other user
  // annotations, 14298 other CPU ops; no data-loader range in this trace.
  std::map<std::uint8_t, std::size_t> by_style;
  for (const Lane* l : host)
    for (std::size_t i = 0; i < l->events.size(); ++i)
      ++by_style[l->events.style(i)];
  EXPECT_EQ(by_style, (std::map<std::uint8_t, std::size_t>{{kStyleHostOp, 14298},
                                                           {kStyleHostAnnotation, 18},
                                                           {kStyleHostLaunch, 8740},
                                                           {kStyleHostComm, 72}}));
}

// Whether a row's ranges in a window are all narrower than a column, against a walk of every
// event: blocks lying within less than a column are passed over whole, others event by event.
TEST(HostLanes, AllSubPixelMatchesEveryEventChecked) {
  {
    // Calls of 100 ns every 150 ns, one of 5 µs: its block spans 14.5 µs. With 4 µs columns that
    // block is wider than a column but holds a call as wide as one.
    LaneEvents ev;
    for (std::uint32_t i = 0; i < 1000; ++i) {
      const TimeNs s = 150 * static_cast<TimeNs>(i) + (i > 100 ? 4900 : 0);
      ev.add(s, s + (i == 100 ? 5000 : 100), kStyleHostLaunch, i);
    }
    ev.finish();
    const TimeNs hi = ev.maxEnd();
    EXPECT_FALSE(allSubPixel(ev, {0, hi, static_cast<int>(hi / 4000)}));
    EXPECT_TRUE(allSubPixel(ev, {0, hi, static_cast<int>(hi / 6000)}));
    EXPECT_FALSE(allSubPixel(ev, {hi + 1, hi + 100, 10}));  // nothing inside
  }
  std::mt19937_64 rng(5);
  for (int lane = 0; lane < 4; ++lane) {
    LaneEvents ev;
    TimeNs t = 0;
    for (std::uint32_t i = 0; i < 20'000; ++i) {
      // Short calls, now and then a long one (lane 1: very long, over 32 bits of ns).
      TimeNs dur = static_cast<TimeNs>(100 + rng() % 2000);
      if (rng() % (lane == 0 ? 5000 : 200) == 0)
        dur = lane == 1 ? TimeNs{6'000'000'000} : static_cast<TimeNs>(rng() % 3'000'000);
      if (lane == 3 && rng() % 7 == 0) dur = 0;
      ev.add(t, t + dur, kStyleHostLaunch, i);
      t += dur + static_cast<TimeNs>(rng() % 500);
    }
    ev.finish();
    const TimeNs lo = ev.start(0), hi = ev.maxEnd();
    for (int k = 0; k < 400; ++k) {
      const TimeNs width = std::max<TimeNs>(
          10, static_cast<TimeNs>(static_cast<double>(hi - lo) *
                                  std::pow(10.0, -static_cast<double>(rng() % 5000) / 1000.0)));
      const TimeNs start =
          lo - width / 10 + static_cast<TimeNs>(rng() % static_cast<std::uint64_t>(hi - lo));
      const ViewWindow w{start, start + width, 50 + static_cast<int>(rng() % 2000)};
      const double column = static_cast<double>(w.hi - w.lo) / w.width;
      bool any = false, wide = false;
      for (std::size_t i = 0; i < ev.size(); ++i) {
        if (ev.start(i) >= w.hi || ev.end(i) < w.lo) continue;
        any = true;
        wide = wide || static_cast<double>(ev.end(i) - ev.start(i)) >= column;
      }
      ASSERT_EQ(allSubPixel(ev, w), any && !wide)
          << "lane " << lane << " [" << w.lo << ", " << w.hi << ") x " << w.width;
    }
  }
}
