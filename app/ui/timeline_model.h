#pragma once
// What the timeline shows for a run, built once per run off the GUI thread: lanes grouped by
// rank (steps, buckets, one lane per stream, the overlap strip), each with its events ready for
// the draw-list builder. Qt-free.

#include <cstdint>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
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
  kStyleBucketBase,
};
inline constexpr int kBucketColours = 6;
inline std::uint8_t bucketStyle(std::int32_t bucket_id, bool wait) {
  const int k = ((bucket_id % kBucketColours) + kBucketColours) % kBucketColours;
  return static_cast<std::uint8_t>(kStyleBucketBase + 2 * k + (wait ? 1 : 0));
}
inline constexpr int kStyleCount = kStyleBucketBase + 2 * kBucketColours;

enum class LaneKind : std::uint8_t { Steps, Buckets, Stream, Overlap };

struct Lane {
  LaneKind kind = LaneKind::Stream;
  std::int32_t rank = 0;        // rank number
  std::int32_t rank_index = 0;  // index in Run::ranks
  std::int32_t track = -1;      // stream lanes: index in RankTrace::tracks
  std::int64_t device = 0, stream = 0;
  analysis::StreamRole role = analysis::StreamRole::Compute;  // stream lanes
  std::string label;                                          // as shown on the left
  int height = 20;                                            // pixels at 1x
  LaneEvents events;
};

struct TimelineModel {
  std::vector<Lane> lanes;
  TimeNs extent_lo = 0, extent_hi = 1;  // first -> last drawn event
  std::size_t event_count = 0;

  int contentHeight() const;
  // Lanes of one rank kind, for tests: e.g. lanesOf(LaneKind::Stream, rank 0).
  std::vector<const Lane*> lanesOf(LaneKind kind, std::int32_t rank) const;
};

// `activity` has one entry per rank of the run (analysis::rankActivity).
TimelineModel buildTimelineModel(const trace::Run& run, const analysis::RunReport& report,
                                 const std::vector<analysis::RankActivity>& activity);

}  // namespace ddpscope::ui
