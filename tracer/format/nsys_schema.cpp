// What an Nsight Systems export says about itself and its processes: the schema version, the
// capture's clock, the strings, the processes and threads, and where rank numbers come from.
#include <charconv>
#include <map>
#include <optional>

#include "nsys_internal.h"

namespace ddpscope::trace::nsys {

namespace {

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

std::pair<std::int64_t, std::int64_t> readSchemaAndClock(Database& db,
                                                         const std::set<std::string>& tables,
                                                         std::vector<std::string>& notes) {
  const auto has = [&](const char* t) { return tables.count(t) > 0; };
  const std::string& path = db.path();
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
  return {capture_start, base_utc};
}

void readStrings(ExportReader& r) {
  if (!r.has("StringIds")) {
    r.mapper.addNote("the export has no StringIds table: names are unknown");
    return;
  }
  const auto missing =
      r.readRows("StringIds", {{"id", true}, {"value", true}}, [&](sqlite3_stmt* st) {
        const auto* s = sqlite3_column_text(st, 1);
        if (sqlite3_column_type(st, 0) != SQLITE_NULL && s) {
          r.mapper.addString(
              sqlite3_column_int64(st, 0),
              std::string_view(reinterpret_cast<const char*>(s),
                               static_cast<std::size_t>(sqlite3_column_bytes(st, 1))));
        }
      });
  if (!missing.empty())
    r.mapper.addNote("the StringIds table lacks its id or value column: names are unknown");
}

void readProcessesAndRanks(ExportReader& r) {
  Database& db = r.db;
  NsysRowMapper& mapper = r.mapper;
  if (r.has("PROCESSES")) {
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
  if (r.has("ThreadNames")) {
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
  if (r.has("MPI_RANKS")) {
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
  if (mpi || !r.has("TARGET_INFO_SYSTEM_ENV")) return;
  const auto s = select("TARGET_INFO_SYSTEM_ENV", db.columns("TARGET_INFO_SYSTEM_ENV"),
                        {{"name", true}, {"value", true}});
  if (!s.missing_required.empty()) return;
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
    const auto rank_it = env.find(rank_var);
    if (rank_it == env.end()) continue;
    const auto rank = number(rank_it->second);
    if (!rank) continue;
    const auto w = env.find(size_var);
    const auto world = w == env.end() ? std::nullopt : number(w->second);
    mapper.setEnvironmentRank(*rank, std::string(rank_var) + "=" + rank_it->second,
                              world.value_or(0));
    break;
  }
}

}  // namespace ddpscope::trace::nsys
