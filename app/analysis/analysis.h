#pragma once
// The analysis engine: every number of docs/METRICS.md, per rank, per step, per bucket,
// and across ranks. Exact in integer nanoseconds; no Qt.

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "app/analysis/classify.h"
#include "app/analysis/intervals.h"
#include "app/analysis/rules.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

struct AnalysisOptions {
  // How GPU activity is classified (rules.h); null: the built-in rules.
  std::shared_ptr<const ClassRules> rules;
  // Reproduce Holistic Trace Analysis's default window: drop everything launched at or after the
  // start of the last ProfilerStep#, keep GPU events whose correlation matches a kept launch.
  bool hta_compat = false;
  // Threads the analysis may use; 0: one per core. A run's ranks are analysed at once
  // (analyzeRun), each on a thread of its own; a rank given two threads or more (analyzeRank,
  // or a run with at least twice as many threads as ranks) works out parts of its analysis side
  // by side (its classes beside its launch times, its host side beside its GPU unions, its steps
  // beside its collectives, streams and buckets). The report is the same whatever the number.
  unsigned threads = 0;
};

// Overlap and temporal breakdown over one scope (a rank's whole file, or one step).
struct OverlapMetrics {
  TimeNs comm_ns = 0;                 // |∪comm|
  TimeNs compute_ns = 0;              // |∪compute|
  TimeNs overlap_ns = 0;              // |∪comm ∩ ∪compute|
  TimeNs exposed_ns = 0;              // |∪comm \ ∪compute|
  std::optional<double> overlap_pct;  // empty when there is no communication
  TimeNs span_ns = 0;                 // first -> last GPU work in scope
  TimeNs busy_ns = 0;                 // |∪ all GPU work| (not syncs)
  TimeNs idle_ns = 0;                 // span - busy
  // Of the span; empty when the span is empty (no GPU work in scope), as the whole run's
  // gpu_idle_pct is.
  std::optional<double> idle_pct;
  std::optional<double> compute_pct;  // |∪compute| of span
  std::optional<double> non_compute_pct;
  TimeNs first_ns = 0, last_ns = 0;  // the span's ends (model time)
};

struct StreamReport {
  std::int64_t device = 0;
  std::int64_t stream = 0;
  StreamRole role = StreamRole::Compute;
  std::array<std::int64_t, kActivityClassCount> counts{};
  TimeNs busy_ns = 0;
};

// Where a step's time went (docs/METRICS.md "Step breakdown"; app/analysis/step_breakdown.h):
// the step's range split into disjoint parts that sum to its step time. Over the GPU work the
// step owns, clipped to the step's range; outside_ns is the step's GPU work that ran outside it.
struct StepBreakdown {
  TimeNs compute_ns = 0;       // computation with no communication under it
  TimeNs hidden_comm_ns = 0;   // communication under computation
  TimeNs exposed_comm_ns = 0;  // communication with no computation under it
  // The exposed part inside waits for a late rank, and the rest (matched collectives,
  // collectives.h); none when no collective of the rank was matched (filled by analyzeRun).
  std::optional<TimeNs> exposed_wait_ns, exposed_transfer_ns;
  TimeNs memory_ns = 0;  // copies and sets under neither computation nor communication
  TimeNs other_ns = 0;   // other-class kernels under none of the above (not cuda_sync records)
  TimeNs idle_ns = 0;    // no GPU work of the step
  // The idle time split by what the host was doing: a launch pending (its GPU work waited on a
  // stream or a dependency), else inside a data-loader range, else host-bound; none when the
  // trace has no host launches.
  std::optional<TimeNs> idle_launch_pending_ns, idle_data_loader_ns, idle_host_bound_ns;
  TimeNs outside_ns = 0;  // the step's GPU work outside its range (in none of the parts)
};

struct StepReport {
  std::int32_t step = 0;
  TimeNs start_ns = 0;  // the step marker's range
  TimeNs dur_ns = 0;    // step time
  OverlapMetrics metrics;
  TimeNs exposed_tail_ns = 0;  // end of backward compute -> end of the last allreduce
  // The compute-only critical path: what the step would take if communication were free,
  // step time - exposed communication (docs/METRICS.md "DP efficiency").
  TimeNs compute_critical_ns = 0;
  std::optional<double> dp_efficiency;  // compute_critical / step time
  std::int32_t allreduces = 0;
  // Of the rank's collectives of this step matched across ranks (collectives.h): the time
  // spent waiting for the last rank, and transferring; none when nothing was matched.
  std::optional<TimeNs> matched_wait_ns, matched_transfer_ns;
  StepBreakdown breakdown;
};

// A collective's bandwidth (docs/METRICS.md "Bandwidth"): algbw = bytes / time in GB/s, and
// busbw = algbw · the kind's factor over the p ranks it ran on (busBandwidthFactor: none with one
// rank or an unknown kind, where the formula would say 0). Both none without bytes or time. The
// one definition of algbw and busbw: every table, tooltip and report calls it.
struct Bandwidth {
  std::optional<double> algbw_gbps, busbw_gbps;
};
Bandwidth collectiveBandwidth(CollectiveKind kind, std::int64_t bytes, TimeNs time_ns,
                              std::int32_t ranks);
// p of a collective's busbw: the size of its process group where the trace says it (PyTorch's
// "Group size" on the kernel: a data-parallel group inside a larger job moves its bytes among its
// own ranks), else the world size.
std::int32_t collectiveRanks(const trace::CollectiveArgs* args, std::int32_t world_size);
// The bandwidth of many collectives of one kind: algbw = Σ bytes / Σ time, busbw = Σ (bytes · the
// factor over each one's p) / Σ time, which is algbw · the factor when every p is alike. A
// collective of one rank adds its time and no bus bytes; busbw is none when none had a factor.
struct BandwidthSum {
  std::int64_t bytes = 0;
  TimeNs time = 0;
  double bus_bytes = 0;
  bool any_factor = false;
  std::int32_t ranks = 0;  // the collectives' p when all alike, -1 when they differ, 0: none yet
  void add(CollectiveKind kind, std::int64_t bytes, TimeNs time, std::int32_t ranks);
};
Bandwidth collectiveBandwidth(const BandwidthSum& sum);
// What busbw's p was when it was not the world size: "a process group of 4 ranks", "process
// groups of different sizes"; "" when it was the world size (or not known: 0).
std::string busbwRanksNote(std::int32_t bw_ranks, std::int32_t world_size);
// The time a bandwidth divides the bytes by.
enum class BandwidthBasis : std::uint8_t {
  // The whole kernel: it includes the time the kernel waited for the last rank to arrive, so the
  // figure is the run's, not the network's. Used when the arrival is not known: one rank of a
  // larger run, a rank of the world without a trace, a collective matched on no other rank.
  Kernel,
  // From the last rank's arrival to the kernel's end (matched collectives, every rank loaded):
  // the transfer alone, what nccl-tests measures after its barrier.
  Transfer,
};
// "transfer" or "kernel time, waits included": the label every place shows beside the figure.
std::string_view bandwidthBasisText(BandwidthBasis basis);
// "transfer" or "kernel": the value of the JSON key bw_basis.
std::string_view bandwidthBasisKey(BandwidthBasis basis);
// The note of a table whose bandwidths are over transfers: why busbw is not bytes over the
// duration it shows beside it.
inline constexpr std::string_view kTransferBandwidthNote =
    "busbw is over each allreduce's transfer (from the last rank's arrival to its end), not over "
    "its whole duration, which includes waiting for that rank";
// The footnote of a table whose bandwidth cells over whole kernels are marked "*".
inline constexpr std::string_view kKernelTimeBandwidthNote =
    "* bandwidth over the whole kernel, waiting for the last rank included (the last arrival is "
    "known only for a collective matched on every rank of the world): the run's figure, not the "
    "network's";

struct BucketReport {
  std::int32_t step = trace::kNoStep;  // -1 when the trace has no step markers
  std::int32_t id = 0;
  std::int64_t bytes = -1;   // -1 when unknown
  std::int32_t tensors = 0;  // parameters in the bucket (0 when inferred)
  TimeNs ready_ns = 0;       // end of its last gradient kernel
  TimeNs start_ns = 0;       // allreduce start
  TimeNs end_ns = 0;         // allreduce end
  TimeNs wait_ns = 0;        // start - ready
  TimeNs exposed_ns = 0;     // part of the allreduce not hidden by compute
  // collectiveBandwidth of the allreduce: bytes over its kernel's duration, or over its transfer
  // part when the allreduce was matched on every rank (bw_basis).
  std::optional<double> algbw_gbps;
  std::optional<double> busbw_gbps;
  BandwidthBasis bw_basis = BandwidthBasis::Kernel;
  std::int32_t bw_ranks = 0;  // p of busbw (collectiveRanks of its allreduce); 0: not known
  bool inferred = false;      // from allreduce kernels, not from our bucket metadata
  std::int64_t device = 0, stream = 0;
};

struct Violation {
  enum class Kind {
    AllreduceBeforeReady,     // comm stream did not wait for the bucket's gradients
    UpdateBeforeAllreduce,    // optimizer read the bucket before its allreduce ended
    OverwriteBeforeAllreduce  // next step's backward wrote the bucket before its allreduce ended
  };
  Kind kind = Kind::AllreduceBeforeReady;
  std::int32_t step = 0;
  std::int32_t bucket = 0;
  TimeNs at_ns = 0;      // when the early work started
  TimeNs needed_ns = 0;  // when it was allowed to start
  std::string message;
};
std::string_view violationKindName(Violation::Kind k);
// A stream id as shown: the number, or "none" for no stream (-1, or CUPTI's invalid id
// 4294967295 as Kineto writes it: context-wide synchronisations).
std::string streamText(std::int64_t stream);

// An event of a rank's trace: its track and its row there.
struct EventRef {
  std::int32_t track = -1;  // -1: none
  std::int64_t row = -1;
  bool operator==(const EventRef&) const = default;
};

// A collective that waited for another collective of the same process group, issued on another
// stream of the same rank, rather than for its own data (docs/METRICS.md, "Serialised
// collectives"): it was launched and its stream was free, yet it started only when the other
// one ended.
struct SerializedCollective {
  EventRef event;  // the collective that waited
  CollectiveKind kind = CollectiveKind::Unknown;
  std::int64_t stream = 0;
  std::string group;
  TimeNs start_ns = 0;
  TimeNs waited_ns = 0;  // its start − when it could have started
  EventRef behind;       // the collective it waited for
  CollectiveKind behind_kind = CollectiveKind::Unknown;
  std::int64_t behind_stream = 0;
};

// One kind of collective on one rank (docs/METRICS.md, "Per collective kind").
struct CollectiveStats {
  CollectiveKind kind = CollectiveKind::Unknown;
  std::int64_t count = 0;
  std::int64_t bytes = 0;   // Σ payload of the kernels whose size is known
  std::int64_t sized = 0;   // kernels whose size is known
  TimeNs comm_ns = 0;       // |∪ kernels of this kind|
  TimeNs hidden_ns = 0;     // ... ∩ ∪compute
  TimeNs exposed_ns = 0;    // comm − hidden
  TimeNs sized_dur_ns = 0;  // Σ duration of the sized kernels
  std::optional<double> overlap_pct;
  // collectiveBandwidth of Σ bytes over Σ time of the sized kernels: their durations (basis
  // Kernel), or, when every sized kernel of this kind was matched on every rank with a transfer
  // part, those transfer parts (basis Transfer).
  std::optional<double> algbw_gbps;
  std::optional<double> busbw_gbps;
  BandwidthBasis bw_basis = BandwidthBasis::Kernel;
  std::int32_t bw_ranks = 0;  // p of busbw (BandwidthSum::ranks): -1 when the kernels' differ
};

struct RankReport {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  bool world_size_declared = true;  // false: the trace did not say it (see RankTrace)
  std::string source;
  std::string path;
  // The gradient-bucket settings the trace records (ddpscope's configuration block): the cap
  // ("25 MiB (first 1 MiB)", "per tensor"; bucketSettingText) and whether allreduces were
  // overlapped with backward; empty / none when the trace does not say (imported traces).
  std::string bucket_setting;
  std::optional<bool> overlap_setting;
  bool incomplete = false;
  std::int64_t dropped_records = 0;
  std::array<std::int64_t, kActivityClassCount> counts{};  // by ActivityClass
  std::vector<StreamReport> streams;
  OverlapMetrics whole;
  std::vector<CollectiveStats> collectives;  // one per kind present, in CollectiveKind order
  // Exposed communication split by matched collectives (collectives.h): inside a wait for a
  // late rank, and the rest; none when no collective of the rank could be matched.
  std::optional<TimeNs> exposed_wait_ns, exposed_transfer_ns;
  // The rank's communication inside those waits, exposed or hidden (whole trace): what the
  // overlap counts as hidden when compute ran under a wait (METRICS.md, "Hidden split").
  std::optional<TimeNs> comm_wait_ns;
  // The same-communicator serialisation check (collectives.h); not checked when no collective
  // of the rank names its process group or its launch.
  bool serialization_checked = false;
  std::vector<SerializedCollective> serialized;
  std::vector<StepReport> steps;
  std::vector<BucketReport> buckets;
  std::vector<Violation> violations;
  std::vector<std::string> warnings;
  bool buckets_inferred = false;
};

// Per step and allreduce: which rank reached it last, and by how much.
struct StragglerReport {
  std::int32_t step = 0;
  std::int32_t bucket = 0;
  std::int32_t last_rank = 0;
  TimeNs spread_ns = 0;  // last arrival - first arrival
  TimeNs margin_ns = 0;  // last arrival - second-to-last arrival
};

struct StepSpread {
  std::int32_t step = 0;
  TimeNs min_ns = 0, max_ns = 0, mean_ns = 0;
  std::int32_t slowest_rank = -1;  // -1: every rank took the same time
};

// One collective matched on every rank of its group (collectives.h): the one with the same
// sequence number in the same process group, else the k-th of its kind and group on each rank.
struct MatchedCollective {
  CollectiveKind kind = CollectiveKind::Unknown;
  std::string group;                   // process group name from the trace, "" when not named
  std::int64_t seq = -1;               // sequence number when matched by it, else -1
  std::int32_t index = 0;              // k: its place among the collectives of its kind and group
  std::int32_t step = trace::kNoStep;  // the step of the last rank's kernel, when known
  std::int64_t bytes = -1;             // the last rank's kernel's payload, -1 when unknown
  std::int32_t last_rank = 0;          // the rank whose kernel started last
  TimeNs first_start_ns = 0, last_start_ns = 0;
  TimeNs skew_ns = 0;  // last start − first start
  // Per rank (report order); a rank outside the collective's group has no event (track -1)
  // and 0 wait and transfer.
  std::vector<EventRef> events;     // the rank's kernel of this collective
  std::vector<std::int32_t> steps;  // the step of that kernel (kNoStep when unknown)
  std::vector<TimeNs> wait_ns;      // its start → the last start
  std::vector<TimeNs> transfer_ns;  // the last start → its end
  bool involves(std::size_t rank_index) const {
    return rank_index < events.size() && events[rank_index].track >= 0;
  }
};

// Whether the traces cover the whole run: computed once, here (analyzeRun).
struct Completeness {
  std::int32_t world_size = 0;                 // the largest world size the traces declare
  std::vector<std::int32_t> missing_ranks;     // ranks of that world with no trace
  std::vector<std::int32_t> incomplete_ranks;  // traces whose producer stopped early
  // Whether missing ranks make the run incomplete: when the traces were written by ddpscope
  // or several ranks were opened together. A single imported rank file is how PyTorch
  // profiles are shared, and is not flagged (its figures still say "1 of W ranks").
  bool missing_is_incomplete = false;
  // With traces cut short: the rank whose GPU work ends first, at least kFirstQuietMinNs before
  // any other's (firstQuietRank), and by how much; -1 when none is.
  std::int32_t first_quiet_rank = -1;
  TimeNs first_quiet_ahead_ns = 0;
  bool incomplete() const {
    return !incomplete_ranks.empty() || (missing_is_incomplete && !missing_ranks.empty());
  }
};

struct RunReport {
  std::vector<RankReport> ranks;
  std::vector<StragglerReport> stragglers;
  std::vector<StepSpread> step_spread;
  // About the files as a run: ranks of the declared world with no trace, traces cut short,
  // traces that disagree on the world size (files of different runs opened together).
  Completeness completeness;
  std::string rules = "built-in";  // the classification rules used (ClassRules::description)
  // The figures are in Holistic Trace Analysis's window (AnalysisOptions::hta_compat, and some
  // trace had a ProfilerStep# to cut at), not over each whole trace.
  bool hta_window = false;
  std::vector<MatchedCollective> matched;  // collectives matched across ranks, in time order
  std::string matched_by;                  // how they were matched, in words; "" when none
  std::vector<std::string> warnings;
};

// The intervals of one rank's GPU activity by class, after the window of the options.
struct RankActivity {
  IntervalSet comm, compute, memory, other, all;
  std::array<std::int64_t, kActivityClassCount> counts{};
  // The classification of the rank's events (by the analysis's rules), each name once.
  std::shared_ptr<const ClassCache> classes;
  // Which events the options' window keeps, per track (--hta-compat); empty: every event.
  std::vector<std::vector<char>> included;
  // Per step of the rank's report (analyzeRank): the step's communication and computation
  // unions, for the exposed split of its breakdown (step_breakdown.h).
  struct StepUnions {
    IntervalSet comm, compute;
  };
  std::vector<StepUnions> steps;
  ActivityClass classOf(std::size_t track, trace::EventKind kind, trace::NameId name) const;
};

RankActivity rankActivity(const trace::RankTrace& rank, const AnalysisOptions& options = {});
// The warning for trace files passed over beside a folder's rank-<r> files, naming up to three
// (the run's and the digest's: `verb` "loaded" or "read").
std::string skippedFilesWarning(const std::vector<std::string>& files, std::string_view verb);
// The warning of a run whose unreadable files were left out (trace::RunLoadOptions::
// skip_unreadable): how many, and each reader's message (the first three, then a count).
std::string unreadableFilesWarning(const std::vector<std::string>& whys);

OverlapMetrics overlapMetrics(const IntervalSet& comm, const IntervalSet& compute,
                              const IntervalSet& all);

// With `activity`, also the rank's activity (as rankActivity gives it) from the same pass.
RankReport analyzeRank(const trace::RankTrace& rank, const AnalysisOptions& options = {},
                       RankActivity* activity = nullptr);
// With `activities`, also each rank's activity, in the order of run.ranks.
// Fills out.completeness (and its warnings) from the rank reports: missing ranks of the declared
// world, incomplete traces, disagreeing world sizes. `written_by_ddpscope`: some trace of the run
// was written by ddpscope (then a missing rank makes the run incomplete).
void checkRunCompleteness(RunReport& out, bool written_by_ddpscope);
// The least lead of firstQuietRank: closer ends are a profiler's stop, not a rank gone quiet.
inline constexpr TimeNs kFirstQuietMinNs = 1'000'000;
// In a run with traces cut short (docs/METRICS.md "Completeness"): the rank whose last GPU work
// ends first in absolute time (each rank's whole.last_ns + `base_time_ns` of its trace, in
// report order), when it ends at least kFirstQuietMinNs before every other rank's. Where a rank
// hangs or dies, its peers run on until they wait for it in a collective that never ends: the
// rank that went quiet first is where to look. Sets completeness.first_quiet_* and a warning.
void firstQuietRank(RunReport& out, const std::vector<TimeNs>& base_time_ns);
// Its warning about the traces of `ranks` (sorted) cut short.
std::string cutShortWarning(const std::vector<std::int32_t>& ranks);
// Sorted rank numbers in words, runs of neighbours as ranges: "2, 5-7".
std::string rankRanges(const std::vector<std::int32_t>& sorted);
// A rank's own warning as a line among the run's: "rank 3: <warning>", or the warning as it is
// when it names the rank first already ("rank 3 is process 144 ...").
std::string rankWarning(std::int32_t rank, const std::string& warning);
// Whether ddpscope recorded this trace (its agent, simulated or on a GPU): a ddpscope block whose
// source is not "imported" (what `convert` writes for a trace it imported).
bool recordedByDdpscope(const trace::RankTrace& rank);
RunReport analyzeRun(const trace::Run& run, const AnalysisOptions& options = {},
                     std::vector<RankActivity>* activities = nullptr);

// Overlap % of a rank inside [lo, hi) (for a range the user selects); empty when no comm there.
std::optional<double> overlapPctWithin(const RankActivity& activity, TimeNs lo, TimeNs hi);

}  // namespace ddpscope::analysis
