#pragma once
// Nsight Systems captures (docs/IMPORTERS.md "Nsight Systems"): the SQLite export of
// `nsys export --type sqlite`, and .nsys-rep reports through the `nsys` command when it is
// installed. One rank per process that ran GPU work.
//
// The reading is in two layers: the export's tables are read into rows (nsys_internal.h lists the
// files), and NsysRowMapper turns rows into the trace model. The mapper knows nothing of SQLite, so
// it can be driven (tested, fuzzed) with rows of any content.

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "importer.h"

namespace ddpscope::trace {

std::shared_ptr<const Importer> makeNsysImporter();        // *.sqlite exports
std::shared_ptr<const Importer> makeNsysReportImporter();  // *.nsys-rep reports

// Reads an export; what the Nsight Systems importer's read does.
std::vector<ImportedRank> readNsysSqlite(const std::string& path, const ReadOptions& options = {});

// The SQLite export a .nsys-rep report is converted to: `nsys export` into a cache folder
// ($XDG_CACHE_HOME/ddpscope/nsys, else ~/.cache/ddpscope/nsys) as <hash of the report's bytes>
// .sqlite, reused when present. options.progress goes from 0 to 1 (the hash is the first tenth;
// nsys reports nothing while it exports); options.cancel stops the hash or kills nsys. Throws
// TraceError with the command to run when `nsys` is not on the PATH, and with what nsys wrote
// on its standard error when it fails.
std::string exportNsysReport(const std::string& report_path, const ReadOptions& options = {});

// Absent integer values in rows.
inline constexpr std::int64_t kNsysNone = std::numeric_limits<std::int64_t>::min();

// A GPU activity row: CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET or _SYNCHRONIZATION.
struct NsysGpuRow {
  enum class Table : std::uint8_t { Kernel, Memcpy, Memset, Sync } table = Table::Kernel;
  std::int64_t start = 0, end = 0;  // on the capture's clock
  std::int64_t device = 0, context = kNsysNone, stream = 0;
  std::int64_t correlation = kNsysNone;
  std::int64_t global_pid = 0;
  // Kernel: StringIds ids of the demangled, short and mangled names (kNsysNone when absent).
  std::int64_t demangled = kNsysNone, short_name = kNsysNone, mangled = kNsysNone;
  std::int64_t bytes = kNsysNone;                                                  // memcpy, memset
  std::int64_t copy_kind = kNsysNone, src_kind = kNsysNone, dst_kind = kNsysNone;  // memcpy
  std::int64_t mem_kind = kNsysNone;                                               // memset
  std::int64_t sync_type = kNsysNone;                                              // sync
};

// A CUDA runtime or driver API call (CUPTI_ACTIVITY_KIND_RUNTIME).
struct NsysApiRow {
  std::int64_t start = 0, end = 0;
  std::int64_t global_tid = 0;
  std::int64_t correlation = kNsysNone;
  std::int64_t name_id = kNsysNone;  // StringIds
};

// An NVTX_EVENTS row.
struct NsysNvtxRow {
  std::int64_t start = 0, end = kNsysNone;  // end absent: a mark, or a range never closed
  std::int64_t event_type = 0;              // ENUM_NSYS_EVENT_TYPE
  std::int64_t global_tid = 0;
  std::optional<std::string_view> text;  // inline text
  std::int64_t text_id = kNsysNone;      // or a StringIds id
  bool binary_payload = false;           // binaryData holds an extended payload
};

struct NsysProcess {
  std::int64_t global_pid = 0;
  std::int64_t pid = 0;
  std::string name;
};

// Turns rows into one RankTrace per process that ran GPU work. Rows may come in any order.
class NsysRowMapper {
 public:
  // `name` is the file, for messages. Times become ns since capture_start (the capture's clock);
  // base_utc_ns is the wall-clock time of capture_start.
  NsysRowMapper(std::string name, std::int64_t capture_start, std::int64_t base_utc_ns);
  ~NsysRowMapper();
  NsysRowMapper(const NsysRowMapper&) = delete;
  NsysRowMapper& operator=(const NsysRowMapper&) = delete;

  void addString(std::int64_t id, std::string_view value);
  void addProcess(const NsysProcess& process);
  void addThreadName(std::int64_t global_tid, std::int64_t name_id);
  // Rank numbers: from an MPI rank table (process -> rank), or the environment's rank and world
  // size (used when the export holds one rank process), naming the variable.
  void addMpiRank(std::int64_t global_pid, std::int64_t rank);
  void setEnvironmentRank(std::int64_t rank, std::string variable, std::int64_t world_size);
  // A note every rank carries (the export's schema, what was missing).
  void addNote(std::string note);

  void addGpu(const NsysGpuRow& row);
  void addApi(const NsysApiRow& row);
  void addNvtx(const NsysNvtxRow& row);
  // Rows a reader skipped itself (NULL where a value is needed).
  void countIncompleteRow() { ++incomplete_rows_; }
  // Says every GPU row has been given: host rows of processes without GPU work are then only
  // counted, not kept until finish (an export of 100 000 processes stays small).
  void gpuRowsDone() { gpu_done_ = true; }

  // The ranks, canonical, ordered by rank. Throws TraceError when two processes claim one rank.
  std::vector<ImportedRank> finish();

 private:
  struct Process;
  Process& process(std::int64_t global_pid);
  std::optional<std::int64_t> time(std::int64_t ts);
  std::string_view text(std::int64_t id, std::int64_t& missing);
  // Keeps a kernel's short name (StringIds id) beside its displayed name, once per name.
  void keepShortName(Process& p, NameId name, std::int64_t short_id);

  std::string name_;
  std::int64_t capture_start_, base_utc_ns_;
  std::unordered_map<std::int64_t, std::string> strings_;
  std::map<std::int64_t, NsysProcess> process_info_;
  std::unordered_map<std::int64_t, std::int64_t> thread_names_;
  std::map<std::int64_t, std::int64_t> mpi_ranks_;
  std::optional<std::int64_t> env_rank_, env_world_;
  std::string env_variable_;
  std::vector<std::string> notes_;
  std::unordered_map<std::int64_t, std::unique_ptr<Process>> processes_;
  Process* last_ = nullptr;
  std::int64_t last_pid_ = 0;
  std::int64_t before_capture_ = 0, bad_duration_ = 0, bad_time_ = 0, incomplete_rows_ = 0;
  std::int64_t missing_strings_ = 0, open_ranges_ = 0, marks_ = 0;
  bool gpu_done_ = false;
  std::unordered_set<std::int64_t> other_pids_;  // host rows only, after gpuRowsDone
  std::int64_t other_rows_ = 0;
  // Whether a host row of this process is left out (counted) rather than kept.
  bool leaveOut(std::int64_t global_pid);
};

}  // namespace ddpscope::trace
