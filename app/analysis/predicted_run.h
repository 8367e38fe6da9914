#pragma once
// A predicted configuration as a run (docs/WHATIF.md "A prediction as a run"): the replay of the
// what-if model under one configuration written out as trace events, so that the timeline,
// Compare and every table show it beside the recorded run, and the normal analysis of its
// events gives back the prediction's figures (step time, overlap %, exposed communication).
// Its source is "predicted": every outlet labels it so. No Qt; a pure function of its inputs.

#include <string>

#include "app/analysis/whatif.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

// The source string of a predicted run (RankTrace::source()).
inline constexpr const char* kPredictedSource = "predicted";

// "<run> predicted at 100 MiB", "<run> predicted with one allreduce per tensor", with what else
// the configuration changes (", no overlap", ", 8 ranks", ", network ×2", ", compute ×0.5").
std::string predictedRunName(const std::string& recorded_name, const WhatIfConfig& config);

// The run the replay of `config` predicts, from the model of `recorded` (buildWhatIfModel).
// Per replayed rank and step: the step's work items at their replayed times on a compute stream
// (computation as kernels under their recorded names, memory work as copies), the per-bucket
// optimizer updates, one allreduce kernel per predicted bucket on a communication stream (its
// bucket id and bytes), the other collectives on a stream of their own, a "backward" GPU range
// and the ProfilerStep range whose length is the replayed step time. Replayed steps keep their
// recorded start unless the previous one runs longer (then every rank moves by the same amount).
// The recorded warm-up step (left out of the figures) keeps its recorded range, empty, so that
// the predicted run's step selection is the recorded one's. Bucket metadata (parameters per
// bucket) when the model knows the parameter list. Throws std::invalid_argument when the model
// is not usable (its notes say why).
trace::Run predictedRun(const trace::Run& recorded, const WhatIfModel& model,
                        const WhatIfConfig& config);

}  // namespace ddpscope::analysis
