#pragma once
// What-if prediction (docs/WHATIF.md, docs/METRICS.md "What-if replay"): from one recorded run,
// the gradient-production curve of backward, a communication cost fitted from the run's own
// collectives (transfer parts only), the slowdown of compute while communication runs, and a
// replay of the selected steps under another bucket cap (PyTorch DDP's rule), overlap on or off,
// world size, network or compute scale. Every figure it gives is a prediction. It reads only the
// loaded run: never the producer's configuration of a simulated device. No Qt; a pure function
// of its inputs, so the app can call it off the GUI thread.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/run_summary.h"

namespace ddpscope::analysis {

// ---- PyTorch DDP's bucket rule ---------------------------------------------------------------

// One gradient tensor as the bucket rule sees it, in the order backward produces it (reverse
// registration order, or the order of a rebuilt plan).
struct GradTensor {
  std::int64_t bytes = 0;
  std::string dtype = "f32";  // one bucket holds one dtype
};
// Tensors (indices into the input) per bucket, bucket 0 first: one open bucket per dtype, a
// bucket closes once it holds at least its cap, the first bucket of each dtype has the first
// cap, a cap of 0 gives one bucket per tensor, a tensor is never split.
std::vector<std::vector<std::int32_t>> planBuckets(const std::vector<GradTensor>& tensors,
                                                   std::int64_t cap_bytes,
                                                   std::int64_t first_cap_bytes);
// Bytes of a size in MiB (25 -> 25 * 2^20), as the agent and PyTorch's bucket_cap_mb mean it.
std::int64_t mibToBytes(double mib);

// ---- fits --------------------------------------------------------------------------------------

// y = intercept + slope * x by least squares, with its residuals.
struct LinearFit {
  double intercept = 0, slope = 0;
  std::int32_t samples = 0;
  double residual_rms = 0;  // in y's unit
  double residual_rel = 0;  // RMS of residual / y
  double worst_rel = 0;     // largest |residual| / y
};
// Least squares over (x, y) pairs; with one distinct x the line goes through the origin and the
// mean y/x. Negative intercepts or slopes are clamped to 0 (a cost is never negative).
LinearFit fitLine(const std::vector<double>& x, const std::vector<double>& y);
// The lower envelope: per distinct x the smallest y, then the line under all of those that lies
// closest to them (least total distance, slope and intercept at least 0); one distinct x, or more
// than 512 (the search is cubic): as fitLine. Non-finite pairs are skipped. For collectives whose
// durations include waits for ranks that are not loaded.
LinearFit fitLowerEnvelope(const std::vector<double>& x, const std::vector<double>& y);

// The communication cost of one collective kind over `ranks` ranks: time = α + β · bytes,
// fitted from transfer parts (matched collectives: last arrival -> end), or the lower envelope
// of the kernels' durations when collectives cannot be matched.
struct CommCostFit {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::int32_t ranks = 0;
  double alpha_us = 0;                  // α: time of an empty collective
  double beta_us_per_mib = 0;           // β: time per MiB
  std::optional<double> ring_alpha_us;  // allreduce: α / 2(p−1), the latency of one ring step
  std::optional<double> busbw_gbps;     // allreduce: 2(p−1)/p / β, the bus bandwidth
  std::int32_t samples = 0;
  double residual_rms_us = 0;
  double residual_pct = 0;        // RMS of the relative residuals
  double worst_residual_pct = 0;  // largest relative residual
  std::string method;             // "matched transfer parts" | "lower envelope of one rank"
  // The samples are whole kernel durations of unmatched collectives, so they include waiting
  // for ranks that arrived later: α and the bus bandwidth describe the run's collectives,
  // waiting included, not the network (the model's notes say so).
  bool includes_waits = false;
  double costUs(std::int64_t bytes) const {
    return alpha_us + beta_us_per_mib * static_cast<double>(bytes) / 1048576.0;
  }
};

// Compute slowdown under communication: a kernel progresses 1/(1 + factor) as fast while a
// communication kernel runs on its rank.
struct SlowdownFit {
  double factor = 0;
  bool fitted = false;
  std::int32_t with_comm = 0, without_comm = 0;  // kernels compared
  double spread = 0;  // the factors within 1 % of the best fit span ±spread
};

// ---- the model of a recorded run -------------------------------------------------------------

inline constexpr double kNotLaunched = -1e300;

// One non-communication GPU item of a step on one rank, in start order (work of several
// streams that ran concurrently is one item).
struct ReplayItem {
  double start_us = 0;  // recorded, relative to the step's start
  double base_us = 0;   // duration without the recorded communication slowdown
  double gap_us = 0;    // recorded idle before it explained neither by its launch nor a wait
  double launch_us = kNotLaunched;  // when the host's launch call returned (relative)
  bool slowed = true;               // computation (memory and sync work is not slowed)
  enum class Phase : std::uint8_t { Backward, AfterBackward } phase = Phase::Backward;
  // After backward: waits for every bucket's allreduce (PyTorch's optimizer), or none.
  bool waits_all_comm = false;
  // What a predicted run calls it: the name and kind of its first event of its class
  // (computation when slowed, else memory).
  std::string name;
  trace::EventKind kind = trace::EventKind::Kernel;
};

struct ReplayTensor {
  std::int64_t bytes = 0;
  std::string dtype = "f32";
  std::int32_t ready_item = -1;  // the item whose end makes it ready
  std::string name;              // the parameter's name (bucket metadata), else ""
};

struct ReplayStep {
  std::int32_t step = 0;
  std::int32_t rank = 0;
  double start_abs_us = 0;         // the step's start on the common time base
  double recorded_us = 0;          // the step's recorded time
  double recorded_gpu_end_us = 0;  // its last GPU work's end (relative)
  double tail_us = 0;  // GPU end -> step end (the return from the step's last synchronisation)
  // The host: when it finished its own work of the step (before waiting for the GPU), its
  // cost per bucket during backward (event calls, the collective's launch) and in the
  // optimizer (the wait and the update's launch), and when the first update was launched.
  double host_floor_us = 0;
  double host_per_bucket_us = 0;
  double host_per_update_us = 0;
  double first_update_launch_us = kNotLaunched;
  std::vector<ReplayItem> items;
  std::vector<ReplayTensor> tensors;  // in production order
  std::int32_t backward_end_item = -1;
  // Other collectives (broadcasts, ...): kept at their recorded offset and duration.
  std::vector<std::pair<double, double>> fixed_comm;  // (start, duration) µs
  std::vector<std::string> fixed_comm_names;          // their kernels' names
  std::string allreduce_name;                         // the name of a bucket's allreduce kernel
  // Tensors per recorded bucket, in bucket order (the tensors list is their concatenation).
  std::vector<std::int32_t> recorded_bucket_tensors;
  // The ranks that were not loaded, as one virtual peer (one rank's file of a larger run): per
  // item, how long after this rank's end of that item the last of them reached a bucket made
  // ready by it, from the recorded allreduces' waits. Empty: none modelled (every rank loaded,
  // or no allreduce waited).
  std::vector<double> peer_lag_us;
};

struct WhatIfModel {
  std::string production_source;      // "bucket metadata" | "inferred from allreduce kernels"
  bool per_tensor_known = false;      // the parameter list is known (per-tensor predictions)
  bool optimizer_per_bucket = false;  // ddpscope loop: the optimizer waits for each bucket
  LinearFit update_cost;              // per-bucket optimizer work (µs) by bytes
  double shortest_kernel_us = 0;
  std::int32_t world_size = 0;
  std::optional<double> recorded_bucket_mb, recorded_first_bucket_mb;
  bool recorded_overlap = true;
  std::vector<CommCostFit> comm;  // allreduce first when present
  SlowdownFit slowdown;
  std::vector<std::vector<ReplayStep>> steps;  // per selected step, per loaded rank
  // The largest ReplayStep::peer_lag_us of any step and rank; none when no step replays the ranks
  // not loaded as a peer.
  std::optional<double> peer_lag_max_us;
  StepSelection selection;
  double recorded_step_us = 0;  // summarizeRun's step time (the run summary's definition)
  // The run summary's overlap and exposed communication per rank and step (whole trace: per
  // rank), what the replay of the recorded configuration is checked against beside the step.
  std::optional<double> recorded_overlap_pct;
  double recorded_exposed_us = 0;
  std::string update_name;  // a per-bucket optimizer kernel's name (bucket metadata)
  std::vector<std::string> notes;
  bool usable = false;  // false: notes say why nothing can be predicted
};

// The model of a run; `report` and `activities` as analyzeRun gives them for `run`.
WhatIfModel buildWhatIfModel(const trace::Run& run, const RunReport& report,
                             const std::vector<RankActivity>& activities);

// ---- replay ----------------------------------------------------------------------------------

struct WhatIfConfig {
  double bucket_mb = 25;                  // 0: one allreduce per tensor
  std::optional<double> first_bucket_mb;  // default min(1, bucket_mb), DDP's first bucket
  // Communication starts as buckets are ready (DDP's way) or after backward. A sweep of a run's
  // own scenario takes the run's (whatIfBase): a run recorded without overlap is predicted
  // without it unless asked.
  bool overlap = true;
  std::int32_t world_size = 0;  // 0: as recorded
  double network_scale = 1;     // collective times × this (2: a network half as fast)
  double compute_scale = 1;     // compute times × this (2: compute half as fast)
  double comm_error = 0;        // internal: the fit's relative error applied (the band)
  double slowdown_delta = 0;    // internal: added to the fitted slowdown (the band)
  // Internal (the band): with ranks not loaded, the fitted α counted as their lag instead of
  // the collective's latency (one rank's file cannot tell the two apart).
  bool latency_as_lag = false;
  // Replay the buckets as recorded (the first check of the model), ignoring the caps.
  bool as_recorded = false;
};

// Whether the run was recorded with communication overlapping backward: false only when its
// trace says so (ddpscope's "overlap": false); an imported trace is taken as DDP's overlapped way.
bool recordedOverlap(const trace::Run& run);
// The run's own scenario as a configuration for a sweep of bucket sizes (whatIfSweepConfigs sets
// each size): its overlap, its world size, no scaling.
WhatIfConfig whatIfBase(const trace::Run& run);

struct PredictedBucket {
  std::int32_t id = 0;
  std::int64_t bytes = 0;
  std::int32_t tensors = 0;
  double ready_us = 0, start_us = 0, end_us = 0;  // relative to the step's start
};

struct Prediction {
  WhatIfConfig config;
  double step_us = 0;  // slowest rank's mean over the selected steps (predicted)
  double step_us_low = 0, step_us_high = 0;
  std::optional<double> overlap_pct;
  double exposed_comm_us = 0;  // per rank and step, mean
  std::int32_t buckets = 0;
  std::vector<PredictedBucket> bucket_list;  // first selected step, first rank
  bool host_bound = false;  // the host's own time set the step in some replayed step
  // The end of the GPU's work (slowest rank's mean, relative to the step's start): what the
  // replay of a host-bound run can be checked by.
  double gpu_end_us = 0;
};

// One configuration replayed over the model's steps (with its band).
Prediction predictConfiguration(const WhatIfModel& model, const WhatIfConfig& config);

// ---- the replayed schedule: what a predicted run is made of (predicted_run.h) -------------

// Times are absolute µs on the recorded run's common time base.
struct ReplayedWork {
  double start_us = 0, end_us = 0;
  std::int32_t item = -1;    // index into the ReplayStep's items; -1: a per-bucket update
  std::int32_t bucket = -1;  // an update's bucket; an item's: the bucket it completes, or -1
};
struct ReplayedBucket {
  std::int32_t id = 0;
  std::int64_t bytes = 0;
  std::vector<std::int32_t> tensors;  // indices into the ReplayStep's tensors
  double arrival_us = 0;              // ready and launched on this rank
  double start_us = 0, end_us = 0;    // the transfer, once every replayed rank arrived
};
struct ReplayedRankStep {
  std::int32_t step = 0, rank = 0;
  std::size_t model_step = 0, model_rank = 0;  // indices into WhatIfModel::steps
  double start_us = 0, end_us = 0;             // the step: end − start is its predicted time
  bool host_bound = false;
  std::vector<ReplayedWork> work;  // in start order per kind: items, then updates
  std::vector<ReplayedBucket> buckets;
  std::vector<std::pair<double, double>> fixed_comm;  // (start, end), as ReplayStep::fixed_comm
};
// Every replayed step of one configuration, per model step and replayed rank: the intervals
// predictConfiguration's figures are computed over (without the band).
std::vector<std::vector<ReplayedRankStep>> replaySchedule(const WhatIfModel& model,
                                                          const WhatIfConfig& config);

// Whether a configuration predicts another scenario than the recorded one: a first-bucket cap,
// overlap other than recorded, another world size, a network or compute scale. Its sizes are
// then set against the recorded size in that scenario, not against the recorded run.
bool changesScenario(const WhatIfConfig& config, const WhatIfModel& model);

// The base replay's error: (predicted − recorded) / recorded, in %; none without a recorded
// step time. Every outlet (CLI, app, report) states it from here.
std::optional<double> replayErrorPct(double predicted_us, double recorded_us);

// A world size more than this many times the recorded one is an extrapolation of the α/β fit
// (measured at the recorded rank count): predictWhatIf adds a note saying so.
inline constexpr std::int32_t kWorldSizeExtrapolationFactor = 8;
// The note for a prediction at `world_size` ranks of a run recorded at `recorded` ranks; "" when
// world_size is within kWorldSizeExtrapolationFactor × recorded (or 0, as recorded).
std::string worldSizeExtrapolationNote(std::int32_t world_size, std::int32_t recorded);

struct WhatIfResult {
  WhatIfModel model;
  double base_step_us = 0;  // recorded (run summary)
  std::optional<double> base_bucket_mb;
  double base_predicted_step_us = 0;  // the replay of the recorded configuration
  // The replay's overlap and exposed communication per rank and step, against the recorded
  // ones (model.recorded_overlap_pct, model.recorded_exposed_us).
  std::optional<double> base_predicted_overlap_pct;
  double base_predicted_exposed_us = 0;
  double base_gpu_end_us = 0;            // recorded end of the GPU's work in a step
  double base_predicted_gpu_end_us = 0;  // ... replayed
  std::vector<Prediction> predictions;
  std::optional<std::size_t> best;  // index of the fastest prediction
  std::vector<std::string> notes;
};

// The whole what-if of a run: the model, the replay of what was recorded, and each
// configuration. `configs` with bucket sizes the run cannot predict (per tensor without the
// parameter list) are left out with a note.
WhatIfResult predictWhatIf(const trace::Run& run, const RunReport& report,
                           const std::vector<RankActivity>& activities,
                           const std::vector<WhatIfConfig>& configs);

}  // namespace ddpscope::analysis
