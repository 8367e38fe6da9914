// The Nsight Systems export as a database: opening it, its tables and columns, and the row reader
// every table of rows goes through (nsys_internal.h).
#include <algorithm>

#include "nsys_internal.h"

namespace ddpscope::trace::nsys {

Database::Database(const std::string& path, const ReadOptions& options)
    : path_(path), options_(options) {
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

Database::~Database() {
  sqlite3_close(db_);
}

void Database::fail(const std::string& what, int rc) const {
  checkCancel();
  if (rc == SQLITE_NOTADB || rc == SQLITE_CORRUPT) {
    throw TraceError(path_, kNoOffset,
                     "is not a readable SQLite database (" + std::string(sqlite3_errmsg(db_)) +
                         "): a truncated or damaged file, or not SQLite at all");
  }
  throw TraceError(path_, kNoOffset, what + ": " + sqlite3_errmsg(db_));
}

std::set<std::string> Database::tables() const {
  std::set<std::string> out;
  query("SELECT name FROM sqlite_master WHERE type IN ('table','view')", [&](sqlite3_stmt* st) {
    if (const auto* s = sqlite3_column_text(st, 0)) out.emplace(reinterpret_cast<const char*>(s));
  });
  return out;
}

std::set<std::string> Database::columns(const std::string& table) const {
  std::set<std::string> out;
  query("PRAGMA table_info(\"" + table + "\")", [&](sqlite3_stmt* st) {
    if (const auto* s = sqlite3_column_text(st, 1)) out.emplace(reinterpret_cast<const char*>(s));
  });
  return out;
}

std::int64_t Database::rowEstimate(const std::string& table) const {
  std::int64_t n = 0;
  try {
    query("SELECT max(rowid) FROM \"" + table + "\"",
          [&](sqlite3_stmt* st) { n = sqlite3_column_int64(st, 0); });
  } catch (const TraceError&) {
    n = 0;  // a table without row ids: no estimate
  }
  return std::max<std::int64_t>(n, 0);
}

Selection select(const std::string& table, const std::set<std::string>& have,
                 const std::vector<Column>& cols) {
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

ExportReader::ExportReader(Database& database, std::set<std::string> tables,
                           NsysRowMapper& row_mapper, const ReadOptions& options)
    : db(database), mapper(row_mapper), tables_(std::move(tables)), options_(options) {}

void ExportReader::weigh(const std::vector<std::string>& tables) {
  total_ = 0;
  for (const auto& t : tables)
    total_ += static_cast<double>(has(t) ? db.rowEstimate(t) : 0) + 1;
}

void ExportReader::progressed(std::int64_t rows) {
  done_ += static_cast<double>(rows);
  if (options_.progress) options_.progress(std::min(0.99, done_ / total_));
}

}  // namespace ddpscope::trace::nsys
