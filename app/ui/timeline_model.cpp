#include "app/ui/timeline_model.h"

#include <algorithm>
#include <limits>
#include <optional>

#include "app/analysis/classify.h"
#include "app/analysis/collectives.h"
#include "app/analysis/stragglers.h"
#include "app/ui/host_lanes.h"

namespace ddpscope::ui {

using analysis::ActivityClass;
using analysis::IntervalSet;

namespace {

constexpr int kStepLaneHeight = 18;
constexpr int kBucketLaneHeight = 14;
constexpr int kStreamLaneHeight = 24;
constexpr int kOverlapLaneHeight = 12;
constexpr int kMaxBucketRows = 4;

// Appends the comm event [s, e) of collective `kind` split into pieces hidden under compute and
// exposed.
void addSplitComm(LaneEvents& out, TimeNs s, TimeNs e, std::uint32_t src,
                  const IntervalSet& compute, analysis::CollectiveKind kind) {
  const std::uint8_t hidden = commKindStyle(kind, false), exposed = commKindStyle(kind, true);
  auto it = std::upper_bound(compute.begin(), compute.end(), s,
                             [](TimeNs t, const analysis::Interval& iv) { return t < iv.end; });
  TimeNs cursor = s;
  for (; it != compute.end() && it->start < e; ++it) {
    const TimeNs hs = std::max(it->start, s);
    const TimeNs he = std::min(it->end, e);
    if (hs > cursor) out.add(cursor, hs, exposed, src);
    if (he > hs) out.add(hs, he, hidden, src);
    cursor = std::max(cursor, he);
  }
  if (cursor < e || s == e) out.add(cursor, e, exposed, src);
}

std::uint8_t styleOf(ActivityClass c) {
  switch (c) {
    case ActivityClass::Computation:
      return kStyleCompute;
    case ActivityClass::Memory:
      return kStyleMemory;
    default:
      return kStyleSync;
  }
}

analysis::StreamRole streamRole(const analysis::RankReport* rr, const trace::Track& t) {
  if (rr) {
    for (const auto& s : rr->streams)
      if (s.device == t.device() && s.stream == t.stream()) return s.role;
  }
  return analysis::StreamRole::Compute;
}

// The steps lane of a rank: its steps and, when its trace is incomplete, where it was cut short.
void addStepsLane(TimelineModel& m, const trace::RankTrace& rank, std::int32_t rank_index,
                  bool late) {
  Lane steps;
  steps.kind = LaneKind::Steps;
  steps.rank = rank.rank;
  steps.rank_index = rank_index;
  // The late rank (analysis::summarizeStragglers) says so where its lanes begin.
  steps.label = "rank " + std::to_string(rank.rank) + (late ? " · late rank" : "") + " · steps";
  steps.height = kStepLaneHeight;
  for (std::size_t i = 0; i < rank.steps.size(); ++i)
    steps.events.add(rank.steps[i].start, rank.steps[i].end, kStyleStep,
                     static_cast<std::uint32_t>(i));
  // A rank whose trace is incomplete stopped inside a step that never closed: mark from the end
  // of its last step to the end of its last GPU work (source: one past the steps).
  if (rank.ddpscope.incomplete && !rank.steps.empty()) {
    TimeNs last_step_end = 0, last_end = 0;
    for (const auto& st : rank.steps)
      last_step_end = std::max(last_step_end, st.end);
    // GPU work only: a host wait until a watchdog fired may run on for minutes.
    for (const auto& t : rank.tracks)
      for (std::size_t i = 0; i < t.size(); ++i)
        if (trace::occupiesGpu(t.kind_of[i])) last_end = std::max(last_end, t.end(i));
    if (last_end > last_step_end) {
      steps.events.add(last_step_end, last_end, kStyleCutShort,
                       static_cast<std::uint32_t>(rank.steps.size()));
    }
  }
  steps.events.finish();
  m.lanes.push_back(std::move(steps));
}

// Buckets: ready -> allreduce end, packed greedily into rows so that none overlaps.
void addBucketLanes(TimelineModel& m, const trace::RankTrace& rank, std::int32_t rank_index,
                    const analysis::RankReport* rr) {
  if (!rr || rr->buckets.empty()) return;
  std::vector<std::uint32_t> order(rr->buckets.size());
  for (std::uint32_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    return rr->buckets[a].ready_ns < rr->buckets[b].ready_ns;
  });
  std::vector<Lane> rows;
  std::vector<TimeNs> row_end;
  for (std::uint32_t bi : order) {
    const auto& b = rr->buckets[bi];
    const TimeNs from = std::min(b.ready_ns, b.start_ns);
    std::size_t r = 0;
    while (r < rows.size() && row_end[r] > from)
      ++r;
    if (r == rows.size()) {
      if (rows.size() == kMaxBucketRows) {  // more overlap than rows: stack on the last
        r = rows.size() - 1;
      } else {
        Lane l;
        l.kind = LaneKind::Buckets;
        l.rank = rank.rank;
        l.rank_index = rank_index;
        l.label = rows.empty() ? (rr->buckets_inferred ? "buckets (inferred)" : "buckets") : "";
        l.height = kBucketLaneHeight;
        rows.push_back(std::move(l));
        row_end.push_back(std::numeric_limits<TimeNs>::min());
      }
    }
    if (b.start_ns > b.ready_ns)
      rows[r].events.add(b.ready_ns, b.start_ns, bucketStyle(b.id, true), bi);
    rows[r].events.add(b.start_ns, b.end_ns, bucketStyle(b.id, false), bi);
    row_end[r] = std::max(row_end[r], b.end_ns);
  }
  for (auto& l : rows) {
    l.events.finish();
    m.lanes.push_back(std::move(l));
  }
}

// The class and collective of event i of track ti, by the analysis's classification of the
// rank (none without one).
analysis::Classification classificationOf(const analysis::RankActivity& act, std::size_t ti,
                                          std::size_t i) {
  return act.classes ? act.classes->get(ti, i) : analysis::Classification{};
}

// One lane per GPU stream with activity, communication coloured by its collective and split
// into hidden and exposed; the rank's communication kernels by kind, in start order.
void addStreamLanes(TimelineModel& m, const trace::RankTrace& rank, std::int32_t rank_index,
                    const analysis::RankReport* rr, const analysis::RankActivity& act,
                    std::array<bool, analysis::kCollectiveKindCount>& kinds) {
  bool several_devices = false;
  for (const auto& t : rank.tracks)
    if (t.kind == trace::TrackKind::Gpu && t.device() != rank.tracks.front().device())
      several_devices = true;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    Lane lane;
    lane.kind = LaneKind::Stream;
    lane.rank = rank.rank;
    lane.rank_index = rank_index;
    lane.track = static_cast<std::int32_t>(ti);
    lane.device = t.device();
    lane.stream = t.stream();
    lane.role = streamRole(rr, t);
    lane.height = kStreamLaneHeight;
    lane.label = (several_devices ? "gpu " + std::to_string(t.device()) + " · " : std::string()) +
                 std::string(analysis::streamRoleShortName(lane.role)) + " · stream " +
                 analysis::streamText(t.stream());
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!trace::isGpuActivity(t.kind_of[i])) continue;
      const analysis::Classification c = classificationOf(act, ti, i);
      const auto src = static_cast<std::uint32_t>(i);
      if (c.cls == ActivityClass::Communication) {
        addSplitComm(lane.events, t.start[i], t.end(i), src, act.compute, c.kind);
        kinds[static_cast<std::size_t>(c.kind)] = true;
      } else {
        const std::uint8_t st = styleOf(c.cls);
        lane.events.add(t.start[i], t.end(i), st, src);
        (st == kStyleCompute  ? m.has_compute
         : st == kStyleMemory ? m.has_memory
                              : m.has_sync) = true;
      }
    }
    if (lane.events.size() == 0) continue;
    lane.events.finish();
    m.lanes.push_back(std::move(lane));
  }
}

// The overlap strip: the rank's communication, hidden vs exposed; with its waits for a late rank
// known (`waits`, none otherwise), the exposed part split into waiting and transfer as the
// headline's exposed split is (analysis::applyMatchedSplit).
void addOverlapLane(TimelineModel& m, const trace::RankTrace& rank, std::int32_t rank_index,
                    const analysis::RankActivity& act, const std::optional<IntervalSet>& waits) {
  Lane strip;
  strip.kind = LaneKind::Overlap;
  strip.rank = rank.rank;
  strip.rank_index = rank_index;
  strip.label = waits ? std::string(kOverlapSplitLabel) : "overlap (hidden / exposed)";
  strip.height = kOverlapLaneHeight;
  for (const auto& iv : analysis::intersect(act.comm, act.compute))
    strip.events.add(iv.start, iv.end, kStyleCommHidden, 0);
  const IntervalSet exposed = analysis::subtract(act.comm, act.compute);
  if (waits) {
    for (const auto& iv : analysis::intersect(exposed, *waits)) {
      strip.events.add(iv.start, iv.end, kStyleCommWaiting, 0);
      m.has_waiting = true;
    }
    for (const auto& iv : analysis::subtract(exposed, *waits))
      strip.events.add(iv.start, iv.end, kStyleCommExposed, 0);
  } else {
    for (const auto& iv : exposed)
      strip.events.add(iv.start, iv.end, kStyleCommExposed, 0);
  }
  strip.events.finish();
  m.lanes.push_back(std::move(strip));
}

// Per rank (run order): its waits inside matched collectives for the last rank to arrive (each
// kernel's start → the last start), when waiting can be told from transfer; none otherwise.
std::vector<std::optional<IntervalSet>> matchedWaits(const trace::Run& run,
                                                     const analysis::RunReport& report) {
  std::vector<std::optional<IntervalSet>> out(run.ranks.size());
  if (report.matched.empty() || !analysis::matchedSplitKnown(report)) return out;
  // Split only when some rank's exposed communication waited: a run where none did keeps the
  // plain strip (and legend).
  if (std::none_of(report.ranks.begin(), report.ranks.end(),
                   [](const auto& rr) { return rr.exposed_wait_ns.value_or(0) > 0; }))
    return out;
  std::vector<std::vector<analysis::Interval>> waits(run.ranks.size());
  for (const auto& mc : report.matched) {
    for (std::size_t r = 0; r < run.ranks.size() && r < mc.wait_ns.size(); ++r) {
      if (!mc.involves(r) || mc.wait_ns[r] <= 0) continue;
      const auto& ev = mc.events[r];
      const auto& tracks = run.ranks[r].tracks;
      if (static_cast<std::size_t>(ev.track) >= tracks.size()) continue;
      const auto& t = tracks[static_cast<std::size_t>(ev.track)];
      if (ev.row < 0 || static_cast<std::size_t>(ev.row) >= t.size()) continue;
      const TimeNs s = t.start[static_cast<std::size_t>(ev.row)];
      waits[r].push_back({s, s + mc.wait_ns[r]});
    }
  }
  for (std::size_t r = 0; r < run.ranks.size(); ++r)
    if (r < report.ranks.size() && report.ranks[r].exposed_wait_ns)
      out[r] = analysis::unionOf(std::move(waits[r]));
  return out;
}

void addRankLanes(TimelineModel& m, const trace::RankTrace& rank, std::int32_t rank_index,
                  const analysis::RankReport* rr, const analysis::RankActivity& act,
                  const std::optional<IntervalSet>& waits, bool late,
                  std::array<bool, analysis::kCollectiveKindCount>& kinds) {
  addStepsLane(m, rank, rank_index, late);
  addBucketLanes(m, rank, rank_index, rr);
  addStreamLanes(m, rank, rank_index, rr, act, kinds);
  addOverlapLane(m, rank, rank_index, act, waits);
  // The host side below the GPU's: annotated GPU ranges, then the CPU threads.
  addGpuAnnotationLanes(m.lanes, rank, rank_index);
  auto& launches = m.launches[static_cast<std::size_t>(rank_index)];
  launches = analysis::LaunchIndex(rank);
  addHostLanes(m.lanes, rank, rank_index, launches.launchesPerTrack(rank));
}

}  // namespace

std::int32_t matchedCollectiveOf(const TimelineModel& m, std::int32_t rank_index,
                                 std::int32_t track, std::uint32_t index) {
  if (rank_index < 0 || static_cast<std::size_t>(rank_index) >= m.matched_kernels.size()) return -1;
  const auto& v = m.matched_kernels[static_cast<std::size_t>(rank_index)];
  const MatchedKernel key{track, index, 0};
  const auto it = std::lower_bound(v.begin(), v.end(), key);
  return it != v.end() && it->track == track && it->index == index ? it->matched : -1;
}

const Lane* laneOfEvent(const TimelineModel& m, const trace::RankTrace& rank,
                        std::int32_t rank_index, std::int32_t track, std::uint32_t index) {
  if (track < 0 || static_cast<std::size_t>(track) >= rank.tracks.size()) return nullptr;
  const auto& t = rank.tracks[static_cast<std::size_t>(track)];
  if (index >= t.size()) return nullptr;
  const TimeNs s = t.start[index];
  for (const Lane& l : m.lanes) {
    if (l.rank_index != rank_index || l.track != track) continue;
    if (l.kind == LaneKind::Stream) {
      if (trace::isGpuActivity(t.kind_of[index])) return &l;
      continue;
    }
    if (l.kind != LaneKind::Host && l.kind != LaneKind::GpuAnnotation) continue;
    // The row's events are in start order: look among those starting with this one.
    const std::size_t n = l.events.size();
    for (auto k = l.events.firstStartingAtOrAfter(s); k < n && l.events.start(k) == s; ++k)
      if (l.events.source(k) == index) return &l;
  }
  return nullptr;
}

int TimelineModel::contentHeight() const {
  int h = 0;
  for (const auto& l : lanes)
    h += l.height;
  return h;
}

std::vector<const Lane*> TimelineModel::lanesOf(LaneKind kind, std::int32_t rank) const {
  std::vector<const Lane*> out;
  for (const auto& l : lanes)
    if (l.kind == kind && l.rank == rank) out.push_back(&l);
  return out;
}

TimelineModel buildTimelineModel(const trace::Run& run, const analysis::RunReport& report,
                                 const std::vector<analysis::RankActivity>& activity) {
  TimelineModel m;
  std::array<bool, analysis::kCollectiveKindCount> kinds{};
  m.launches.resize(run.ranks.size());
  const auto waits = matchedWaits(run, report);
  // The late rank as the headline names it: only with every rank of the world loaded (a missing
  // one may have started later).
  std::int32_t late = -1;
  if (analysis::matchedSplitKnown(report))
    late = analysis::summarizeStragglers(report).late_rank.value_or(-1);
  for (std::size_t r = 0; r < run.ranks.size(); ++r) {
    const analysis::RankReport* rr = r < report.ranks.size() ? &report.ranks[r] : nullptr;
    static const analysis::RankActivity kEmpty;
    addRankLanes(m, run.ranks[r], static_cast<std::int32_t>(r), rr,
                 r < activity.size() ? activity[r] : kEmpty, waits[r],
                 late >= 0 && late == run.ranks[r].rank, kinds);
  }
  for (int k = 0; k < analysis::kCollectiveKindCount; ++k)
    if (kinds[static_cast<std::size_t>(k)])
      m.kinds_present.push_back(static_cast<analysis::CollectiveKind>(k));
  m.matched_kernels.resize(run.ranks.size());
  for (std::size_t j = 0; j < report.matched.size(); ++j) {
    const auto& mc = report.matched[j];
    for (std::size_t r = 0; r < mc.events.size() && r < run.ranks.size(); ++r)
      if (mc.involves(r))
        m.matched_kernels[r].push_back({mc.events[r].track,
                                        static_cast<std::uint32_t>(mc.events[r].row),
                                        static_cast<std::int32_t>(j)});
  }
  for (auto& v : m.matched_kernels)
    std::sort(v.begin(), v.end());
  std::array<bool, kStyleCount - kStyleHostBase> host_styles{};
  for (const auto& l : m.lanes) {
    if (l.kind != LaneKind::Host && l.kind != LaneKind::GpuAnnotation) continue;
    for (std::size_t i = 0; i < l.events.size(); ++i)
      if (l.events.style(i) >= kStyleHostBase && l.events.style(i) < kStyleCount)
        host_styles[static_cast<std::size_t>(l.events.style(i) - kStyleHostBase)] = true;
  }
  for (std::size_t k = 0; k < host_styles.size(); ++k)
    if (host_styles[k]) m.host_styles.push_back(static_cast<std::uint8_t>(kStyleHostBase + k));
  TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  for (const auto& l : m.lanes) {
    // The extent is the GPU side's (steps, buckets, streams): host ranges before the first step
    // (set-up, the profiler's own calls) would squeeze the first view.
    if (l.events.size() == 0 || l.kind == LaneKind::Host) continue;
    lo = std::min(lo, l.events.start(0));
    hi = std::max(hi, l.events.maxEnd());
    if (l.kind == LaneKind::Stream) m.event_count += l.events.size();
  }
  if (lo < hi) {
    m.extent_lo = lo;
    m.extent_hi = hi;
  }
  return m;
}

}  // namespace ddpscope::ui
