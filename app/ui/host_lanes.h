#pragma once
// The host side of the timeline (docs/UI.md "Host lanes"): per rank, one lane group per CPU thread
// with events, its ranges nested by containment, a row per depth; and a lane of the ranges
// annotated on each GPU stream. Qt-free; built with the rest of the timeline model.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "app/ui/timeline_model.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::ui {

// A thread's rows: depths 0 .. kMaxHostRows - 1, the last also holding every deeper range.
inline constexpr int kMaxHostRows = 8;

// The depth of each event of a track by containment, events being in track order (start
// ascending, longer first on ties): an event that starts before the enclosing event ends is one
// deeper than it; one that starts at or after it ends is not inside it. Events of one depth never
// overlap (an event that outlasts its enclosing one keeps its depth, and the next one that starts
// inside it is deeper still).
std::vector<std::uint16_t> nestingDepths(const trace::Track& t);

// The colour of a host event: CUDA runtime and driver calls (launches), DDP's reducer and
// communication ranges (`nccl:*`, `c10d::*`, `DistributedDataParallel.*`, the reducer's), data
// loading (analysis::isDataLoaderRange), other user annotations, other CPU ops.
std::uint8_t hostStyleOf(trace::EventKind kind, std::string_view name);

// The innermost CPU op or user annotation of track `t` enclosing event `i` (its index), or -1.
// Looks back at most `max_scan` events.
std::int64_t enclosingRange(const trace::Track& t, std::size_t i, std::size_t max_scan = 65536);

// A thread id as shown: a negative id that fits in 32 bits (a 32-bit id the trace wrote signed)
// as its unsigned value, any other as it is.
std::string threadIdText(std::int64_t tid);

// The label of a host thread's lane group: the trace's name of the thread (thread_name metadata;
// Kineto names them "thread <tid> (<name>)"), else "thread <tid> (unnamed)" with the tid as
// threadIdText writes it.
std::string hostThreadLabel(const trace::RankTrace& rank, const trace::Track& t);

// Appends the host lanes of a rank: the threads whose calls launched GPU work (most launches
// first), then the other threads with events in track order; for each, one row per depth.
void addHostLanes(std::vector<Lane>& out, const trace::RankTrace& rank, std::int32_t rank_index,
                  const std::vector<std::size_t>& launches_per_track);

// Whether every event of `events` inside the window is narrower than one of its pixel columns
// ((end − start) × width < hi − lo); false when no event is inside.
bool allSubPixel(const LaneEvents& events, const ViewWindow& view);

// Host rows at a coarse zoom (docs/UI.md "Host lanes"): of a thread's rows (`rows` of them from
// `first_row`, its depth-0 row, consecutive as addHostLanes appends them), the depth from which
// rows are hidden in `view`: the first row of depth 1 or more whose ranges in the window are all
// narrower than a pixel column (a deeper range lies inside a shallower one, so the rows below it
// are as narrow); `rows` when every row is drawn. The first row is always drawn.
int firstHiddenHostRow(const Lane* first_row, int rows, const ViewWindow& view);

// Appends one lane per GPU stream with GPU annotations (kind GpuAnnotation), all depths in one row.
void addGpuAnnotationLanes(std::vector<Lane>& out, const trace::RankTrace& rank,
                           std::int32_t rank_index);

}  // namespace ddpscope::ui
