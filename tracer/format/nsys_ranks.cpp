// The Nsight Systems row mapper's front: what it is told of strings, processes, threads and rank
// sources, and finish(), which numbers the processes that ran GPU work as ranks and makes their
// traces.
#include <algorithm>

#include "nsys_internal.h"

namespace ddpscope::trace {

using nsys::pidOfGlobal;

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

bool NsysRowMapper::leaveOut(std::int64_t global_pid) {
  if (!gpu_done_) return false;
  const auto it = processes_.find(global_pid);
  if (it != processes_.end() && it->second->gpu_rows > 0) return false;
  other_pids_.insert(global_pid);
  ++other_rows_;
  return true;
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

    p.placeSyncs();
    p.linkLaunches();
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
    warnCount(tr, p.nvtx_payloads,
              "NVTX ranges carry a binary payload (NCCL's message sizes, for one) that is not "
              "decoded: the ranges are kept, their payloads are not read");
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

}  // namespace ddpscope::trace
