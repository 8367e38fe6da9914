// Loading an Nsight Systems SQLite export (tracer/format/nsys_importer.h) against SQLite's own
// SELECT of the same rows, the practical limit: target ≤ 1.5× (docs/PERFORMANCE.md).
//
// The export is generated here: two processes, each on its own GPU with a compute and an NCCL
// stream, kernels named from a few dozen strings, and the same tables a real export has for them
// (StringIds, PROCESSES, the session's start, the export's schema).
#include <benchmark/benchmark.h>
#include <sqlite3.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "tests/bench/common/bench_main.h"
#include "tracer/format/nsys_importer.h"

using namespace ddpscope;
namespace fs = std::filesystem;

namespace {

void exec(sqlite3* db, const std::string& sql) {
  char* error = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &error) != SQLITE_OK) {
    const std::string why = error ? error : "?";
    sqlite3_free(error);
    throw std::runtime_error("generating the export: " + why);
  }
}

// The path of an export of `kernels` kernels, generated once per size.
const std::string& exportOf(std::int64_t kernels) {
  static std::map<std::int64_t, std::string> made;
  auto& path = made[kernels];
  if (!path.empty()) return path;
  path = (fs::temp_directory_path() / ("ddpscope-nsys-bench-" + std::to_string(kernels) + "-" +
                                       std::to_string(::getpid()) + ".sqlite"))
             .string();
  fs::remove(path);
  sqlite3* db = nullptr;
  sqlite3_open(path.c_str(), &db);
  exec(db,
       "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; BEGIN;"
       "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
       "INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION', '3.25.0');"
       "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
       "CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER, systemClockNs INTEGER);"
       "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES(1779782330176752435, 1000000);"
       "CREATE TABLE PROCESSES(globalPid INTEGER, pid INTEGER, name TEXT);"
       "INSERT INTO PROCESSES VALUES(2415919104, 144, 'python3'), (2432696320, 145, 'python3');"
       "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, "
       "deviceId INTEGER NOT NULL, contextId INTEGER NOT NULL, streamId INTEGER NOT NULL, "
       "correlationId INTEGER, globalPid INTEGER, demangledName INTEGER NOT NULL, shortName "
       "INTEGER NOT NULL);");
  constexpr int kNames = 48;
  for (int i = 0; i < kNames; ++i) {
    const std::string name =
        i % 8 == 0
            ? "ncclDevKernel_AllReduce_Sum_f32_RING_LL_" + std::to_string(i)
            : "void at::native::elementwise_kernel<128, 4>(int, op" + std::to_string(i) + ")";
    exec(db, "INSERT INTO StringIds VALUES(" + std::to_string(i) + ", '" + name + "');");
  }
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(?,?,?,?,?,?,?,?,?)", -1,
                     &st, nullptr);
  for (std::int64_t i = 0; i < kernels; ++i) {
    const std::int64_t process = i % 2, k = i / 2;
    const int name = static_cast<int>(k % kNames);
    const bool comm = name % 8 == 0;
    const std::int64_t start = 2'000'000 + k * 3'000 + (comm ? 500 : 0);
    sqlite3_bind_int64(st, 1, start);
    sqlite3_bind_int64(st, 2, start + (comm ? 4'000 : 2'500));
    sqlite3_bind_int64(st, 3, process);
    sqlite3_bind_int64(st, 4, process + 1);
    sqlite3_bind_int64(st, 5, comm ? 13 : 7);
    sqlite3_bind_int64(st, 6, i + 1);
    sqlite3_bind_int64(st, 7, (144 + process) << 24);
    sqlite3_bind_int64(st, 8, name);
    sqlite3_bind_int64(st, 9, name);
    sqlite3_step(st);
    sqlite3_reset(st);
  }
  sqlite3_finalize(st);
  exec(db, "COMMIT;");
  sqlite3_close(db);
  return path;
}

// The practical limit: SQLite stepping over the same kernel rows and strings the importer reads,
// every column fetched.
void BM_NsysSqliteSelect(benchmark::State& state) {
  const auto& path = exportOf(state.range(0));
  for (auto _ : state) {
    sqlite3* db = nullptr;
    sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
    std::int64_t sum = 0;
    for (const char* sql :
         {"SELECT id, value FROM StringIds",
          "SELECT start, end, deviceId, contextId, streamId, correlationId, globalPid, "
          "demangledName, shortName FROM CUPTI_ACTIVITY_KIND_KERNEL"}) {
      sqlite3_stmt* st = nullptr;
      sqlite3_prepare_v2(db, sql, -1, &st, nullptr);
      while (sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0, n = sqlite3_column_count(st); c < n; ++c)
          sum += sqlite3_column_type(st, c) == SQLITE_TEXT ? sqlite3_column_bytes(st, c)
                                                           : sqlite3_column_int64(st, c);
      }
      sqlite3_finalize(st);
    }
    sqlite3_close(db);
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_NsysSqliteSelect)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// The importer: the same rows into two canonical ranks, with their flows and steps.
void BM_NsysImport(benchmark::State& state) {
  const auto& path = exportOf(state.range(0));
  for (auto _ : state) {
    auto ranks = trace::readNsysSqlite(path);
    benchmark::DoNotOptimize(ranks.data());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations()) * state.range(0));
}
BENCHMARK(BM_NsysImport)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace

DDPSCOPE_BENCHMARK_MAIN();
