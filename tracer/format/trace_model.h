#pragma once
// The in-memory trace model (docs/FORMAT.md "In memory"): run -> ranks -> tracks -> events.
// Times are int64 nanoseconds relative to the rank's base time; events are stored per track,
// sorted by start, as structure-of-arrays; names are interned per rank.

#include <array>
#include <cstdint>
#include <deque>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace ddpscope::trace {

class FreshBuffers;  // memory.h

using TimeNs = std::int64_t;
using NameId = std::uint32_t;

inline constexpr std::int32_t kNoBucket = -1;
inline constexpr std::int32_t kNoStep = -1;
inline constexpr std::int64_t kNoCorrelation = -1;
inline constexpr std::int64_t kNoBytes = -1;
// The longest a trace may span (2^62 ns, about 146 years). Readers refuse traces whose events
// spread wider (corrupt or mixed-clock timestamps), so that every time, end and difference of
// times in a model, and in a run aligned across ranks, fits in TimeNs.
inline constexpr TimeNs kMaxTraceSpanNs = TimeNs{1} << 62;

// Interns strings; ids are dense and stable. Storage is a deque so views stay valid.
class StringTable {
 public:
  StringTable() = default;
  // A copy indexes its own strings (the index holds views into the storage); a move keeps the
  // deque's nodes, so its views stay valid.
  StringTable(const StringTable& other);
  StringTable& operator=(const StringTable& other);
  StringTable(StringTable&&) noexcept = default;
  StringTable& operator=(StringTable&&) noexcept = default;
  ~StringTable() = default;

  NameId intern(std::string_view s);
  const std::string& operator[](NameId id) const { return strings_[id]; }
  std::size_t size() const { return strings_.size(); }
  // Returns the id of s if it was interned, or npos.
  static constexpr NameId npos = std::numeric_limits<NameId>::max();
  NameId find(std::string_view s) const;

 private:
  std::deque<std::string> strings_;
  std::unordered_map<std::string_view, NameId> index_;
};

// What kind of record an event is, from its Chrome-trace category.
enum class EventKind : std::uint8_t {
  Kernel,          // cat "kernel"
  Memcpy,          // cat "gpu_memcpy"
  Memset,          // cat "gpu_memset"
  Sync,            // cat "cuda_sync"
  GpuAnnotation,   // cat "gpu_user_annotation" (NVTX-style ranges on a GPU stream)
  Runtime,         // cat "cuda_runtime"
  Driver,          // cat "cuda_driver"
  CpuOp,           // cat "cpu_op"
  UserAnnotation,  // cat "user_annotation" (host ranges: ProfilerStep#N, forward, ...)
  Other,           // any other category; kept, never classified as GPU activity
};

EventKind eventKindFromCategory(std::string_view cat);
// The canonical category name of a kind ("kernel", "gpu_memcpy", ...); "" for Other.
std::string_view categoryName(EventKind kind);
bool isGpuKind(EventKind kind);  // Kernel, Memcpy, Memset, Sync, GpuAnnotation
// GPU activity proper (what overlap and counts are computed over): Kernel, Memcpy, Memset, Sync.
bool isGpuActivity(EventKind kind);
// Work the GPU itself runs: Kernel, Memcpy, Memset. A Sync record is GPU activity (classified,
// counted, drawn) but not GPU work: it is the host waiting, so it is in no busy time or union.
bool occupiesGpu(EventKind kind);

enum class TrackKind : std::uint8_t { Gpu, Host };

// The allocator of a track's columns: std::allocator, except that an element made without a
// value is left as it is instead of zeroed, so that columns sized for rows about to be written
// (Track::resizeForWrite) are not written twice. Everything else constructs as usual.
template <typename T>
struct ColumnAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = ColumnAllocator<U>;
  };
  ColumnAllocator() noexcept = default;
  template <typename U>
  ColumnAllocator(const ColumnAllocator<U>&) noexcept {}  // NOLINT: converting, as std::allocator
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;  // default-initialised: a trivial type keeps its bytes
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    std::construct_at(p, std::forward<Args>(args)...);
  }
};
template <typename T>
using Column = std::vector<T, ColumnAllocator<T>>;

// One event with every column of a track: what Track::push appends and Track::row reads.
struct EventRow {
  TimeNs start = 0;
  TimeNs dur = 0;
  NameId name = 0;
  NameId cat = 0;
  EventKind kind = EventKind::Other;
  std::int64_t correlation = kNoCorrelation;
  std::int32_t bucket = kNoBucket;
  std::int32_t step = kNoStep;
  std::int64_t bytes = kNoBytes;
};

// One timeline lane. A GPU track is (device, stream); a host track is (pid, tid).
// Events are parallel arrays sorted by (start ascending, duration descending).
struct Track {
  TrackKind kind = TrackKind::Host;
  std::int64_t pid = 0;  // device for GPU tracks
  std::int64_t tid = 0;  // stream for GPU tracks

  Column<TimeNs> start;
  Column<TimeNs> dur;
  Column<NameId> name;
  Column<EventKind> kind_of;
  Column<std::int64_t> correlation;  // kNoCorrelation when absent
  Column<std::int32_t> bucket;       // args.bucket, kNoBucket when absent
  Column<std::int32_t> step;         // args.step, kNoStep when absent
  Column<std::int64_t> bytes;        // bytes moved (memcpy/memset) or collective payload

  // The category string as written in the file. Kept per kind (the first one each kind of the
  // track was written with; a category decides its kind), with the events written with another
  // kept aside: 4 bytes an event as a column, next to nothing this way.
  NameId category(std::size_t i) const {
    if (!cat_other_.empty()) {
      const auto it = otherCategory(i);
      if (it != cat_other_.end() && it->first == i) return it->second;
    }
    return cat_of_kind_[static_cast<std::size_t>(kind_of[i])];
  }
  std::size_t categoryBytes() const {
    return sizeof(cat_of_kind_) + cat_other_.capacity() * sizeof(cat_other_[0]);
  }

  std::int64_t device() const { return pid; }
  std::int64_t stream() const { return tid; }
  std::size_t size() const { return start.size(); }
  TimeNs end(std::size_t i) const { return start[i] + dur[i]; }
  void reserve(std::size_t n);
  // The columns in two halves that two threads may size and write at once (the loader): the
  // first holds start, dur, name, kind and category, the second correlation, bucket, step and
  // bytes. reserve, resizeForWrite and setRow do both.
  enum class Half { First, Second };
  void reserve(std::size_t n, Half half);
  // The same, the columns given fresh storage added to `fresh` and left for its caller to
  // prepare (several tracks' columns advised for huge pages together: see memory.h).
  void reserve(std::size_t n, Half half, FreshBuffers& fresh);
  // Appends an event to every column (the columns stay the same length).
  void push(const EventRow& e) {
    start.push_back(e.start);
    dur.push_back(e.dur);
    name.push_back(e.name);
    kind_of.push_back(e.kind);
    setCategory(kind_of.size() - 1, e.kind, e.cat);
    correlation.push_back(e.correlation);
    bucket.push_back(e.bucket);
    step.push_back(e.step);
    bytes.push_back(e.bytes);
  }
  // Every column to n events (new ones zero), and one event's columns written in place.
  void resize(std::size_t n);
  // Every column to n events, the new ones left unwritten: each of them must be written by
  // setRow before anything reads it (the loader, which knows every row it is about to write).
  void resizeForWrite(std::size_t n);
  void resizeForWrite(std::size_t n, Half half);
  void setRow(std::size_t i, const EventRow& e) {
    setRow(i, e, Half::First);
    setRow(i, e, Half::Second);
  }
  void setRow(std::size_t i, const EventRow& e, Half half) {
    if (half == Half::First) {
      start[i] = e.start;
      dur[i] = e.dur;
      name[i] = e.name;
      kind_of[i] = e.kind;
      setCategory(i, e.kind, e.cat);
    } else {
      correlation[i] = e.correlation;
      bucket[i] = e.bucket;
      step[i] = e.step;
      bytes[i] = e.bytes;
    }
  }
  EventRow row(std::size_t i) const {
    return {start[i],       dur[i],    name[i], category(i), kind_of[i],
            correlation[i], bucket[i], step[i], bytes[i]};
  }
  // Sorts every column by (start, -dur); stable for ties.
  void sortByStart();
  // Makes each kind's usual category the one most of its events carry (the first one written
  // need not be: a trace's first host event is often its own "Trace" range), so that the fewest
  // are kept aside. Categories read the same before and after.
  void settleCategories();

 private:
  static constexpr std::size_t kKinds = static_cast<std::size_t>(EventKind::Other) + 1;
  using OtherCategories = std::vector<std::pair<std::uint32_t, NameId>>;
  OtherCategories::const_iterator otherCategory(std::size_t i) const;
  void setCategory(std::size_t i, EventKind event_kind, NameId cat);

  std::array<NameId, kKinds> cat_of_kind_ = [] {
    std::array<NameId, kKinds> a{};
    a.fill(StringTable::npos);
    return a;
  }();
  OtherCategories cat_other_;  // (index, category) of the events that differ, sorted by index
};

// One Chrome-trace flow arrow (ph "s" -> ph "f"), e.g. a launch -> kernel ("ac2g").
struct Flow {
  std::uint64_t id = 0;
  NameId cat = 0;
  NameId name = 0;
  TimeNs from_ts = 0;
  std::int32_t from_track = -1;
  TimeNs to_ts = 0;
  std::int32_t to_track = -1;
  bool operator==(const Flow&) const = default;
};

// A training step, from a "ProfilerStep#N" host range (or the agent's step markers).
struct StepRange {
  std::int32_t number = 0;
  TimeNs start = 0;
  TimeNs end = 0;
  bool operator==(const StepRange&) const = default;
};

struct BucketParam {
  std::string name;
  std::int64_t bytes = 0;
  bool operator==(const BucketParam&) const = default;
};

// A gradient bucket as the agent planned it (our "ddpscope" block).
struct BucketDef {
  std::int32_t id = 0;
  std::int64_t bytes = 0;
  std::string dtype;
  std::vector<BucketParam> params;
  bool operator==(const BucketDef&) const = default;
};

// Our own block: present in traces written by the agent or the tracer.
struct DdpscopeBlock {
  bool present = false;
  std::int64_t version = 1;
  std::string source;  // "cuda" | "sim" | "imported"
  // Run configuration as written: key -> raw JSON value (e.g. "bucket_mb" -> "25").
  std::vector<std::pair<std::string, std::string>> config;
  std::vector<BucketDef> buckets;
  // Clock information as written: key -> raw JSON value (e.g. "offset_to_rank0_ns" -> "-1200").
  std::vector<std::pair<std::string, std::string>> clock;
  bool incomplete = false;           // the producer stopped before finishing (crash, abort)
  std::int64_t dropped_records = 0;  // activity records the tracer could not keep
  bool operator==(const DdpscopeBlock&) const = default;

  // Raw JSON text of a config value, or "" when absent.
  std::string_view configValue(std::string_view key) const;
};

// What a profiler writes about a collective on its kernel (PyTorch's Kineto args "Collective
// name", "Process Group Name", ...), kept for the kernels that carry it, by correlation id.
struct CollectiveArgs {
  std::int64_t correlation = kNoCorrelation;
  std::string name;         // "Collective name": allreduce, allgather, reduce_scatter, ...
  std::string group;        // "Process Group Name" (else "Process Group ID"); "" when absent
  std::string group_desc;   // "Process Group Description": default_pg, ...
  std::string group_ranks;  // "Process Group Ranks" as written: "[0, 1]"
  std::int64_t seq = -1;    // "Seq": the collective's sequence number in its group, -1 when absent
  std::int64_t in_nelems = -1, out_nelems = -1;
  std::int32_t group_size = -1;  // "Group size", -1 when absent
  std::string dtype;

  bool operator==(const CollectiveArgs&) const = default;
};

// Everything one rank's file holds.
struct RankTrace {
  std::string path;  // where it was loaded from ("" when built in memory)
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  // False when the trace does not say its world size (world_size is then 1, or the rank + 1 a
  // tracer guessed): such a value is not compared with other files'.
  bool world_size_declared = true;
  std::int64_t schema_version = 1;
  // Absolute time (ns since the producer's epoch) of time 0 of this rank's events.
  TimeNs base_time_ns = 0;
  std::string device_properties_json = "[]";  // raw JSON array, kept for round trips
  std::string distributed_backend;            // distributedInfo.backend, "" when absent

  StringTable names;
  std::vector<Track> tracks;
  std::vector<Flow> flows;
  std::vector<StepRange> steps;  // derived from ProfilerStep#N ranges, sorted by start
  std::map<std::int64_t, std::string> process_names;                          // pid -> name
  std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread_names;  // (pid, tid)
  DdpscopeBlock ddpscope;
  // Collective arguments of the kernels that carry them, sorted by correlation id.
  std::vector<CollectiveArgs> collective_args;
  // Kernels' short names (Nsight Systems' shortName: the function without its scope, template
  // arguments and parameters) where one differs from the name shown: (name id, short name id),
  // sorted by name id, one per name. A table of kernel names, not of events: nothing per event.
  std::vector<std::pair<NameId, NameId>> kernel_short_names;
  std::vector<std::string> warnings;  // tolerated oddities met while loading

  // "cuda", "sim" or "imported".
  std::string_view source() const;
  std::size_t eventCount() const;
  // The collective arguments of the kernel with this correlation id, or nullptr.
  const CollectiveArgs* collectiveArgs(std::int64_t correlation) const;
  // Sorts collective_args by correlation id, keeping the first of repeated ids.
  void sortCollectiveArgs();
  // The short name of kernels named `name`, or "" when they have none other than their name.
  std::string_view kernelShortName(NameId name) const;
  // Gives kernels named `name` a short name; ignored when empty, equal to the name, or when the
  // name has one already.
  void addKernelShortName(NameId name, std::string_view short_name);
  // Index of the track (kind, pid, tid), or -1.
  std::int32_t findTrack(TrackKind kind, std::int64_t pid, std::int64_t tid) const;
  // Index of the track (kind, pid, tid), created empty when missing.
  std::int32_t trackIndex(TrackKind kind, std::int64_t pid, std::int64_t tid);
  // Recomputes `steps` from the "ProfilerStep#N" ranges on host tracks.
  void deriveSteps();
  // Shifts all times so that the earliest event starts at 0, keeping absolute times
  // (base_time_ns + t) unchanged.
  void rebaseToEarliestEvent();
  // Shifts all times by delta ns and moves the base the opposite way.
  void shiftTimes(TimeNs delta);
};

// One training run: a rank per file, aligned on a common time base.
struct Run {
  std::string name;
  std::vector<RankTrace> ranks;       // sorted by rank
  TimeNs base_time_ns = 0;            // the common base all ranks were shifted to
  std::vector<std::string> warnings;  // each rank's, prefixed by its file
  // Trace files of a given folder that were not loaded: other traces beside its rank-<r> files.
  std::vector<std::string> skipped_files;
  // Files that could not be read and were left out (RunLoadOptions::skip_unreadable): the
  // reader's message, which names the file.
  std::vector<std::string> unreadable_files;

  std::size_t eventCount() const;
  std::string_view source() const;  // ranks' source if all agree, else "mixed"
};

// Puts a model into the canonical order readTraceFile produces (used by producers before writing
// and by tests): drops empty tracks, sorts tracks (GPU by device and stream, then host by pid and
// tid) and events, remaps flows, derives steps.
void canonicalize(RankTrace& trace);

// Model equality for round-trip tests: every column, flow, step, bucket and metadata field.
// Returns "" when equal, else a description of the first difference.
std::string describeDifference(const RankTrace& a, const RankTrace& b);

}  // namespace ddpscope::trace
