#include "app/ui/host_lanes.h"

#include <algorithm>
#include <limits>
#include <string>

#include "app/analysis/step_breakdown.h"

namespace ddpscope::ui {

namespace {
constexpr int kHostRowHeight = 14;
constexpr int kGpuAnnotationLaneHeight = 14;
constexpr std::uint8_t kUnset = 0xFF;

bool contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}
}  // namespace

std::vector<std::uint16_t> nestingDepths(const trace::Track& t) {
  std::vector<std::uint16_t> depth(t.size());
  std::vector<TimeNs> open;  // ends of the enclosing events, innermost last
  for (std::size_t i = 0; i < t.size(); ++i) {
    while (!open.empty() && open.back() <= t.start[i])
      open.pop_back();
    depth[i] = static_cast<std::uint16_t>(std::min<std::size_t>(open.size(), 0xFFFF));
    open.push_back(t.end(i));
  }
  return depth;
}

std::uint8_t hostStyleOf(trace::EventKind kind, std::string_view name) {
  if (kind == trace::EventKind::Runtime || kind == trace::EventKind::Driver)
    return kStyleHostLaunch;
  if (name.starts_with("nccl:") || name.starts_with("c10d::") ||
      name.starts_with("DistributedDataParallel") || contains(name, "Reducer") ||
      name.starts_with("record_param_comms"))
    return kStyleHostComm;
  if (analysis::isDataLoaderRange(name)) return kStyleHostDataLoader;
  if (kind == trace::EventKind::UserAnnotation) return kStyleHostAnnotation;
  return kStyleHostOp;
}

std::int64_t enclosingRange(const trace::Track& t, std::size_t i, std::size_t max_scan) {
  if (i >= t.size()) return -1;
  const TimeNs s = t.start[i], e = t.end(i);
  const std::size_t stop = i > max_scan ? i - max_scan : 0;
  // Events are in start order: the first container met looking back starts latest, so it is the
  // innermost.
  for (std::size_t j = i; j > stop;) {
    --j;
    const auto k = t.kind_of[j];
    if ((k == trace::EventKind::CpuOp || k == trace::EventKind::UserAnnotation) &&
        t.start[j] <= s && t.end(j) >= e)
      return static_cast<std::int64_t>(j);
  }
  return -1;
}

std::string threadIdText(std::int64_t tid) {
  // A 32-bit thread id written as a signed number (Kineto writes some so): its unsigned value.
  if (tid < 0 && tid >= std::numeric_limits<std::int32_t>::min())
    return std::to_string(static_cast<std::uint32_t>(static_cast<std::int32_t>(tid)));
  return std::to_string(tid);
}

std::string hostThreadLabel(const trace::RankTrace& rank, const trace::Track& t) {
  const auto it = rank.thread_names.find({t.pid, t.tid});
  if (it != rank.thread_names.end() && !it->second.empty()) return it->second;
  return "thread " + threadIdText(t.tid) + " (unnamed)";
}

void addHostLanes(std::vector<Lane>& out, const trace::RankTrace& rank, std::int32_t rank_index,
                  const std::vector<std::size_t>& launches_per_track) {
  struct Thread {
    std::size_t track;
    std::size_t launches;
  };
  std::vector<Thread> threads;
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti)
    if (rank.tracks[ti].kind == trace::TrackKind::Host && rank.tracks[ti].size() > 0)
      threads.push_back({ti, ti < launches_per_track.size() ? launches_per_track[ti] : 0});
  std::stable_sort(threads.begin(), threads.end(), [](const Thread& a, const Thread& b) {
    return (a.launches > 0) != (b.launches > 0) ? a.launches > 0 : a.launches > b.launches;
  });
  std::vector<std::uint8_t> name_style(rank.names.size(), kUnset);
  for (const Thread& th : threads) {
    const auto& t = rank.tracks[th.track];
    const std::vector<std::uint16_t> depth = nestingDepths(t);
    const int deepest = depth.empty() ? 0 : *std::max_element(depth.begin(), depth.end());
    const int rows = std::min(deepest + 1, kMaxHostRows);
    std::vector<Lane> lanes(static_cast<std::size_t>(rows));
    for (int d = 0; d < rows; ++d) {
      Lane& l = lanes[static_cast<std::size_t>(d)];
      l.kind = LaneKind::Host;
      l.rank = rank.rank;
      l.rank_index = rank_index;
      l.track = static_cast<std::int32_t>(th.track);
      l.device = t.pid;
      l.stream = t.tid;
      l.depth = static_cast<std::int16_t>(d);
      l.rows = static_cast<std::int16_t>(d == 0 ? rows : 1);
      l.height = kHostRowHeight;
      if (d == 0) l.label = hostThreadLabel(rank, t);
    }
    for (std::size_t i = 0; i < t.size(); ++i) {
      std::uint8_t st;
      const auto kind = t.kind_of[i];
      if (kind == trace::EventKind::Runtime || kind == trace::EventKind::Driver ||
          kind == trace::EventKind::UserAnnotation) {
        st = hostStyleOf(kind, rank.names[t.name[i]]);
      } else {  // CPU ops and others: by name alone, looked at once per name
        std::uint8_t& cached = name_style[t.name[i]];
        if (cached == kUnset) cached = hostStyleOf(kind, rank.names[t.name[i]]);
        st = cached;
      }
      const int d = std::min<int>(depth[i], rows - 1);
      lanes[static_cast<std::size_t>(d)].events.add(t.start[i], t.end(i), st,
                                                    static_cast<std::uint32_t>(i));
    }
    for (auto& l : lanes) {
      l.events.finish();
      out.push_back(std::move(l));
    }
  }
}

bool allSubPixel(const LaneEvents& events, const ViewWindow& view) {
  if (events.size() == 0 || view.hi <= view.lo || view.width <= 0) return false;
  const double column = static_cast<double>(view.hi - view.lo) / view.width;
  const auto& blocks = events.blockSummaries();
  bool any = false;
  for (std::size_t i = firstEventEndingAfter(events, view.lo);
       i < events.size() && events.start(i) < view.hi; ++i) {
    // A block whose events all lie within less than a column: every one is narrower than a
    // column (the first event visited ends inside the window, so `any` holds either way).
    if (i % LaneEvents::kBlock == 0 && blocks[i / LaneEvents::kBlock].end_offset < 0xFFFFFFFFu &&
        static_cast<double>(blocks[i / LaneEvents::kBlock].end_offset) < column) {
      any = true;
      i += LaneEvents::kBlock - 1;
      continue;
    }
    if (events.end(i) < view.lo) continue;
    if (static_cast<double>(events.end(i) - events.start(i)) >= column) return false;
    any = true;
  }
  return any;
}

int firstHiddenHostRow(const Lane* first_row, int rows, const ViewWindow& view) {
  for (int d = 1; d < rows; ++d)
    if (allSubPixel(first_row[d].events, view)) return d;
  return rows;
}

void addGpuAnnotationLanes(std::vector<Lane>& out, const trace::RankTrace& rank,
                           std::int32_t rank_index) {
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    Lane l;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t.kind_of[i] == trace::EventKind::GpuAnnotation)
        l.events.add(t.start[i], t.end(i), kStyleGpuAnnotation, static_cast<std::uint32_t>(i));
    if (l.events.size() == 0) continue;
    l.kind = LaneKind::GpuAnnotation;
    l.rank = rank.rank;
    l.rank_index = rank_index;
    l.track = static_cast<std::int32_t>(ti);
    l.device = t.device();
    l.stream = t.stream();
    l.height = kGpuAnnotationLaneHeight;
    l.label = "annotations · stream " + analysis::streamText(t.stream());
    l.events.finish();
    out.push_back(std::move(l));
  }
}

}  // namespace ddpscope::ui
