#pragma once
// The Nsight Systems importer's pieces (nsys_importer.h), shared by its files and no one else:
//   nsys_sqlite.cpp   the export as a database: tables, columns, one shared row reader
//   nsys_schema.cpp   schema version, time base, strings, processes, threads, rank sources
//   nsys_gpu_rows.cpp kernel, memcpy, memset and synchronisation rows
//   nsys_launches.cpp CUDA runtime and driver calls, and the launch -> GPU work flows
//   nsys_nvtx.cpp     NVTX ranges
//   nsys_ranks.cpp    the row mapper's front and rank assignment (finish)
//   nsys_importer.cpp readNsysSqlite and the importers; nsys_report.cpp the .nsys-rep export

#include <sqlite3.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nsys_importer.h"
#include "trace_error.h"

namespace ddpscope::trace {

namespace nsys {

// Nsight's global ids: a process is (vm << 56) | (pid << 24); a thread adds its tid in the low
// 24 bits.
inline constexpr std::int64_t kTidMask = 0xFFFFFF;
inline std::int64_t pidOfGlobal(std::int64_t global_pid) {
  return (global_pid >> 24) & kTidMask;
}
inline std::int64_t globalPidOfTid(std::int64_t global_tid) {
  return global_tid & ~kTidMask;
}

// start/end on the capture's clock -> (model start, duration), or why not.
enum class TimeFault { None, BeforeCapture, NegativeDuration, Impossible };
inline TimeFault modelTimes(std::int64_t start, std::int64_t end, std::int64_t capture_start,
                            TimeNs& t, TimeNs& dur) {
  if (start < capture_start) return TimeFault::BeforeCapture;
  if (end < start) return TimeFault::NegativeDuration;
  if (__builtin_sub_overflow(start, capture_start, &t) || __builtin_sub_overflow(end, start, &dur))
    return TimeFault::Impossible;
  if (t > kMaxTraceSpanNs || dur > kMaxTraceSpanNs) return TimeFault::Impossible;
  return TimeFault::None;
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

// ---------------------------------------------------------------------------------------------
// The export as a database (nsys_sqlite.cpp)
// ---------------------------------------------------------------------------------------------

class Database {
 public:
  // Opens read-only; options.cancel interrupts queries. Throws TraceError when it is no database.
  Database(const std::string& path, const ReadOptions& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  void checkCancel() const {
    if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) throw LoadCancelled();
  }
  [[noreturn]] void fail(const std::string& what, int rc) const;

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

  std::set<std::string> tables() const;
  std::set<std::string> columns(const std::string& table) const;
  // max(rowid): the table's rows, for progress; 0 when it has no row ids.
  std::int64_t rowEstimate(const std::string& table) const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const ReadOptions& options_;
  sqlite3* db_ = nullptr;
};

// A column's integer, kNsysNone for NULL.
inline std::int64_t intOr(sqlite3_stmt* st, int col) {
  return sqlite3_column_type(st, col) == SQLITE_NULL ? kNsysNone : sqlite3_column_int64(st, col);
}
struct Column {
  const char* name;
  bool required;
};
// One table's columns as a SELECT list: those present by name, NULL for those missing.
struct Selection {
  std::string sql;
  std::vector<std::string> missing_required;
};
Selection select(const std::string& table, const std::set<std::string>& have,
                 const std::vector<Column>& cols);
std::string joined(const std::vector<std::string>& v);

inline constexpr std::string_view kExportHint =
    "nsys export --type sqlite --output CAPTURE.sqlite "
    "CAPTURE.nsys-rep";

// One read of an export: its database, tables, mapper, and the progress over its tables of rows.
class ExportReader {
 public:
  ExportReader(Database& db, std::set<std::string> tables, NsysRowMapper& mapper,
               const ReadOptions& options);

  Database& db;
  NsysRowMapper& mapper;

  bool has(const std::string& table) const { return tables_.count(table) > 0; }
  const std::set<std::string>& tables() const { return tables_; }
  // Weighs the tables of rows for progress (their row estimates); call once, before reading.
  void weigh(const std::vector<std::string>& tables);

  // The shared row reader: selects `cols` of `table` (NULL for absent optional ones) and calls
  // row(stmt) per row, moving progress on. When a required column is absent it reads nothing and
  // returns their names; else an empty list.
  template <class F>
  std::vector<std::string> readRows(const std::string& table, const std::vector<Column>& cols,
                                    F&& row) {
    auto s = select(table, db.columns(table), cols);
    if (!s.missing_required.empty()) return std::move(s.missing_required);
    std::size_t n = 0;
    db.query(s.sql, [&](sqlite3_stmt* st) {
      if ((++n & 65535) == 0) progressed(65536);
      row(st);
    });
    progressed(static_cast<std::int64_t>(n & 65535));
    return {};
  }

 private:
  void progressed(std::int64_t rows);
  std::set<std::string> tables_;
  const ReadOptions& options_;
  double total_ = 0, done_ = 0;
};

// The tables' readers, in the order readNsysSqlite calls them.
// Schema version and time base: notes for the mapper; returns (capture start, UTC base).
std::pair<std::int64_t, std::int64_t> readSchemaAndClock(Database& db,
                                                         const std::set<std::string>& tables,
                                                         std::vector<std::string>& notes);
void readStrings(ExportReader& r);
void readProcessesAndRanks(ExportReader& r);  // PROCESSES, ThreadNames, MPI_RANKS, environment
void readGpuTables(ExportReader& r);          // nsys_gpu_rows.cpp
void readRuntimeCalls(ExportReader& r);       // nsys_launches.cpp
void readNvtxRanges(ExportReader& r);         // nsys_nvtx.cpp

}  // namespace nsys

// One process's rows as they become its rank's trace.
struct NsysRowMapper::Process {
  std::int64_t global_pid = 0;
  RankTrace trace;
  std::int64_t gpu_rows = 0, host_rows = 0;
  std::unordered_map<std::int64_t, NameId> names;      // StringIds id -> name
  std::unordered_map<std::int64_t, NameId> api_names;  // StringIds id -> name without version
  // By kernel name id: whether its short name was looked at (the first row of a name decides).
  std::vector<bool> short_name_seen;
  std::unordered_map<nsys::TrackKey, std::int32_t, nsys::TrackKeyHash> tracks;
  std::unordered_map<std::int64_t, std::int64_t> context_device;
  std::vector<NsysGpuRow> syncs;  // placed when every context's device is known
  std::array<NameId, 10> cats{};
  bool cats_made = false;
  std::int64_t before_capture = 0, bad_duration = 0, bad_time = 0, missing_strings = 0;
  std::int64_t open_ranges = 0;
  std::int64_t nvtx_payloads = 0;  // ranges kept whose binary payload is not decoded

  NameId cat(EventKind k) {
    if (!cats_made) {
      for (int i = 0; i < 10; ++i)
        cats[static_cast<std::size_t>(i)] = trace.names.intern(categoryName(EventKind(i)));
      cats_made = true;
    }
    return cats[static_cast<std::size_t>(k)];
  }
  std::int32_t track(TrackKind kind, std::int64_t pid, std::int64_t tid) {
    const nsys::TrackKey key{kind, pid, tid};
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
  // Counts a row whose times cannot be kept; true when they can (t and dur set).
  bool times(std::int64_t start, std::int64_t end, std::int64_t capture_start, TimeNs& t,
             TimeNs& dur) {
    switch (nsys::modelTimes(start, end, capture_start, t, dur)) {
      case nsys::TimeFault::BeforeCapture:
        ++before_capture;
        return false;
      case nsys::TimeFault::NegativeDuration:
        ++bad_duration;
        return false;
      case nsys::TimeFault::Impossible:
        ++bad_time;
        return false;
      case nsys::TimeFault::None:
        break;
    }
    return true;
  }
  // The host track of a thread of this process.
  Track& hostTrack(std::int64_t global_tid) {
    return trace.tracks[static_cast<std::size_t>(
        track(TrackKind::Host, nsys::pidOfGlobal(global_pid), global_tid & nsys::kTidMask))];
  }
  // Synchronisations onto their streams' devices (nsys_gpu_rows.cpp).
  void placeSyncs();
  // Launch -> GPU work flows, by correlation id (nsys_launches.cpp).
  void linkLaunches();
};

}  // namespace ddpscope::trace
