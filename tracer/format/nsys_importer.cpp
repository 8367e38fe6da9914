#include "nsys_importer.h"

#include <fcntl.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <thread>

#include "trace_error.h"

extern char** environ;

namespace ddpscope::trace {

namespace fs = std::filesystem;

// ---------------------------------------------------------------------------------------------
// Rows -> model
// ---------------------------------------------------------------------------------------------

namespace {

// Nsight's global ids: a process is (vm << 56) | (pid << 24); a thread adds its tid in the low
// 24 bits.
constexpr std::int64_t kTidMask = 0xFFFFFF;
std::int64_t pidOfGlobal(std::int64_t global_pid) {
  return (global_pid >> 24) & kTidMask;
}
std::int64_t globalPidOfTid(std::int64_t global_tid) {
  return global_tid & ~kTidMask;
}

// ENUM_NSYS_EVENT_TYPE: the NVTX ranges (push/pop and start/end, C and text-file variants) and
// marks.
bool isNvtxRange(std::int64_t type) {
  return type == 59 || type == 60 || type == 70 || type == 71;
}
bool isNvtxMark(std::int64_t type) {
  return type == 34 || type == 65;
}

// CUDA memcpy kinds (ENUM_CUDA_MEMCPY_OPER) in the short form Kineto names copies with.
std::string_view copyKindName(std::int64_t k) {
  static constexpr std::string_view names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH",
                                               "AtoA",    "AtoD", "DtoA", "DtoD", "HtoH",
                                               "PtoP",    "HtoD", "DtoH", "DtoD"};
  return k >= 0 && k < 14 ? names[k] : "Unknown";
}
// Memory kinds (ENUM_CUDA_MEM_KIND).
std::string_view memKindName(std::int64_t k) {
  static constexpr std::string_view names[] = {
      "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};
  return k >= 0 && k < 7 ? names[k] : "Unknown";
}
// Synchronisation types (ENUM_CUPTI_SYNC_TYPE), as Kineto names them.
std::string_view syncName(std::int64_t t) {
  switch (t) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": Nsight adds the API version to the name.
std::string_view apiName(std::string_view s) {
  const auto at = s.rfind("_v");
  if (at == std::string_view::npos || at + 2 >= s.size()) return s;
  for (std::size_t i = at + 2; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return s;
  }
  return s.substr(0, at);
}

struct TrackKey {
  TrackKind kind;
  std::int64_t pid, tid;
  bool operator==(const TrackKey&) const = default;
};
struct TrackKeyHash {
  std::size_t operator()(const TrackKey& k) const noexcept {
    return std::hash<std::int64_t>()(k.pid * 1000003 + k.tid * 2 + static_cast<int>(k.kind));
  }
};

}  // namespace

struct NsysRowMapper::Process {
  std::int64_t global_pid = 0;
  RankTrace trace;
  std::int64_t gpu_rows = 0, host_rows = 0;
  std::unordered_map<std::int64_t, NameId> names;      // StringIds id -> name
  std::unordered_map<std::int64_t, NameId> api_names;  // StringIds id -> name without version
  std::unordered_map<TrackKey, std::int32_t, TrackKeyHash> tracks;
  std::unordered_map<std::int64_t, std::int64_t> context_device;
  std::vector<NsysGpuRow> syncs;  // placed when every context's device is known
  std::array<NameId, 10> cats{};
  bool cats_made = false;
  std::int64_t before_capture = 0, bad_duration = 0, bad_time = 0, missing_strings = 0;
  std::int64_t open_ranges = 0;

  NameId cat(EventKind k) {
    if (!cats_made) {
      for (int i = 0; i < 10; ++i)
        cats[static_cast<std::size_t>(i)] = trace.names.intern(categoryName(EventKind(i)));
      cats_made = true;
    }
    return cats[static_cast<std::size_t>(k)];
  }
  std::int32_t track(TrackKind kind, std::int64_t pid, std::int64_t tid) {
    const TrackKey key{kind, pid, tid};
    auto it = tracks.find(key);
    if (it != tracks.end()) return it->second;
    const auto index = static_cast<std::int32_t>(trace.tracks.size());
    trace.tracks.emplace_back();
    trace.tracks.back().kind = kind;
    trace.tracks.back().pid = pid;
    trace.tracks.back().tid = tid;
    tracks.emplace(key, index);
    return index;
  }
};

NsysRowMapper::NsysRowMapper(std::string name, std::int64_t capture_start, std::int64_t base_utc_ns)
    : name_(std::move(name)), capture_start_(capture_start), base_utc_ns_(base_utc_ns) {}

NsysRowMapper::~NsysRowMapper() = default;

void NsysRowMapper::addString(std::int64_t id, std::string_view value) {
  strings_.insert_or_assign(id, std::string(value));
}

void NsysRowMapper::addProcess(const NsysProcess& p) {
  process_info_[p.global_pid] = p;
}

void NsysRowMapper::addThreadName(std::int64_t global_tid, std::int64_t name_id) {
  thread_names_[global_tid] = name_id;
}

void NsysRowMapper::addMpiRank(std::int64_t global_pid, std::int64_t rank) {
  mpi_ranks_[global_pid] = rank;
}

void NsysRowMapper::setEnvironmentRank(std::int64_t rank, std::string variable,
                                       std::int64_t world_size) {
  env_rank_ = rank;
  env_variable_ = std::move(variable);
  if (world_size > 0) env_world_ = world_size;
}

void NsysRowMapper::addNote(std::string note) {
  notes_.push_back(std::move(note));
}

NsysRowMapper::Process& NsysRowMapper::process(std::int64_t global_pid) {
  if (last_ && last_pid_ == global_pid) return *last_;
  auto& slot = processes_[global_pid];
  if (!slot) {
    slot = std::make_unique<Process>();
    slot->global_pid = global_pid;
  }
  last_ = slot.get();
  last_pid_ = global_pid;
  return *slot;
}

std::string_view NsysRowMapper::text(std::int64_t id, std::int64_t& missing) {
  if (id == kNsysNone) return {};
  const auto it = strings_.find(id);
  if (it == strings_.end()) {
    ++missing;
    return {};
  }
  return it->second;
}

namespace {
// start/end on the capture's clock -> (model start, duration), or why not.
enum class TimeFault { None, BeforeCapture, NegativeDuration, Impossible };
TimeFault modelTimes(std::int64_t start, std::int64_t end, std::int64_t capture_start, TimeNs& t,
                     TimeNs& dur) {
  if (start < capture_start) return TimeFault::BeforeCapture;
  if (end < start) return TimeFault::NegativeDuration;
  if (__builtin_sub_overflow(start, capture_start, &t) || __builtin_sub_overflow(end, start, &dur))
    return TimeFault::Impossible;
  if (t > kMaxTraceSpanNs || dur > kMaxTraceSpanNs) return TimeFault::Impossible;
  return TimeFault::None;
}
}  // namespace

void NsysRowMapper::addGpu(const NsysGpuRow& row) {
  Process& p = process(row.global_pid);
  TimeNs t = 0, dur = 0;
  switch (modelTimes(row.start, row.end, capture_start_, t, dur)) {
    case TimeFault::BeforeCapture:
      ++p.before_capture;
      return;
    case TimeFault::NegativeDuration:
      ++p.bad_duration;
      return;
    case TimeFault::Impossible:
      ++p.bad_time;
      return;
    case TimeFault::None:
      break;
  }
  if (row.table != NsysGpuRow::Table::Sync) {
    ++p.gpu_rows;
    if (row.context != kNsysNone) p.context_device.emplace(row.context, row.device);
  }
  EventRow e;
  e.start = t;
  e.dur = dur;
  e.correlation = row.correlation == kNsysNone ? kNoCorrelation : row.correlation;
  switch (row.table) {
    case NsysGpuRow::Table::Kernel: {
      e.kind = EventKind::Kernel;
      // The demangled name (what Kineto shows and classification reads), else the short name,
      // else the mangled one.
      NameId name = StringTable::npos;
      for (const auto id : {row.demangled, row.short_name, row.mangled}) {
        if (id == kNsysNone) continue;
        if (auto it = p.names.find(id); it != p.names.end()) {
          name = it->second;
          break;
        }
        const auto s = text(id, p.missing_strings);
        if (s.empty()) continue;
        name = p.trace.names.intern(s);
        p.names.emplace(id, name);
        break;
      }
      e.name = name != StringTable::npos ? name : p.trace.names.intern("<unnamed kernel>");
      break;
    }
    case NsysGpuRow::Table::Memcpy: {
      e.kind = EventKind::Memcpy;
      std::string n = "Memcpy ";
      n += copyKindName(row.copy_kind);
      n += " (";
      n += memKindName(row.src_kind);
      n += " -> ";
      n += memKindName(row.dst_kind);
      n += ')';
      e.name = p.trace.names.intern(n);
      e.bytes = row.bytes >= 0 ? row.bytes : kNoBytes;
      break;
    }
    case NsysGpuRow::Table::Memset: {
      e.kind = EventKind::Memset;
      e.name = p.trace.names.intern("Memset (" + std::string(memKindName(row.mem_kind)) + ")");
      e.bytes = row.bytes >= 0 ? row.bytes : kNoBytes;
      break;
    }
    case NsysGpuRow::Table::Sync: {
      // Placed in finish(): its row's device is the calling thread's, the stream's comes from
      // the context.
      NsysGpuRow s = row;
      s.start = t;
      s.end = t + dur;
      p.syncs.push_back(s);
      return;
    }
  }
  e.cat = p.cat(e.kind);
  p.trace.tracks[static_cast<std::size_t>(p.track(TrackKind::Gpu, row.device, row.stream))].push(e);
}

bool NsysRowMapper::leaveOut(std::int64_t global_pid) {
  if (!gpu_done_) return false;
  const auto it = processes_.find(global_pid);
  if (it != processes_.end() && it->second->gpu_rows > 0) return false;
  other_pids_.insert(global_pid);
  ++other_rows_;
  return true;
}

void NsysRowMapper::addApi(const NsysApiRow& row) {
  if (leaveOut(globalPidOfTid(row.global_tid))) return;
  Process& p = process(globalPidOfTid(row.global_tid));
  TimeNs t = 0, dur = 0;
  switch (modelTimes(row.start, row.end, capture_start_, t, dur)) {
    case TimeFault::BeforeCapture:
      ++p.before_capture;
      return;
    case TimeFault::NegativeDuration:
      ++p.bad_duration;
      return;
    case TimeFault::Impossible:
      ++p.bad_time;
      return;
    case TimeFault::None:
      break;
  }
  ++p.host_rows;
  EventRow e;
  e.start = t;
  e.dur = dur;
  e.correlation = row.correlation == kNsysNone ? kNoCorrelation : row.correlation;
  NameId name = StringTable::npos;
  if (auto it = p.api_names.find(row.name_id); it != p.api_names.end()) {
    name = it->second;
  } else {
    const auto s = apiName(text(row.name_id, p.missing_strings));
    name = p.trace.names.intern(s.empty() ? std::string_view("<unnamed CUDA call>") : s);
    p.api_names.emplace(row.name_id, name);
  }
  e.name = name;
  // The runtime API is cuda*; the driver API is cu* (cuLaunchKernel, ...).
  e.kind = p.trace.names[name].starts_with("cuda") ? EventKind::Runtime : EventKind::Driver;
  e.cat = p.cat(e.kind);
  p.trace
      .tracks[static_cast<std::size_t>(
          p.track(TrackKind::Host, pidOfGlobal(p.global_pid), row.global_tid & kTidMask))]
      .push(e);
}

void NsysRowMapper::addNvtx(const NsysNvtxRow& row) {
  if (isNvtxMark(row.event_type)) {
    ++marks_;
    return;
  }
  if (!isNvtxRange(row.event_type)) return;  // domains, categories, names of threads
  if (leaveOut(globalPidOfTid(row.global_tid))) return;
  Process& p = process(globalPidOfTid(row.global_tid));
  if (row.end == kNsysNone) {
    ++p.open_ranges;
    return;
  }
  TimeNs t = 0, dur = 0;
  switch (modelTimes(row.start, row.end, capture_start_, t, dur)) {
    case TimeFault::BeforeCapture:
      ++p.before_capture;
      return;
    case TimeFault::NegativeDuration:
      ++p.bad_duration;
      return;
    case TimeFault::Impossible:
      ++p.bad_time;
      return;
    case TimeFault::None:
      break;
  }
  ++p.host_rows;
  EventRow e;
  e.start = t;
  e.dur = dur;
  e.kind = EventKind::UserAnnotation;
  e.cat = p.cat(e.kind);
  std::string_view s;
  if (row.text) {
    s = *row.text;
  } else if (row.text_id != kNsysNone) {
    if (auto it = p.names.find(row.text_id); it != p.names.end()) {
      e.name = it->second;
    } else {
      s = text(row.text_id, p.missing_strings);
      if (!s.empty()) {
        e.name = p.trace.names.intern(s);
        p.names.emplace(row.text_id, e.name);
        s = {};
      } else {
        s = "<unnamed range>";
      }
    }
  } else {
    s = "<unnamed range>";
  }
  if (!s.empty()) e.name = p.trace.names.intern(s);
  p.trace
      .tracks[static_cast<std::size_t>(
          p.track(TrackKind::Host, pidOfGlobal(p.global_pid), row.global_tid & kTidMask))]
      .push(e);
}

std::vector<ImportedRank> NsysRowMapper::finish() {
  std::vector<Process*> ranked;
  std::int64_t other_processes = static_cast<std::int64_t>(other_pids_.size());
  std::int64_t other_rows = other_rows_;
  for (auto& [gpid, p] : processes_) {
    if (p->gpu_rows > 0) {
      ranked.push_back(p.get());
    } else if (p->host_rows > 0) {
      if (!other_pids_.count(gpid)) ++other_processes;
      other_rows += p->host_rows;
    }
  }
  if (ranked.empty()) {
    throw TraceError(name_, kNoOffset,
                     "the Nsight Systems export holds no GPU activity (no kernel, memcpy or "
                     "memset rows in its capture window): record with CUDA tracing on "
                     "(nsys profile --trace=cuda,nvtx ...)");
  }
  std::sort(ranked.begin(), ranked.end(),
            [](const Process* a, const Process* b) { return a->global_pid < b->global_pid; });

  std::vector<ImportedRank> out(ranked.size());
  const bool by_env = !mpi_ranks_.empty() ? false : env_rank_.has_value() && ranked.size() == 1;
  std::int64_t next_free = 0;  // after the MPI ranks of the processes that are ranks
  for (const Process* p : ranked) {
    if (const auto m = mpi_ranks_.find(p->global_pid); m != mpi_ranks_.end() && m->second >= 0)
      next_free = std::max(next_free, std::min<std::int64_t>(m->second, 1'000'001) + 1);
  }
  // First every rank's number (and why), then the world they make, then the traces.
  std::vector<std::int64_t> numbers(ranked.size());
  std::vector<std::string> whos(ranked.size()), hows(ranked.size());
  std::map<std::int64_t, std::int64_t> rank_owner;  // rank -> pid
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    Process& p = *ranked[i];
    ImportedRank& ir = out[i];
    const auto info = process_info_.find(p.global_pid);
    const std::int64_t pid =
        info != process_info_.end() ? info->second.pid : pidOfGlobal(p.global_pid);
    const std::string pname = info != process_info_.end() ? info->second.name : std::string();
    const std::string who =
        "process " + std::to_string(pid) + (pname.empty() ? std::string() : " (" + pname + ")");
    std::int64_t rank = static_cast<std::int64_t>(i);
    std::string how;
    if (const auto m = mpi_ranks_.find(p.global_pid); m != mpi_ranks_.end()) {
      rank = m->second;
      ir.origin = RankOrigin::Declared;
      how = "from the export's MPI_RANKS table";
    } else if (!mpi_ranks_.empty()) {
      rank = next_free++;
      ir.origin = RankOrigin::Order;
      how = "after the MPI ranks: the export's MPI_RANKS table does not list this process";
    } else if (by_env) {
      rank = *env_rank_;
      ir.origin = RankOrigin::Environment;
      how = "from " + env_variable_ + " in the capture's environment";
    } else {
      ir.origin = RankOrigin::Order;
      how = "by process order: the export has no MPI_RANKS table" +
            (ranked.size() == 1
                 ? std::string(" and its environment has no RANK, OMPI_COMM_WORLD_RANK, "
                               "SLURM_PROCID or PMI_RANK")
                 : ", and its one environment cannot tell its " + std::to_string(ranked.size()) +
                       " processes apart");
    }
    if (rank < 0 || rank >= 1'000'000) {
      throw TraceError(
          name_, kNoOffset,
          who + " has rank " + std::to_string(rank) + " (" + how + "), out of range (0 to 999999)");
    }
    if (const auto [it, fresh] = rank_owner.emplace(rank, pid); !fresh) {
      throw TraceError(name_, kNoOffset,
                       "processes " + std::to_string(it->second) + " and " + std::to_string(pid) +
                           " both have rank " + std::to_string(rank) + " (" + how + ")");
    }
    numbers[i] = rank;
    whos[i] = who;
    hows[i] = how;
  }
  const std::int64_t world = std::max<std::int64_t>(static_cast<std::int64_t>(ranked.size()),
                                                    rank_owner.rbegin()->first + 1);
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    Process& p = *ranked[i];
    ImportedRank& ir = out[i];
    RankTrace& tr = p.trace;
    const std::int64_t rank = numbers[i];
    const std::string& who = whos[i];
    const std::string& how = hows[i];
    const auto info = process_info_.find(p.global_pid);
    const std::string pname = info != process_info_.end() ? info->second.name : std::string();
    tr.path = name_;
    tr.rank = static_cast<std::int32_t>(rank);
    if (ir.origin == RankOrigin::Environment && env_world_) {
      tr.world_size =
          static_cast<std::int32_t>(std::clamp<std::int64_t>(*env_world_, rank + 1, 1'000'000));
      tr.world_size_declared = true;
    } else {
      tr.world_size = static_cast<std::int32_t>(world);
      tr.world_size_declared = false;
    }
    tr.base_time_ns = base_utc_ns_;
    // Keyed like the host tracks: by the pid in the process's global id.
    if (!pname.empty()) tr.process_names[pidOfGlobal(p.global_pid)] = pname;

    // Synchronisations: on the stream's device, which the context tells (the row's own device
    // is the one the waiting thread had current).
    for (const auto& s : p.syncs) {
      const auto ctx =
          s.context != kNsysNone ? p.context_device.find(s.context) : p.context_device.end();
      const std::int64_t device = ctx != p.context_device.end() ? ctx->second : s.device;
      EventRow e;
      e.start = s.start;
      e.dur = s.end - s.start;
      e.kind = EventKind::Sync;
      e.cat = p.cat(e.kind);
      e.name = tr.names.intern(syncName(s.sync_type));
      e.correlation = s.correlation == kNsysNone ? kNoCorrelation : s.correlation;
      tr.tracks[static_cast<std::size_t>(p.track(TrackKind::Gpu, device, s.stream))].push(e);
    }
    // Launch -> GPU work: the CUDA call and the activity share a correlation id.
    std::unordered_map<std::int64_t, std::pair<std::int32_t, TimeNs>> launch;
    for (std::size_t ti = 0; ti < tr.tracks.size(); ++ti) {
      const auto& t = tr.tracks[ti];
      if (t.kind != TrackKind::Host) continue;
      for (std::size_t k = 0; k < t.size(); ++k) {
        if (t.correlation[k] != kNoCorrelation &&
            (t.kind_of[k] == EventKind::Runtime || t.kind_of[k] == EventKind::Driver))
          launch.emplace(t.correlation[k],
                         std::make_pair(static_cast<std::int32_t>(ti), t.start[k]));
      }
    }
    if (!launch.empty()) {
      const NameId ac2g = tr.names.intern("ac2g");
      for (std::size_t ti = 0; ti < tr.tracks.size(); ++ti) {
        const auto& t = tr.tracks[ti];
        if (t.kind != TrackKind::Gpu) continue;
        for (std::size_t k = 0; k < t.size(); ++k) {
          if (t.correlation[k] == kNoCorrelation || t.kind_of[k] == EventKind::Sync) continue;
          const auto it = launch.find(t.correlation[k]);
          if (it == launch.end()) continue;
          tr.flows.push_back({static_cast<std::uint64_t>(t.correlation[k]), ac2g, ac2g,
                              it->second.second, it->second.first, t.start[k],
                              static_cast<std::int32_t>(ti)});
        }
      }
    }
    for (const auto& t : tr.tracks) {
      if (t.kind != TrackKind::Host) continue;
      const auto name = thread_names_.find(p.global_pid | t.tid);
      if (name == thread_names_.end()) continue;
      if (const auto s = strings_.find(name->second); s != strings_.end() && !s->second.empty())
        tr.thread_names[{t.pid, t.tid}] = s->second;
    }

    tr.warnings.push_back("rank " + std::to_string(rank) + " is " + who + ", numbered " + how);
    for (const auto& n : notes_)
      tr.warnings.push_back(n);
    if (i == 0 && other_processes > 0) {
      tr.warnings.push_back(std::to_string(other_rows) + " CUDA calls and NVTX ranges of " +
                            std::to_string(other_processes) +
                            " processes that ran no GPU work were left out (not ranks)");
    }
    if (i == 0 && marks_ > 0) warnCount(tr, marks_, "NVTX marks (instants) were not kept");
    warnCount(tr, p.before_capture, "rows before the capture's start were dropped");
    warnCount(tr, p.bad_duration, "rows with a negative duration (end before start) were skipped");
    warnCount(tr, p.bad_time, "rows with impossible timestamps were skipped");
    warnCount(tr, p.missing_strings,
              "names point to string ids that are not in StringIds (shown as unnamed)");
    warnCount(tr, p.open_ranges, "NVTX ranges that never ended were skipped");
    if (i == 0)
      warnCount(tr, incomplete_rows_, "rows lacking a required value (NULL) were skipped");
    finishImportedRank(tr);
    ir.trace = std::move(tr);
  }
  std::stable_sort(out.begin(), out.end(), [](const ImportedRank& a, const ImportedRank& b) {
    return a.trace.rank < b.trace.rank;
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// SQLite -> rows
// ---------------------------------------------------------------------------------------------

namespace {

class Database {
 public:
  Database(const std::string& path, const ReadOptions& options) : path_(path), options_(options) {
    const int rc =
        sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
    if (rc != SQLITE_OK) {
      const std::string why = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
      sqlite3_close(db_);
      db_ = nullptr;
      throw TraceError(path, kNoOffset, "cannot open it as an SQLite database: " + why);
    }
    if (options.cancel) {
      sqlite3_progress_handler(
          db_, 20000,
          [](void* flag) -> int {
            return static_cast<const std::atomic<bool>*>(flag)->load(std::memory_order_relaxed) ? 1
                                                                                                : 0;
          },
          const_cast<std::atomic<bool>*>(options.cancel));
    }
  }
  ~Database() { sqlite3_close(db_); }
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void checkCancel() const {
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) throw LoadCancelled();
  }
  [[noreturn]] void fail(const std::string& what, int rc) const {
    checkCancel();
    if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) {
      throw TraceError(path_, kNoOffset,
                       "is not a readable SQLite database (" + std::string(sqlite3_errmsg(db_)) +
                           "): a truncated or damaged file, or not SQLite at all");
    }
    throw TraceError(path_, kNoOffset, what + ": " + sqlite3_errmsg(db_));
  }

  // Runs a query, calling row(stmt) per row.
  template <class F>
  void query(const std::string& sql, F&& row) const {
    sqlite3_stmt* st = nullptr;
    int rc = sqlite3_prepare_v2(db_, sql.c_str(), static_cast<int>(sql.size()), &st, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(st);
      fail("cannot query it (" + sql.substr(0, 80) + ")", rc);
    }
    try {
      std::size_t n = 0;
      while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        row(st);
        if ((++n & 8191) == 0) checkCancel();
      }
    } catch (...) {
      sqlite3_finalize(st);
      throw;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) fail("cannot read it", rc);
  }

  std::set<std::string> tables() const {
    std::set<std::string> out;
    query("SELECT name FROM sqlite_master WHERE type IN ('table','view')", [&](sqlite3_stmt* st) {
      if (const auto* s = sqlite3_column_text(st, 0)) out.emplace(reinterpret_cast<const char*>(s));
    });
    return out;
  }
  std::set<std::string> columns(const std::string& table) const {
    std::set<std::string> out;
    query("PRAGMA table_info(\"" + table + "\")", [&](sqlite3_stmt* st) {
      if (const auto* s = sqlite3_column_text(st, 1)) out.emplace(reinterpret_cast<const char*>(s));
    });
    return out;
  }
  std::int64_t rowEstimate(const std::string& table) const {
    std::int64_t n = 0;
    try {
      query("SELECT max(rowid) FROM \"" + table + "\"",
            [&](sqlite3_stmt* st) { n = sqlite3_column_int64(st, 0); });
    } catch (const TraceError&) {
      n = 0;  // a table without row ids: no estimate
    }
    return std::max<std::int64_t>(n, 0);
  }

  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const ReadOptions& options_;
  sqlite3* db_ = nullptr;
};

std::int64_t intOr(sqlite3_stmt* st, int col) {
  return sqlite3_column_type(st, col) == SQLITE_NULL ? kNsysNone : sqlite3_column_int64(st, col);
}

// One table's columns as a SELECT list: those present by name, NULL for those missing.
struct Selection {
  std::string sql;
  std::vector<std::string> missing_required;
};
Selection select(const std::string& table, const std::set<std::string>& have,
                 std::initializer_list<std::pair<const char*, bool>> cols) {
  Selection s;
  s.sql = "SELECT ";
  bool first = true;
  for (const auto& [col, required] : cols) {
    if (!first) s.sql += ", ";
    first = false;
    if (have.count(col)) {
      s.sql += '"';
      s.sql += col;
      s.sql += '"';
    } else {
      s.sql += "NULL";
      if (required) s.missing_required.emplace_back(col);
    }
  }
  s.sql += " FROM \"" + table + "\"";
  return s;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v)
    out += (out.empty() ? "" : ", ") + s;
  return out;
}

constexpr std::string_view kExportHint =
    "nsys export --type sqlite --output CAPTURE.sqlite "
    "CAPTURE.nsys-rep";

// "3.25.0" -> 3.
std::optional<int> majorOf(std::string_view version) {
  int major = 0;
  const auto [p, ec] = std::from_chars(version.data(), version.data() + version.size(), major);
  if (ec != std::errc() || p == version.data()) return std::nullopt;
  return major;
}

// The environment's rank variables, most specific first.
constexpr std::pair<std::string_view, std::string_view> kRankVariables[] = {
    {"RANK", "WORLD_SIZE"},
    {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
    {"SLURM_PROCID", "SLURM_NTASKS"},
    {"PMI_RANK", "PMI_SIZE"}};

std::optional<std::int64_t> number(std::string_view s) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty()) return std::nullopt;
  return v;
}

}  // namespace

std::vector<ImportedRank> readNsysSqlite(const std::string& path, const ReadOptions& options) {
  if (!options.limits.setting_error.empty())
    throw TraceError(path, kNoOffset, options.limits.setting_error);
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw TraceError(path, kNoOffset, "is a folder, not a file");
  if (!fs::exists(path, ec)) throw TraceError(path, kNoOffset, "no such file");
  const auto size = fs::file_size(path, ec);
  if (!ec && size > options.limits.max_bytes) {
    throw TraceError(path, kNoOffset,
                     "the export (" + std::to_string(size >> 20) +
                         " MiB) is larger than the limit of " +
                         std::to_string(options.limits.max_bytes >> 20) +
                         " MiB; set DDPSCOPE_MAX_TRACE_MB (in MiB) to allow more");
  }
  Database db(path, options);
  const auto tables = db.tables();
  const auto has = [&](const char* t) { return tables.count(t) > 0; };
  const bool any_cupti = std::any_of(tables.begin(), tables.end(), [](const std::string& t) {
    return t.starts_with("CUPTI_ACTIVITY_KIND_");
  });
  if (!has("META_DATA_EXPORT") && !(has("StringIds") && any_cupti)) {
    throw TraceError(path, kNoOffset,
                     "is an SQLite database but not an Nsight Systems export (it has no "
                     "META_DATA_EXPORT, StringIds or CUPTI_ACTIVITY_KIND_* tables); export a "
                     "report with: " +
                         std::string(kExportHint));
  }
  std::vector<std::string> notes;
  // The export's schema.
  if (has("META_DATA_EXPORT") && db.columns("META_DATA_EXPORT").count("value")) {
    std::string version;
    db.query("SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'",
             [&](sqlite3_stmt* st) {
               if (const auto* s = sqlite3_column_text(st, 0))
                 version = reinterpret_cast<const char*>(s);
             });
    const auto major = majorOf(version);
    if (!major) {
      notes.push_back("the export does not say its schema version; tables were read by name");
    } else if (*major < 3) {
      throw TraceError(path, kNoOffset,
                       "its export schema " + version +
                           " is older than the schema 3 ddpscope reads; export the report "
                           "again with a current Nsight Systems: " +
                           std::string(kExportHint));
    } else if (*major > 3) {
      notes.push_back("export schema " + version +
                      " is newer than the schema 3 ddpscope was written for; tables and columns "
                      "were read by name");
    }
  } else {
    notes.push_back("the export has no META_DATA_EXPORT table: its schema version is unknown");
  }

  // Time base: the capture's start on its own clock, and the wall-clock time of that start.
  std::int64_t capture_start = kNsysNone, base_utc = 0;
  if (has("ANALYSIS_DETAILS") && db.columns("ANALYSIS_DETAILS").count("startTime")) {
    db.query("SELECT min(startTime) FROM ANALYSIS_DETAILS",
             [&](sqlite3_stmt* st) { capture_start = intOr(st, 0); });
  }
  if (has("TARGET_INFO_SESSION_START_TIME")) {
    const auto cols = db.columns("TARGET_INFO_SESSION_START_TIME");
    const auto s = select("TARGET_INFO_SESSION_START_TIME", cols,
                          {{"utcEpochNs", false}, {"systemClockNs", false}});
    db.query(s.sql + " LIMIT 1", [&](sqlite3_stmt* st) {
      if (const auto utc = intOr(st, 0); utc != kNsysNone) base_utc = utc;
      if (const auto clock = intOr(st, 1); capture_start == kNsysNone && clock != kNsysNone)
        capture_start = clock;
    });
  }
  if (capture_start == kNsysNone) {
    notes.push_back(
        "the export does not say when the capture started (no ANALYSIS_DETAILS or "
        "TARGET_INFO_SESSION_START_TIME): times are the export's own");
    capture_start = 0;
  }
  if (base_utc == 0) {
    notes.push_back(
        "the export has no wall-clock start (TARGET_INFO_SESSION_START_TIME): "
        "exports of other nodes cannot be aligned with it");
  }

  NsysRowMapper mapper(path, capture_start, base_utc);
  for (auto& n : notes)
    mapper.addNote(std::move(n));

  // The tables of rows, with their weights for progress.
  struct Part {
    const char* table;
    std::int64_t rows = 0;
  };
  std::vector<Part> parts = {{"StringIds"},
                             {"CUPTI_ACTIVITY_KIND_KERNEL"},
                             {"CUPTI_ACTIVITY_KIND_MEMCPY"},
                             {"CUPTI_ACTIVITY_KIND_MEMSET"},
                             {"CUPTI_ACTIVITY_KIND_SYNCHRONIZATION"},
                             {"CUPTI_ACTIVITY_KIND_RUNTIME"},
                             {"NVTX_EVENTS"}};
  double total = 0;
  for (auto& p : parts) {
    if (has(p.table)) p.rows = db.rowEstimate(p.table);
    total += static_cast<double>(p.rows) + 1;
  }
  double done = 0;
  const auto progressed = [&](std::int64_t rows) {
    done += static_cast<double>(rows);
    if (options.progress) options.progress(std::min(0.99, done / total));
  };
  const auto rowTick = [&](std::size_t& n) {
    if ((++n & 65535) == 0) progressed(65536);
  };

  // Strings.
  if (has("StringIds")) {
    const auto cols = db.columns("StringIds");
    if (!cols.count("id") || !cols.count("value")) {
      mapper.addNote("the StringIds table lacks its id or value column: names are unknown");
    } else {
      std::size_t n = 0;
      db.query("SELECT id, value FROM StringIds", [&](sqlite3_stmt* st) {
        const auto* s = sqlite3_column_text(st, 1);
        if (sqlite3_column_type(st, 0) != SQLITE_NULL && s) {
          mapper.addString(sqlite3_column_int64(st, 0),
                           std::string_view(reinterpret_cast<const char*>(s),
                                            static_cast<std::size_t>(sqlite3_column_bytes(st, 1))));
        }
        rowTick(n);
      });
      progressed(static_cast<std::int64_t>(n & 65535));
    }
  } else {
    mapper.addNote("the export has no StringIds table: names are unknown");
  }

  // Processes, threads, ranks, environment.
  if (has("PROCESSES")) {
    const auto s = select("PROCESSES", db.columns("PROCESSES"),
                          {{"globalPid", true}, {"pid", false}, {"name", false}});
    if (s.missing_required.empty()) {
      db.query(s.sql, [&](sqlite3_stmt* st) {
        NsysProcess p;
        p.global_pid = intOr(st, 0);
        if (p.global_pid == kNsysNone) return;
        p.pid = intOr(st, 1) == kNsysNone ? pidOfGlobal(p.global_pid) : intOr(st, 1);
        if (const auto* t = sqlite3_column_text(st, 2)) p.name = reinterpret_cast<const char*>(t);
        mapper.addProcess(p);
      });
    }
  }
  if (has("ThreadNames")) {
    const auto s =
        select("ThreadNames", db.columns("ThreadNames"), {{"globalTid", true}, {"nameId", true}});
    if (s.missing_required.empty()) {
      db.query(s.sql, [&](sqlite3_stmt* st) {
        if (intOr(st, 0) != kNsysNone && intOr(st, 1) != kNsysNone)
          mapper.addThreadName(intOr(st, 0), intOr(st, 1));
      });
    }
  }
  bool mpi = false;
  if (has("MPI_RANKS")) {
    const auto cols = db.columns("MPI_RANKS");
    const char* key = cols.count("globalPid") ? "globalPid" : "globalTid";
    const auto s = select("MPI_RANKS", cols, {{key, true}, {"rank", true}});
    if (s.missing_required.empty()) {
      db.query(s.sql, [&](sqlite3_stmt* st) {
        if (intOr(st, 0) == kNsysNone || intOr(st, 1) == kNsysNone) return;
        mapper.addMpiRank(globalPidOfTid(intOr(st, 0)), intOr(st, 1));
        mpi = true;
      });
    } else {
      mapper.addNote("the MPI_RANKS table lacks column(s) " + joined(s.missing_required) +
                     ": ranks were not taken from it");
    }
  }
  if (!mpi && has("TARGET_INFO_SYSTEM_ENV")) {
    const auto s = select("TARGET_INFO_SYSTEM_ENV", db.columns("TARGET_INFO_SYSTEM_ENV"),
                          {{"name", true}, {"value", true}});
    if (s.missing_required.empty()) {
      std::map<std::string, std::string, std::less<>> env;
      db.query(s.sql, [&](sqlite3_stmt* st) {
        const auto* k = sqlite3_column_text(st, 0);
        const auto* v = sqlite3_column_text(st, 1);
        if (!k || !v) return;
        const std::string_view key(reinterpret_cast<const char*>(k));
        const std::string_view value(reinterpret_cast<const char*>(v));
        if (key == "DeviceEnvironment") {
          // The launching environment as "NAME=value;NAME=value".
          std::size_t at = 0;
          while (at < value.size()) {
            auto end = value.find(';', at);
            if (end == std::string_view::npos) end = value.size();
            const auto item = value.substr(at, end - at);
            if (const auto eq = item.find('='); eq != std::string_view::npos)
              env.emplace(std::string(item.substr(0, eq)), std::string(item.substr(eq + 1)));
            at = end + 1;
          }
        } else {
          env.insert_or_assign(std::string(key), std::string(value));
        }
      });
      for (const auto& [rank_var, size_var] : kRankVariables) {
        const auto r = env.find(rank_var);
        if (r == env.end()) continue;
        const auto rank = number(r->second);
        if (!rank) continue;
        const auto w = env.find(size_var);
        const auto world = w == env.end() ? std::nullopt : number(w->second);
        mapper.setEnvironmentRank(*rank, std::string(rank_var) + "=" + r->second,
                                  world.value_or(0));
        break;
      }
    }
  }

  // GPU activity.
  const auto gpuTable = [&](const char* table, NsysGpuRow::Table kind, bool required) {
    if (!has(table)) return;
    const auto cols = db.columns(table);
    Selection s;
    switch (kind) {
      case NsysGpuRow::Table::Kernel:
        s = select(table, cols,
                   {{"start", true},
                    {"end", true},
                    {"deviceId", true},
                    {"contextId", false},
                    {"streamId", true},
                    {"correlationId", false},
                    {"globalPid", true},
                    {"demangledName", false},
                    {"shortName", false},
                    {"mangledName", false}});
        break;
      case NsysGpuRow::Table::Memcpy:
        s = select(table, cols,
                   {{"start", true},
                    {"end", true},
                    {"deviceId", true},
                    {"contextId", false},
                    {"streamId", true},
                    {"correlationId", false},
                    {"globalPid", true},
                    {"bytes", false},
                    {"copyKind", false},
                    {"srcKind", false},
                    {"dstKind", false}});
        break;
      case NsysGpuRow::Table::Memset:
        s = select(table, cols,
                   {{"start", true},
                    {"end", true},
                    {"deviceId", true},
                    {"contextId", false},
                    {"streamId", true},
                    {"correlationId", false},
                    {"globalPid", true},
                    {"bytes", false},
                    {"memKind", false}});
        break;
      case NsysGpuRow::Table::Sync:
        s = select(table, cols,
                   {{"start", true},
                    {"end", true},
                    {"deviceId", false},
                    {"contextId", false},
                    {"streamId", true},
                    {"correlationId", false},
                    {"globalPid", true},
                    {"syncType", false}});
        break;
    }
    if (!s.missing_required.empty()) {
      if (required) {
        throw TraceError(path, kNoOffset,
                         "its table " + std::string(table) + " lacks the column(s) " +
                             joined(s.missing_required) +
                             " every Nsight Systems export has: the file is damaged or not an "
                             "export of `nsys export --type sqlite`");
      }
      mapper.addNote("the table " + std::string(table) + " lacks the column(s) " +
                     joined(s.missing_required) + ": its rows were not read");
      return;
    }
    std::size_t n = 0;
    db.query(s.sql, [&](sqlite3_stmt* st) {
      rowTick(n);
      NsysGpuRow r;
      r.table = kind;
      r.start = intOr(st, 0);
      r.end = intOr(st, 1);
      r.device = intOr(st, 2);
      r.context = intOr(st, 3);
      r.stream = intOr(st, 4);
      r.correlation = intOr(st, 5);
      r.global_pid = intOr(st, 6);
      if (r.start == kNsysNone || r.end == kNsysNone || r.stream == kNsysNone ||
          r.global_pid == kNsysNone || (kind != NsysGpuRow::Table::Sync && r.device == kNsysNone)) {
        mapper.countIncompleteRow();
        return;
      }
      switch (kind) {
        case NsysGpuRow::Table::Kernel:
          r.demangled = intOr(st, 7);
          r.short_name = intOr(st, 8);
          r.mangled = intOr(st, 9);
          break;
        case NsysGpuRow::Table::Memcpy:
          r.bytes = intOr(st, 7);
          r.copy_kind = intOr(st, 8);
          r.src_kind = intOr(st, 9);
          r.dst_kind = intOr(st, 10);
          break;
        case NsysGpuRow::Table::Memset:
          r.bytes = intOr(st, 7);
          r.mem_kind = intOr(st, 8);
          break;
        case NsysGpuRow::Table::Sync:
          r.sync_type = intOr(st, 7);
          if (r.device == kNsysNone) r.device = 0;
          break;
      }
      mapper.addGpu(r);
    });
    progressed(static_cast<std::int64_t>(n & 65535));
  };
  gpuTable("CUPTI_ACTIVITY_KIND_KERNEL", NsysGpuRow::Table::Kernel, true);
  gpuTable("CUPTI_ACTIVITY_KIND_MEMCPY", NsysGpuRow::Table::Memcpy, true);
  gpuTable("CUPTI_ACTIVITY_KIND_MEMSET", NsysGpuRow::Table::Memset, true);
  gpuTable("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", NsysGpuRow::Table::Sync, false);
  mapper.gpuRowsDone();

  // CUDA runtime and driver calls.
  if (has("CUPTI_ACTIVITY_KIND_RUNTIME")) {
    const auto s = select("CUPTI_ACTIVITY_KIND_RUNTIME", db.columns("CUPTI_ACTIVITY_KIND_RUNTIME"),
                          {{"start", true},
                           {"end", true},
                           {"globalTid", true},
                           {"correlationId", false},
                           {"nameId", false}});
    if (!s.missing_required.empty()) {
      mapper.addNote("the table CUPTI_ACTIVITY_KIND_RUNTIME lacks the column(s) " +
                     joined(s.missing_required) + ": CUDA calls were not read");
    } else {
      std::size_t n = 0;
      db.query(s.sql, [&](sqlite3_stmt* st) {
        rowTick(n);
        NsysApiRow r;
        r.start = intOr(st, 0);
        r.end = intOr(st, 1);
        r.global_tid = intOr(st, 2);
        r.correlation = intOr(st, 3);
        r.name_id = intOr(st, 4);
        if (r.start == kNsysNone || r.end == kNsysNone || r.global_tid == kNsysNone) {
          mapper.countIncompleteRow();
          return;
        }
        mapper.addApi(r);
      });
      progressed(static_cast<std::int64_t>(n & 65535));
    }
  }

  // NVTX ranges.
  if (has("NVTX_EVENTS")) {
    const auto s = select("NVTX_EVENTS", db.columns("NVTX_EVENTS"),
                          {{"start", true},
                           {"end", false},
                           {"eventType", true},
                           {"globalTid", true},
                           {"text", false},
                           {"textId", false}});
    if (!s.missing_required.empty()) {
      mapper.addNote("the table NVTX_EVENTS lacks the column(s) " + joined(s.missing_required) +
                     ": NVTX ranges (and steps) were not read");
    } else {
      std::size_t n = 0;
      db.query(s.sql, [&](sqlite3_stmt* st) {
        rowTick(n);
        NsysNvtxRow r;
        r.start = intOr(st, 0);
        r.end = intOr(st, 1);
        r.event_type = intOr(st, 2);
        r.global_tid = intOr(st, 3);
        if (r.start == kNsysNone || r.event_type == kNsysNone || r.global_tid == kNsysNone) {
          mapper.countIncompleteRow();
          return;
        }
        if (const auto* t = sqlite3_column_text(st, 4)) {
          r.text = std::string_view(reinterpret_cast<const char*>(t),
                                    static_cast<std::size_t>(sqlite3_column_bytes(st, 4)));
        }
        r.text_id = intOr(st, 5);
        mapper.addNvtx(r);
      });
      progressed(static_cast<std::int64_t>(n & 65535));
    }
  }
  db.checkCancel();
  auto ranks = mapper.finish();
  if (options.progress) options.progress(1.0);
  return ranks;
}

// ---------------------------------------------------------------------------------------------
// .nsys-rep reports
// ---------------------------------------------------------------------------------------------

namespace {

std::optional<std::string> findOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (!path) return std::nullopt;
  std::string_view rest(path);
  while (!rest.empty()) {
    const auto colon = rest.find(':');
    const auto dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    if (dir.empty()) continue;
    const std::string candidate = std::string(dir) + "/" + program;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

fs::path cacheFolder() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    return fs::path(xdg) / "ddpscope" / "nsys";
  if (const char* home = std::getenv("HOME"); home && *home)
    return fs::path(home) / ".cache" / "ddpscope" / "nsys";
  return fs::temp_directory_path() / "ddpscope-nsys";
}

// The last `count` non-empty lines of a file, joined by "; " (what a failing command said last).
std::string lastLines(const fs::path& log, std::size_t count) {
  std::ifstream in(log);
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    lines.push_back(line.size() > 400 ? line.substr(0, 400) + "..." : line);
    if (lines.size() > count) lines.erase(lines.begin());
  }
  std::string out;
  for (const auto& l : lines)
    out += (out.empty() ? "" : "; ") + l;
  return out;
}

// 64-bit FNV-1a of a file's bytes, as 16 hex digits: the report's name in the cache, so that a
// report moved, copied or rewritten in place is exported once per content. Polls cancel and
// reports progress (0 to `share`) as it reads.
std::string contentHash(const std::string& path, const ReadOptions& options, double share) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path, kNoOffset, "cannot read the file");
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  std::uint64_t h = 0xcbf29ce484222325ull;
  std::vector<char> buf(std::size_t{1} << 20);
  std::uint64_t done = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < n; ++i)
      h = (h ^ static_cast<unsigned char>(buf[i])) * 0x100000001b3ull;
    done += n;
    if (options.cancel && options.cancel->load()) throw LoadCancelled();
    if (options.progress && !ec && size > 0)
      options.progress(share * static_cast<double>(done) / static_cast<double>(size));
  }
  if (in.bad()) throw TraceError(path, kNoOffset, "cannot read the file");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[static_cast<std::size_t>(i)] = kHex[h & 15];
  return out;
}

}  // namespace

std::string exportNsysReport(const std::string& report, const ReadOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(report, ec)) throw TraceError(report, kNoOffset, "no such file");
  const std::string sqlite = fs::path(report).replace_extension(".sqlite").string();
  const std::string command = "nsys export --type sqlite --output " + sqlite + " " + report;
  const auto nsys = findOnPath("nsys");
  if (!nsys) {
    throw TraceError(report, kNoOffset,
                     "is an Nsight Systems report, which ddpscope opens through its SQLite "
                     "export, and `nsys` is not on the PATH; export it with\n  " +
                         command + "\nand open " + sqlite);
  }
  const fs::path absolute = fs::absolute(report, ec);
  const auto folder = cacheFolder();
  fs::create_directories(folder, ec);
  if (ec) {
    throw TraceError(report, kNoOffset,
                     "cannot create the cache folder " + folder.string() + " (" + ec.message() +
                         "); export it yourself with\n  " + command);
  }
  // Hashing is the first tenth of the progress; the export (nsys says nothing while it works)
  // the rest.
  const fs::path out = folder / (contentHash(report, options, 0.1) + ".sqlite");
  if (fs::is_regular_file(out, ec)) {
    if (options.progress) options.progress(1.0);
    return out.string();
  }
  // Unique per process and thread: two loads of the same report never write one file.
  const std::string part = out.string() + "." + std::to_string(::getpid()) + "-" +
                           std::to_string(std::hash<std::thread::id>()(std::this_thread::get_id()));
  const fs::path tmp = part + ".part.sqlite";
  const fs::path log = part + ".out";
  const fs::path err = part + ".err";
  fs::remove(tmp, ec);
  std::vector<std::string> args = {
      *nsys,  "export",   "--type",     "sqlite",         "--force-overwrite",
      "true", "--output", tmp.string(), absolute.string()};
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  // nsys in a process group of its own: a cancel stops it and whatever it started.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t child = 0;
  const int rc = posix_spawn(&child, nsys->c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) {
    fs::remove(log, ec);
    fs::remove(err, ec);
    throw TraceError(
        report, kNoOffset,
        "cannot run " + *nsys + " (" + std::strerror(rc) + "); export it with\n  " + command);
  }
  if (options.progress) options.progress(0.1);
  int status = 0;
  for (;;) {
    const pid_t done = ::waitpid(child, &status, WNOHANG);
    if (done == child) break;
    if (done < 0 && errno != EINTR) {
      status = -1;  // the child cannot be waited for: not a success
      break;
    }
    if (options.cancel && options.cancel->load()) {
      // Asked to stop, then killed if still there after 2 s (the group, while nsys is unreaped).
      ::kill(-child, SIGTERM);
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
      pid_t gone = 0;
      while ((gone = ::waitpid(child, &status, WNOHANG)) == 0 &&
             std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      if (gone == 0) {
        ::kill(-child, SIGKILL);
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
        }
      }
      for (const auto& f : {tmp, log, err})
        fs::remove(f, ec);
      throw LoadCancelled();
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::string why = lastLines(err, 5);
  if (why.empty()) why = lastLines(log, 1);
  fs::remove(log, ec);
  fs::remove(err, ec);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::is_regular_file(tmp, ec)) {
    fs::remove(tmp, ec);
    std::string how = "wrote no export";
    if (status == -1) {
      how = "could not be waited for";
    } else if (!WIFEXITED(status)) {
      how = "was stopped by a signal";
    } else if (WEXITSTATUS(status) != 0) {
      how = "exited with status " + std::to_string(WEXITSTATUS(status));
    }
    throw TraceError(report, kNoOffset,
                     "nsys export " + how + (why.empty() ? std::string() : ": " + why) +
                         "; try it yourself:\n  " + command);
  }
  fs::rename(tmp, out, ec);
  if (ec) {
    const std::string why_not = ec.message();
    fs::remove(tmp, ec);
    throw TraceError(report, kNoOffset, "cannot keep the export: " + why_not);
  }
  if (options.progress) options.progress(1.0);
  return out.string();
}

namespace {

class NsysImporter final : public Importer {
 public:
  std::string_view name() const override { return "Nsight Systems SQLite export"; }
  std::vector<std::string> extensions() const override { return {".sqlite"}; }
  // Every SQLite database: one that is not an Nsight export gets a clear error from read.
  bool sniff(std::string_view head, std::string_view) const override {
    return head.starts_with(std::string_view("SQLite format 3\0", 16));
  }
  std::vector<ImportedRank> read(const std::string& path,
                                 const ReadOptions& options) const override {
    return readNsysSqlite(path, options);
  }
};

class NsysReportImporter final : public Importer {
 public:
  std::string_view name() const override { return "Nsight Systems report (through nsys export)"; }
  std::vector<std::string> extensions() const override { return {".nsys-rep", ".qdrep"}; }
  // The report's container is Nsight's own: recognised by its name.
  bool sniff(std::string_view, std::string_view path) const override {
    return path.ends_with(".nsys-rep") || path.ends_with(".qdrep");
  }
  std::vector<ImportedRank> read(const std::string& path,
                                 const ReadOptions& options) const override {
    ReadOptions export_options = options;
    if (options.progress) export_options.progress = [&](double f) { options.progress(0.5 * f); };
    const auto sqlite = exportNsysReport(path, export_options);
    ReadOptions read_options = options;
    if (options.progress)
      read_options.progress = [&](double f) { options.progress(0.5 + 0.5 * f); };
    auto ranks = readNsysSqlite(sqlite, read_options);
    for (auto& r : ranks)
      r.trace.path = path;
    return ranks;
  }
};

}  // namespace

std::shared_ptr<const Importer> makeNsysImporter() {
  return std::make_shared<NsysImporter>();
}
std::shared_ptr<const Importer> makeNsysReportImporter() {
  return std::make_shared<NsysReportImporter>();
}

}  // namespace ddpscope::trace
