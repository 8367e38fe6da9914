#pragma once
// What the timeline shows for a run, built once per run off the GUI thread: lanes grouped by
// rank (steps, buckets, one lane per stream, the overlap strip), each with its events ready for
// the draw-list builder. Qt-free.

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/launches.h"
#include "app/ui/draw_list.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// Styles index the palette (palette.h). Buckets take two consecutive styles from kBucketBase:
// the wait (ready -> allreduce start, light) and the allreduce (solid).
enum Style : std::uint8_t {
  kStyleCompute = 0,
  kStyleCommHidden,
  kStyleCommExposed,
  kStyleMemory,
  kStyleSync,
  kStyleStep,
  kStyleCutShort,  // steps lane: from the last step to where a rank's incomplete trace ends
  // Overlap strip: exposed communication spent waiting inside a collective for the last rank to
  // arrive (RankReport::exposed_wait_ns); kStyleCommExposed is then the exposed transfer.
  kStyleCommWaiting,
  kStyleBucketBase,
};
inline constexpr int kBucketColours = 6;
inline std::uint8_t bucketStyle(std::int32_t bucket_id, bool wait) {
  const int k = ((bucket_id % kBucketColours) + kBucketColours) % kBucketColours;
  return static_cast<std::uint8_t>(kStyleBucketBase + 2 * k + (wait ? 1 : 0));
}
// Communication kernels in the stream lanes take their collective's colour (palette.h
// collectiveKindColour), two styles per analysis::CollectiveKind from kStyleCommKindBase: the
// part hidden under compute and the part exposed (drawn with the exposed colour's band). The
// overlap strip keeps kStyleCommHidden / kStyleCommExposed.
inline constexpr int kStyleCommKindBase = kStyleBucketBase + 2 * kBucketColours;
inline std::uint8_t commKindStyle(analysis::CollectiveKind kind, bool exposed) {
  return static_cast<std::uint8_t>(kStyleCommKindBase + 2 * static_cast<int>(kind) +
                                   (exposed ? 1 : 0));
}
// The host lanes (host_lanes.h) and the GPU annotation lanes: CPU ops, user annotations, CUDA
// runtime/driver calls (launches), DDP's reducer and `nccl:*` ranges, data-loader ranges, and the
// ranges annotated on a GPU stream.
inline constexpr int kStyleHostBase = kStyleCommKindBase + 2 * analysis::kCollectiveKindCount;
inline constexpr std::uint8_t kStyleHostOp = kStyleHostBase;
inline constexpr std::uint8_t kStyleHostAnnotation = kStyleHostBase + 1;
inline constexpr std::uint8_t kStyleHostLaunch = kStyleHostBase + 2;
inline constexpr std::uint8_t kStyleHostComm = kStyleHostBase + 3;
inline constexpr std::uint8_t kStyleHostDataLoader = kStyleHostBase + 4;
inline constexpr std::uint8_t kStyleGpuAnnotation = kStyleHostBase + 5;
inline constexpr int kStyleCount = kStyleHostBase + 6;
inline bool isCommKindStyle(int style) {
  return style >= kStyleCommKindBase && style < kStyleHostBase;
}
// The collective of a communication style (None for any other style).
inline analysis::CollectiveKind commKindOfStyle(int style) {
  return isCommKindStyle(style)
             ? static_cast<analysis::CollectiveKind>((style - kStyleCommKindBase) / 2)
             : analysis::CollectiveKind::None;
}
// Whether a style is communication exposed (the overlap strip's, or a collective's exposed part).
inline bool isExposedCommStyle(int style) {
  return style == kStyleCommExposed || style == kStyleCommWaiting ||
         (isCommKindStyle(style) && (style - kStyleCommKindBase) % 2 == 1);
}
// Whether a style is communication hidden under compute.
inline bool isHiddenCommStyle(int style) {
  return style == kStyleCommHidden ||
         (isCommKindStyle(style) && (style - kStyleCommKindBase) % 2 == 0);
}

// Host: one row (one depth of nesting) of a CPU thread's ranges; GpuAnnotation: the ranges
// annotated on a GPU stream.
enum class LaneKind : std::uint8_t { Steps, Buckets, Stream, Overlap, GpuAnnotation, Host };

// The overlap strip's label when its exposed part is split into waiting and transfer.
inline constexpr std::string_view kOverlapSplitLabel = "overlap (hidden / waiting / transfer)";

struct Lane {
  LaneKind kind = LaneKind::Stream;
  std::int32_t rank = 0;        // rank number
  std::int32_t rank_index = 0;  // index in Run::ranks
  std::int32_t track = -1;      // stream, annotation and host lanes: index in RankTrace::tracks
  // Host lanes: the depth of nesting this row shows (the last row also holds deeper ranges), and
  // on the thread's first row (depth 0) how many rows the thread has.
  std::int16_t depth = 0;
  std::int16_t rows = 1;
  std::int64_t device = 0, stream = 0;                        // host lanes: pid, tid
  analysis::StreamRole role = analysis::StreamRole::Compute;  // stream lanes
  std::string label;                                          // as shown on the left
  int height = 20;                                            // pixels at 1x
  LaneEvents events;
};

// A kernel of a rank that belongs to a collective matched across ranks.
struct MatchedKernel {
  std::int32_t track = 0;  // index in RankTrace::tracks
  std::uint32_t index = 0;
  std::int32_t matched = 0;  // index in RunReport::matched
  bool operator<(const MatchedKernel& o) const {
    return track != o.track ? track < o.track : index < o.index;
  }
};

struct TimelineModel {
  std::vector<Lane> lanes;
  TimeNs extent_lo = 0, extent_hi = 1;  // first -> last drawn event
  std::size_t event_count = 0;
  // Per rank (run order): its kernels of matched collectives (analysis::MatchedCollective::
  // events), sorted by (track, index), to find a selected kernel's collective.
  std::vector<std::vector<MatchedKernel>> matched_kernels;
  // The collective kinds drawn in the stream lanes (for the legend), in CollectiveKind order.
  std::vector<analysis::CollectiveKind> kinds_present;
  // Whether the stream lanes draw computation, memory or synchronisation, and the overlap strips
  // waiting for a late rank (for the legend).
  bool has_compute = false, has_memory = false, has_sync = false, has_waiting = false;
  // The host and GPU annotation styles drawn (for the legend), in style order.
  std::vector<std::uint8_t> host_styles;
  // Per rank (run order): its GPU activity and the host calls that launched it, resolved on
  // demand (analysis::LaunchIndex over the rank's trace), empty for a rank without host calls.
  std::vector<analysis::LaunchIndex> launches;

  int contentHeight() const;
  // Lanes of one rank kind, for tests: e.g. lanesOf(LaneKind::Stream, rank 0).
  std::vector<const Lane*> lanesOf(LaneKind kind, std::int32_t rank) const;
};

// The collective matched across ranks that event `index` of track `track` of rank `rank_index`
// belongs to: its index in RunReport::matched, or -1.
std::int32_t matchedCollectiveOf(const TimelineModel& m, std::int32_t rank_index,
                                 std::int32_t track, std::uint32_t index);

// The lane that draws event `index` of track `track` of rank `rank_index` (a stream lane, or the
// host row holding it), or null when no lane shows it.
const Lane* laneOfEvent(const TimelineModel& m, const trace::RankTrace& rank,
                        std::int32_t rank_index, std::int32_t track, std::uint32_t index);

// `activity` has one entry per rank of the run (analysis::rankActivity).
TimelineModel buildTimelineModel(const trace::Run& run, const analysis::RunReport& report,
                                 const std::vector<analysis::RankActivity>& activity);

}  // namespace ddpscope::ui
