#pragma once
// The hover tooltip of the timeline: what a drawn box of a lane is, as an HTML table (a kernel
// with its stream, bytes and bandwidth; a step with its overlap; a bucket; a stretch of
// communication hidden or exposed; or a count when the box merges several events).

#include <QString>
#include <optional>

#include "app/ui/draw_list.h"
#include "app/ui/loaded_run.h"
#include "app/ui/timeline_model.h"

namespace ddpscope::ui {

// The tooltip of `box`, drawn in `lane` of `run`; for a merged box, `busy` is how busy its
// pixel columns are on average (their occupancy, draw_list.h), when known.
QString laneBoxTooltip(const LoadedRun& run, const Lane& lane, const DrawBox& box,
                       std::optional<double> busy = std::nullopt);

}  // namespace ddpscope::ui
