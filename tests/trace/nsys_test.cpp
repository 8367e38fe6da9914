// The importer registry and the Nsight Systems importer: the real two-GPU export against figures
// computed without ddpscope (tests/data/nsys/README.md), rank numbering, sniffing, round trips
// through our files, and hostile SQLite files made here.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "app/analysis/analysis.h"
#include "tracer/format/importer.h"
#include "tracer/format/nsys_importer.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;
using namespace ddpscope::trace;
namespace fs = std::filesystem;

namespace {

const std::string kExport = std::string(DDPSCOPE_TEST_DATA) + "/nsys/two_gpu_sendrecv.sqlite";

fs::path freshDir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("ddpscope-nsys-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::int64_t countKind(const RankTrace& r, EventKind kind) {
  std::int64_t n = 0;
  for (const auto& t : r.tracks) {
    for (auto k : t.kind_of)
      n += k == kind;
  }
  return n;
}

bool hasWarning(const RankTrace& r, std::string_view text) {
  for (const auto& w : r.warnings) {
    if (w.find(text) != std::string::npos) return true;
  }
  return false;
}

// Builds a small Nsight-like export with SQL statements.
class FakeExport {
 public:
  explicit FakeExport(const fs::path& path) : path_(path.string()) {
    fs::remove(path);
    EXPECT_EQ(sqlite3_open(path_.c_str(), &db_), SQLITE_OK);
  }
  ~FakeExport() { sqlite3_close(db_); }
  FakeExport(const FakeExport&) = delete;
  FakeExport& operator=(const FakeExport&) = delete;

  FakeExport& sql(const std::string& statements) {
    char* error = nullptr;
    const int rc = sqlite3_exec(db_, statements.c_str(), nullptr, nullptr, &error);
    EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "") << " in " << statements;
    sqlite3_free(error);
    return *this;
  }
  // The tables every test export has: schema 3.25, the capture's start at 1000 ns on its clock
  // (UTC 5e18 ns), two strings, a kernel table and a runtime table.
  FakeExport& basics() {
    return sql(
        "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
        "INSERT INTO META_DATA_EXPORT VALUES('EXPORT_SCHEMA_VERSION', '3.25.0');"
        "CREATE TABLE StringIds(id INTEGER PRIMARY KEY, value TEXT NOT NULL);"
        "INSERT INTO StringIds VALUES(1, 'gemm_kernel'), (2, 'gemm'), (3, "
        "'cudaLaunchKernel_v7000'), (4, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL');"
        "CREATE TABLE TARGET_INFO_SESSION_START_TIME(utcEpochNs INTEGER, systemClockNs "
        "INTEGER);"
        "INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES(5000000000000000000, 1000);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER NOT NULL, end INTEGER NOT NULL, "
        "deviceId INTEGER, contextId INTEGER, streamId INTEGER, correlationId INTEGER, globalPid "
        "INTEGER, demangledName INTEGER, shortName INTEGER);"
        "CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME(start INTEGER, end INTEGER, globalTid INTEGER, "
        "correlationId INTEGER, nameId INTEGER);");
  }
  // A kernel of process pid (globalPid pid << 24).
  FakeExport& kernel(std::int64_t pid, std::int64_t start, std::int64_t end, int name = 1,
                     int correlation = 0, int device = 0) {
    return sql("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(" + std::to_string(start) + "," +
               std::to_string(end) + "," + std::to_string(device) + ",1,7," +
               std::to_string(correlation) + "," + std::to_string(pid << 24) + "," +
               std::to_string(name) + ",2);");
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  sqlite3* db_ = nullptr;
};

// Expects reading `path` to fail with a TraceError whose message holds `text`.
void expectError(const std::string& path, std::string_view text) {
  try {
    loadRun({path});
    ADD_FAILURE() << path << " loaded; expected an error with: " << text;
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

}  // namespace

// ---- the real export -----------------------------------------------------------------------

TEST(NsysExport, SummaryMatchesTheIndependentFigures) {
  const trace::Run run = loadRun({kExport});
  ASSERT_EQ(run.ranks.size(), 2u);
  const auto report = analysis::analyzeRun(run);
  ASSERT_EQ(report.ranks.size(), 2u);
  struct Expected {
    std::int64_t device, stream, kernels, comm, memcpy, memset;
    TimeNs comm_ns, compute_ns, overlap_ns;
  };
  // tests/data/nsys/README.md: process 144 is rank 0, process 145 rank 1.
  const Expected expected[] = {{0, 7, 1993, 33, 510, 133, 17172652, 253690832, 0},
                               {1, 15, 2017, 33, 510, 136, 8229100, 256095624, 0}};
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("rank " + std::to_string(i));
    const auto& e = expected[i];
    const auto& r = report.ranks[i];
    const auto& trace = run.ranks[i];
    using analysis::ActivityClass;
    EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Communication)], e.comm);
    EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Computation)], e.kernels - e.comm);
    EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Memory)], e.memcpy + e.memset);
    EXPECT_EQ(countKind(trace, EventKind::Kernel), e.kernels);
    EXPECT_EQ(countKind(trace, EventKind::Memcpy), e.memcpy);
    EXPECT_EQ(countKind(trace, EventKind::Memset), e.memset);
    EXPECT_EQ(r.whole.comm_ns, e.comm_ns);
    EXPECT_EQ(r.whole.compute_ns, e.compute_ns);
    EXPECT_EQ(r.whole.overlap_ns, e.overlap_ns);
    // Every kernel ran on the process's one device and stream.
    for (const auto& t : trace.tracks) {
      if (t.kind != TrackKind::Gpu) continue;
      for (std::size_t k = 0; k < t.size(); ++k) {
        if (t.kind_of[k] != EventKind::Kernel) continue;
        ASSERT_EQ(t.device(), e.device);
        ASSERT_EQ(t.stream(), e.stream);
      }
    }
  }
}

// GPU busy time and span straight from the export's tables with SQL, apart from the importer:
// the union of each process's kernels, copies and sets (a running maximum of the ends in start
// order). The export's 366 CUPTI_ACTIVITY_KIND_SYNCHRONIZATION rows (325 ms of host waiting,
// more than the capture's 300 ms) are not GPU work and must not make the GPU look busy.
TEST(NsysExport, GpuIdleIsTheUnionOfWorkFromTheTables) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(kExport.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  const char* sql =
      "WITH w AS (SELECT start, end, globalPid >> 24 AS p FROM CUPTI_ACTIVITY_KIND_KERNEL "
      " UNION ALL SELECT start, end, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMCPY "
      " UNION ALL SELECT start, end, globalPid >> 24 FROM CUPTI_ACTIVITY_KIND_MEMSET), "
      "o AS (SELECT p, start, end, MAX(end) OVER (PARTITION BY p ORDER BY start, end "
      " ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS prev FROM w) "
      "SELECT MAX(end) - MIN(start), SUM(MAX(0, end - MAX(start, COALESCE(prev, start)))), "
      " (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION) FROM o GROUP BY p ORDER BY p";
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, sql, -1, &st, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  std::vector<std::pair<TimeNs, TimeNs>> want;  // span, busy per process in pid order
  std::int64_t syncs = 0;
  while (sqlite3_step(st) == SQLITE_ROW) {
    want.emplace_back(sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1));
    syncs = sqlite3_column_int64(st, 2);
  }
  sqlite3_finalize(st);
  sqlite3_close(db);
  ASSERT_EQ(want.size(), 2u);
  EXPECT_EQ(syncs, 366);
  const auto report = analysis::analyzeRun(loadRun({kExport}));
  ASSERT_EQ(report.ranks.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE("rank " + std::to_string(i));
    const auto& w = report.ranks[i].whole;
    EXPECT_EQ(w.span_ns, want[i].first);
    EXPECT_EQ(w.busy_ns, want[i].second);
    EXPECT_EQ(w.idle_ns, want[i].first - want[i].second);
  }
  // 8.68 % and 10.51 % idle: a GPU made busy by the syncs would read far less.
  EXPECT_NEAR(report.ranks[0].whole.idle_pct.value(), 8.68, 0.005);
  EXPECT_NEAR(report.ranks[1].whole.idle_pct.value(), 10.51, 0.005);
}

TEST(NsysExport, RanksAreProcessesInOrderAndSaySo) {
  const auto ranks = importFile(kExport);
  ASSERT_EQ(ranks.size(), 2u);
  const std::int64_t pids[] = {144, 145};
  for (std::size_t i = 0; i < 2; ++i) {
    const auto& r = ranks[i];
    EXPECT_EQ(r.origin, RankOrigin::Order);
    EXPECT_EQ(r.trace.rank, static_cast<std::int32_t>(i));
    EXPECT_EQ(r.trace.world_size, 2);
    EXPECT_FALSE(r.trace.world_size_declared);
    EXPECT_EQ(r.trace.path, kExport);
    ASSERT_TRUE(r.trace.process_names.count(pids[i]));
    EXPECT_EQ(r.trace.process_names.at(pids[i]), "python3");
    EXPECT_TRUE(hasWarning(r.trace, "is process " + std::to_string(pids[i]) +
                                        " (python3), numbered by process order"));
    EXPECT_EQ(r.trace.source(), "imported");
  }
}

TEST(NsysExport, TimesAreNanosecondsOnTheSessionsClock) {
  const auto ranks = importFile(kExport);
  // The first kernel of the capture is rank 1's at 60111513113 on the capture's clock; the capture
  // began at 28254349605 on that clock, at UTC 1779782330176752435.
  const TimeNs utc = 1779782330176752435, clock_start = 28254349605;
  TimeNs first_kernel = std::numeric_limits<TimeNs>::max();
  for (const auto& r : ranks) {
    for (const auto& t : r.trace.tracks) {
      for (std::size_t k = 0; k < t.size(); ++k) {
        if (t.kind_of[k] == EventKind::Kernel)
          first_kernel = std::min(first_kernel, r.trace.base_time_ns + t.start[k]);
      }
    }
  }
  EXPECT_EQ(first_kernel, utc + (60111513113 - clock_start));
}

TEST(NsysExport, LaunchesFlowToTheirKernelsAndNvtxRangesAreKept) {
  const auto ranks = importFile(kExport);
  for (const auto& r : ranks) {
    const auto& t = r.trace;
    ASSERT_GT(t.flows.size(), 1000u);
    for (const auto& f : t.flows) {
      const auto& from = t.tracks[static_cast<std::size_t>(f.from_track)];
      const auto& to = t.tracks[static_cast<std::size_t>(f.to_track)];
      ASSERT_EQ(from.kind, TrackKind::Host);
      ASSERT_EQ(to.kind, TrackKind::Gpu);
      ASSERT_LE(f.from_ts, f.to_ts);  // a launch precedes its work
      EXPECT_EQ(t.names[f.cat], "ac2g");
    }
    // The CUDA API version suffix is dropped: cudaLaunchKernel_v7000 is cudaLaunchKernel.
    EXPECT_NE(t.names.find("cudaLaunchKernel"), StringTable::npos);
    EXPECT_EQ(t.names.find("cudaLaunchKernel_v7000"), StringTable::npos);
    EXPECT_GT(countKind(t, EventKind::Runtime), 1000);
    EXPECT_GT(countKind(t, EventKind::Driver), 0);  // cuLaunchKernelEx
    // NVTX: PyTorch's inline text and NCCL's ranges through StringIds.
    EXPECT_NE(t.names.find("ncclSend"), StringTable::npos);
    EXPECT_NE(t.names.find("ncclGroupStart"), StringTable::npos);
    EXPECT_GT(countKind(t, EventKind::UserAnnotation), 9000);
    EXPECT_GT(countKind(t, EventKind::Sync), 0);
    // Bytes of copies and fills.
    for (const auto& tr : t.tracks) {
      for (std::size_t k = 0; k < tr.size(); ++k) {
        if (tr.kind_of[k] == EventKind::Memcpy || tr.kind_of[k] == EventKind::Memset) {
          ASSERT_GE(tr.bytes[k], 0);
        }
      }
    }
  }
}

TEST(NsysExport, ConvertsToOurFilesAndReadsBackTheSameRun) {
  const auto dir = freshDir("roundtrip");
  // What `ddpscope-cli convert capture.sqlite dir/` writes.
  for (auto& r : importFile(kExport)) {
    r.trace.ddpscope.present = true;
    r.trace.ddpscope.source = "imported";
    r.trace.world_size_declared = true;
    writeTraceFile(r.trace, (dir / ("rank-" + std::to_string(r.trace.rank) + ".json.gz")).string());
  }
  const trace::Run original = loadRun({kExport});
  const trace::Run back = loadRun({dir.string()});
  ASSERT_EQ(back.ranks.size(), original.ranks.size());
  for (std::size_t i = 0; i < back.ranks.size(); ++i) {
    RankTrace a = original.ranks[i];
    a.ddpscope.present = true;
    a.ddpscope.source = "imported";
    a.world_size_declared = true;
    a.path = back.ranks[i].path;
    a.warnings = back.ranks[i].warnings;
    EXPECT_EQ(describeDifference(a, back.ranks[i]), "") << "rank " << i;
  }
  const auto x = analysis::analyzeRun(original), y = analysis::analyzeRun(back);
  for (std::size_t i = 0; i < x.ranks.size(); ++i) {
    EXPECT_EQ(x.ranks[i].counts, y.ranks[i].counts);
    EXPECT_EQ(x.ranks[i].whole.comm_ns, y.ranks[i].whole.comm_ns);
    EXPECT_EQ(x.ranks[i].whole.compute_ns, y.ranks[i].whole.compute_ns);
    EXPECT_EQ(x.ranks[i].whole.overlap_ns, y.ranks[i].whole.overlap_ns);
    EXPECT_EQ(x.ranks[i].whole.idle_ns, y.ranks[i].whole.idle_ns);
  }
  fs::remove_all(dir);
}

// Nsight's short kernel names, per rank (tests/data/nsys/README.md "Kernel short names": counted
// with SQL over CUPTI_ACTIVITY_KIND_KERNEL joined twice with StringIds).
constexpr std::string_view kSendRecv =
    "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)";
constexpr std::string_view kNvjet = "nvjet_tst_192x192_64x4_2x1_v_bz_coopB_bias_TNN";
constexpr std::string_view kLayerNorm =
    "void at::native::<unnamed>::vectorized_layer_norm_kernel<float, float, (bool)0>(int, T2, "
    "const T1 *, const T1 *, const T1 *, T2 *, T2 *, T1 *)";

// Names with a short name of their own, distinct short names, and kernels that have one.
void expectShortNamesOfTheExport(const RankTrace& t, std::size_t rank) {
  SCOPED_TRACE("rank " + std::to_string(rank));
  const std::int64_t kernels_with_one[] = {1826, 1847};
  EXPECT_EQ(t.kernel_short_names.size(), 24u);
  std::set<std::string> distinct;
  for (const auto& [name, short_name] : t.kernel_short_names)
    distinct.insert(t.names[short_name]);
  EXPECT_EQ(distinct.size(), 8u);
  std::int64_t with = 0;
  for (const auto& tr : t.tracks) {
    for (std::size_t k = 0; k < tr.size(); ++k)
      with += tr.kind_of[k] == EventKind::Kernel && !t.kernelShortName(tr.name[k]).empty();
  }
  EXPECT_EQ(with, kernels_with_one[rank]);
  const auto shortOf = [&](std::string_view name) {
    const NameId id = t.names.find(name);
    EXPECT_NE(id, StringTable::npos) << name;
    return id == StringTable::npos ? std::string("?") : std::string(t.kernelShortName(id));
  };
  EXPECT_EQ(shortOf(kSendRecv), "ncclDevKernel_SendRecv");
  EXPECT_EQ(shortOf(kLayerNorm), "vectorized_layer_norm_kernel");
  EXPECT_EQ(shortOf(kNvjet), "");  // its short name is its name
}

TEST(NsysExport, KernelsKeepTheirShortNamesBesideTheDemangledOnes) {
  const auto ranks = importFile(kExport);
  ASSERT_EQ(ranks.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    expectShortNamesOfTheExport(ranks[i].trace, i);
}

TEST(NsysExport, ShortNamesSurviveTheConversionToKinetoArgs) {
  const auto dir = freshDir("short-names");
  // What `ddpscope-cli convert capture.sqlite dir/` writes: the short name in the kernel's args.
  auto ranks = importFile(kExport);
  for (auto& r : ranks) {
    r.trace.ddpscope.present = true;
    r.trace.world_size_declared = true;
    writeTraceFile(r.trace, (dir / ("rank-" + std::to_string(r.trace.rank) + ".json.gz")).string());
  }
  const std::string json = serializeTrace(ranks[0].trace);
  EXPECT_NE(json.find("\"short name\": \"ncclDevKernel_SendRecv\""), std::string::npos);
  for (std::size_t i = 0; i < 2; ++i) {
    const std::string file = (dir / ("rank-" + std::to_string(i) + ".json.gz")).string();
    ReadOptions whole, pieces;
    whole.piece_bytes = 0;
    pieces.piece_bytes = 64 << 10;  // parsed in pieces by two threads: their tables merge
    pieces.threads = 2;
    const RankTrace a = readTraceFile(file, whole);
    const RankTrace b = readTraceFile(file, pieces);
    expectShortNamesOfTheExport(a, i);
    expectShortNamesOfTheExport(b, i);
    EXPECT_EQ(describeDifference(a, b), "");
  }
  fs::remove_all(dir);
}

TEST(KinetoArgs, ShortNameOfAKernelOnly) {
  // A short name equal to the name, on a non-kernel, not a string, or a second one for a name is
  // not kept.
  const RankTrace t = parseTraceText(R"js({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k<int>(int)", "pid": 0, "tid": 7, "ts": 1, "dur": 1,
     "args": {"device": 0, "stream": 7, "short name": "k"}},
    {"ph": "X", "cat": "kernel", "name": "k<int>(int)", "pid": 0, "tid": 7, "ts": 3, "dur": 1,
     "args": {"device": 0, "stream": 7, "short name": "other"}},
    {"ph": "X", "cat": "kernel", "name": "plain", "pid": 0, "tid": 7, "ts": 5, "dur": 1,
     "args": {"device": 0, "stream": 7, "short name": "plain"}},
    {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD", "pid": 0, "tid": 7, "ts": 7, "dur": 1,
     "args": {"device": 0, "stream": 7, "short name": "copy"}},
    {"ph": "X", "cat": "kernel", "name": "bare", "pid": 0, "tid": 7, "ts": 9, "dur": 1,
     "args": {"device": 0, "stream": 7, "short name": 12}}]})js");
  ASSERT_EQ(t.kernel_short_names.size(), 1u);
  EXPECT_EQ(t.kernelShortName(t.names.find("k<int>(int)")), "k");
  EXPECT_EQ(t.kernelShortName(t.names.find("plain")), "");
  EXPECT_EQ(t.kernelShortName(t.names.find("Memcpy HtoD")), "");
  EXPECT_EQ(t.kernelShortName(t.names.find("bare")), "");
  const std::string written = serializeTrace(t);
  EXPECT_NE(written.find("\"short name\": \"k\""), std::string::npos);
  EXPECT_EQ(written.find("\"short name\": \"other\""), std::string::npos);
}

TEST(NsysRows, ShortNameKeptOnlyWhenItDiffersAndIsKnown) {
  NsysRowMapper m("rows", 0, 0);
  m.addString(1, "void gemm<float>(float*)");
  m.addString(2, "gemm");
  m.addString(3, "relu");
  m.addString(4, "void relu<int>(int*)");
  NsysGpuRow row;
  row.global_pid = 5ll << 24;
  row.end = 10;
  row.demangled = 1;
  row.short_name = 2;
  m.addGpu(row);
  row.demangled = kNsysNone;  // only a short name: it is the name shown
  row.short_name = 3;
  m.addGpu(row);
  row.demangled = 1;
  row.short_name = 3;  // a later row of a name: the first one decided
  m.addGpu(row);
  row.demangled = 4;
  row.short_name = 99;  // not in StringIds: none, and not counted as missing (the name is known)
  m.addGpu(row);
  const auto ranks = m.finish();
  ASSERT_EQ(ranks.size(), 1u);
  const auto& t = ranks[0].trace;
  EXPECT_EQ(t.kernel_short_names.size(), 1u);
  EXPECT_EQ(t.kernelShortName(t.names.find("void gemm<float>(float*)")), "gemm");
  EXPECT_EQ(t.kernelShortName(t.names.find("relu")), "");
  EXPECT_EQ(t.kernelShortName(t.names.find("void relu<int>(int*)")), "");
  EXPECT_FALSE(hasWarning(t, "string ids that are not in StringIds"));
}

TEST(NsysExport, FlowsKeepTheirTracksWhenAPidIsADeviceNumber) {
  // Process 0 (a container's first process can be numbered so), thread 7, launches a kernel on
  // device 0, stream 7: its host track and the kernel's GPU track are both (0, 7).
  const auto dir = freshDir("pid-device");
  FakeExport x(dir / "pid0.sqlite");
  x.basics()
      .kernel(0, 3000, 4000, 1, 42)
      .sql("INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(2000, 2500, 7, 42, 3);");
  auto check = [](const RankTrace& t, const std::string& where) {
    ASSERT_EQ(t.flows.size(), 1u) << where;
    const auto& f = t.flows[0];
    const auto& from = t.tracks[static_cast<std::size_t>(f.from_track)];
    const auto& to = t.tracks[static_cast<std::size_t>(f.to_track)];
    EXPECT_EQ(from.kind, TrackKind::Host) << where;
    EXPECT_EQ(to.kind, TrackKind::Gpu) << where;
    EXPECT_EQ(from.pid, 0) << where;
    EXPECT_EQ(from.tid, 7) << where;
    EXPECT_EQ(to.pid, 0) << where;
    EXPECT_EQ(to.tid, 7) << where;
    EXPECT_EQ(f.to_ts - f.from_ts, 1000) << where;  // launch at 2000, kernel at 3000 (ns)
  };
  auto ranks = importFile(x.path());
  ASSERT_EQ(ranks.size(), 1u);
  check(ranks[0].trace, "imported");
  // Converted to our format and read back.
  const auto file = (dir / "rank-0.json").string();
  writeTraceFile(ranks[0].trace, file);
  const auto back = readTraceFile(file);
  check(back, "read back");
  fs::remove_all(dir);
}

TEST(NsysExport, AStreamOfCollectivesAndComputeIsMixed) {
  // Each process runs its NCCL kernels on its compute stream (tests/data/nsys/README.md).
  const auto report = analysis::analyzeRun(loadRun({kExport}));
  ASSERT_EQ(report.ranks.size(), 2u);
  for (const auto& r : report.ranks) {
    std::size_t with_collectives = 0;
    for (const auto& s : r.streams) {
      if (s.counts[static_cast<std::size_t>(analysis::ActivityClass::Communication)] == 0) continue;
      ++with_collectives;
      EXPECT_EQ(s.stream, r.rank == 0 ? 7 : 15);
      EXPECT_EQ(analysis::streamRoleName(s.role), "mixed");
    }
    EXPECT_EQ(with_collectives, 1u);
  }
}

TEST(NsysExport, SeveralExportsOpenAsOneRun) {
  // The same capture twice stands for two nodes: ranks by process order continue over the files.
  const auto dir = freshDir("nodes");
  fs::copy_file(kExport, dir / "node0.sqlite");
  fs::copy_file(kExport, dir / "node1.sqlite");
  const trace::Run run = loadRun({dir.string()});
  ASSERT_EQ(run.ranks.size(), 4u);
  for (std::int32_t i = 0; i < 4; ++i) {
    EXPECT_EQ(run.ranks[static_cast<std::size_t>(i)].rank, i);
    EXPECT_EQ(run.ranks[static_cast<std::size_t>(i)].world_size, 4);
  }
  EXPECT_NE(run.ranks[2].path.find("node1.sqlite"), std::string::npos);
  EXPECT_TRUE(hasWarning(run.ranks[2], "numbered rank 2 (rank 0 of its file"));
  fs::remove_all(dir);
}

TEST(NsysExport, CancelStopsTheRead) {
  std::atomic<bool> cancel{true};
  ReadOptions options;
  options.cancel = &cancel;
  EXPECT_THROW(importFile(kExport, options), LoadCancelled);
}

TEST(NsysExport, ProgressRisesToOne) {
  std::vector<double> seen;
  ReadOptions options;
  options.progress = [&](double f) { seen.push_back(f); };
  importFile(kExport, options);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 1.0);
}

// ---- sniffing and the registry --------------------------------------------------------------

TEST(Importers, SniffByContentNotName) {
  const auto dir = freshDir("sniff");
  const auto kineto = std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz";
  EXPECT_NE(importerFor(kineto)->name().find("Kineto"), std::string_view::npos);
  EXPECT_NE(importerFor(kExport)->name().find("Nsight Systems SQLite"), std::string_view::npos);
  // A copy of the export named .json is still the export; a JSON document named .sqlite is JSON.
  fs::copy_file(kExport, dir / "capture.json");
  EXPECT_NE(importerFor((dir / "capture.json").string())->name().find("Nsight"),
            std::string_view::npos);
  std::ofstream(dir / "trace.sqlite") << "  \n{\"traceEvents\": []}";
  EXPECT_NE(importerFor((dir / "trace.sqlite").string())->name().find("Kineto"),
            std::string_view::npos);
  // Unrecognised bytes: the importer of the name's extension, else the JSON reader, which says
  // what is wrong.
  std::ofstream(dir / "junk.sqlite") << "hello";
  EXPECT_NE(importerFor((dir / "junk.sqlite").string())->name().find("Nsight"),
            std::string_view::npos);
  std::ofstream(dir / "junk.bin") << "hello";
  EXPECT_NE(importerFor((dir / "junk.bin").string())->name().find("Kineto"),
            std::string_view::npos);
  expectError((dir / "junk.sqlite").string(), "not a readable SQLite database");
  // Binary bytes no importer knows (an image, a program), whatever the name: not a trace.
  std::ofstream(dir / "picture.json", std::ios::binary)
      << std::string("\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
  const std::string elf = std::string("\x7f") + "ELF" + std::string("\x02\x01\x01\0\0\0", 6);
  std::ofstream(dir / "program.json.gz", std::ios::binary) << elf;
  for (const char* name : {"picture.json", "program.json.gz"}) {
    EXPECT_THROW(importerFor((dir / name).string()), TraceError) << name;
    expectError((dir / name).string(), "not a trace (binary content)");
  }
  // The report container goes to the nsys route by its name.
  std::ofstream(dir / "capture.nsys-rep") << "binary";
  EXPECT_NE(importerFor((dir / "capture.nsys-rep").string())->name().find("report"),
            std::string_view::npos);
  for (const auto& imp : importers()) {
    EXPECT_FALSE(imp->sniff("", "x")) << imp->name();
  }
  fs::remove_all(dir);
}

TEST(Importers, ReportWithoutNsysNamesTheCommand) {
  const auto dir = freshDir("rep");
  std::ofstream(dir / "capture.nsys-rep") << "binary";
  const char* old = std::getenv("PATH");
  const std::string saved = old ? old : "";
  ::setenv("PATH", dir.c_str(), 1);  // no nsys there
  const auto report = (dir / "capture.nsys-rep").string();
  expectError(report, "`nsys` is not on the PATH");
  // The command to run, with this report's names.
  expectError(report, "nsys export --type sqlite --output " + (dir / "capture.sqlite").string() +
                          " " + report);
  ::setenv("PATH", saved.c_str(), 1);
  fs::remove_all(dir);
}

namespace {

// Sets an environment variable for the life of the object, then puts the old value back.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A stand-in for Nsight's `nsys` in dir/bin, first on the PATH, and a cache folder of its own in
// dir/cache. `body` is the script after the line that counts its runs (in dir/runs).
struct FakeNsys {
  FakeNsys(const fs::path& dir, const std::string& body)
      : bin(dir / "bin"),
        cache(dir / "cache"),
        runs(dir / "runs"),
        path("PATH",
             bin.string() + ":" + std::string(std::getenv("PATH") ? std::getenv("PATH") : "")),
        xdg("XDG_CACHE_HOME", cache.string()) {
    fs::create_directories(bin);
    const auto script = bin / "nsys";
    std::ofstream(script) << "#!/bin/sh\necho run >> '" << runs.string() << "'\n" << body;
    fs::permissions(script, fs::perms::owner_all);
  }
  std::size_t runCount() const {
    std::ifstream in(runs);
    std::size_t n = 0;
    for (std::string line; std::getline(in, line);)
      ++n;
    return n;
  }
  std::vector<fs::path> cached() const {
    std::vector<fs::path> files;
    if (fs::exists(cache / "ddpscope" / "nsys")) {
      for (const auto& e : fs::directory_iterator(cache / "ddpscope" / "nsys"))
        files.push_back(e.path());
    }
    return files;
  }
  fs::path bin, cache, runs;
  ScopedEnv path, xdg;
};

// What `nsys export --type sqlite --force-overwrite true --output OUT REPORT` does, for a test:
// the real export copied to OUT.
std::string copyingNsys() {
  return "out=''\n"
         "while [ $# -gt 0 ]; do\n"
         "  if [ \"$1\" = --output ]; then out=\"$2\"; shift; fi\n"
         "  shift\n"
         "done\n"
         "cp '" +
         kExport + "' \"$out\"\n";
}

}  // namespace

TEST(NsysReport, ExportedOnceIntoTheCacheByContentThenRead) {
  const auto dir = freshDir("rep-ok");
  FakeNsys nsys(dir, copyingNsys());
  const auto report = (dir / "capture.nsys-rep").string();
  std::ofstream(report) << "fake report 1\n";
  std::vector<double> seen;
  ReadOptions options;
  options.progress = [&](double f) { seen.push_back(f); };
  const auto ranks = importFile(report, options);
  // The export's two processes, named after the report.
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].trace.path, report);
  EXPECT_EQ(ranks[1].trace.rank, 1);
  EXPECT_EQ(nsys.runCount(), 1u);
  ASSERT_FALSE(seen.empty());
  EXPECT_TRUE(std::is_sorted(seen.begin(), seen.end()));
  EXPECT_EQ(seen.back(), 1.0);
  // Named by the 64-bit XXH3 of the report's 14 bytes (computed apart from ddpscope, by
  // `xxhsum -H3`), and nothing else left in the cache (no partial export, no logs).
  const auto files = nsys.cached();
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].filename().string(), "2ce8ac1577726d38.sqlite");
  // Opened again, or copied under another name: the export is reused.
  importFile(report);
  fs::copy_file(report, dir / "copy.nsys-rep");
  EXPECT_EQ(importFile((dir / "copy.nsys-rep").string()).size(), 2u);
  EXPECT_EQ(nsys.runCount(), 1u);
  // Other bytes: another export.
  std::ofstream(report) << "fake report 2\n";
  importFile(report);
  EXPECT_EQ(nsys.runCount(), 2u);
  EXPECT_EQ(nsys.cached().size(), 2u);
  fs::remove_all(dir);
}

TEST(NsysReport, FailingNsysGivesItsStandardError) {
  const auto dir = freshDir("rep-fail");
  FakeNsys nsys(dir,
                "echo 'Importing report...'\n"
                "echo 'ERROR: capture.nsys-rep: unsupported report version 9' >&2\n"
                "exit 3\n");
  const auto report = (dir / "capture.nsys-rep").string();
  std::ofstream(report) << "fake report 1\n";
  expectError(report,
              "nsys export exited with status 3: ERROR: capture.nsys-rep: unsupported "
              "report version 9; try it yourself:\n  nsys export --type sqlite");
  EXPECT_EQ(nsys.runCount(), 1u);
  EXPECT_TRUE(nsys.cached().empty());  // nothing kept of a failed export
  // A command that exits 0 and writes nothing is no success either.
  FakeNsys silent(dir, "exit 0\n");
  expectError(report, "nsys export wrote no export");
  fs::remove_all(dir);
}

TEST(NsysReport, CancelKillsNsys) {
  const auto dir = freshDir("rep-cancel");
  // Writes its process id, then waits as a long export would (exec: the same process).
  FakeNsys nsys(dir, "echo $$ > '" + (dir / "pid").string() + "'\nexec sleep 60\n");
  const auto report = (dir / "capture.nsys-rep").string();
  std::ofstream(report) << "fake report 1\n";
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    for (int i = 0; i < 2000 && !fs::exists(dir / "pid"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the pid written whole
    cancel = true;
  });
  ReadOptions options;
  options.cancel = &cancel;
  EXPECT_THROW(importFile(report, options), LoadCancelled);
  canceller.join();
  std::int64_t pid = 0;
  std::ifstream(dir / "pid") >> pid;
  ASSERT_GT(pid, 0);
  EXPECT_NE(::kill(static_cast<pid_t>(pid), 0), 0);  // killed and reaped: no such process
  EXPECT_TRUE(nsys.cached().empty());
  fs::remove_all(dir);
}

namespace {
// Whether the process runs (a zombie awaiting its new parent's wait counts as gone).
bool running(pid_t pid) {
  if (::kill(pid, 0) != 0) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const auto paren = text.rfind(')');
  return paren == std::string::npos || paren + 2 >= text.size() || text[paren + 2] != 'Z';
}
}  // namespace

TEST(NsysReport, CancelKillsAnNsysThatIgnoresTermAndWhatItStarted) {
  const auto dir = freshDir("rep-cancel-term");
  // Ignores SIGTERM, and so does the process it starts (an ignored signal stays ignored across
  // exec); writes both process ids, then waits.
  FakeNsys nsys(dir, "trap '' TERM\nsleep 60 &\necho $! > '" + (dir / "child").string() +
                         "'\necho $$ > '" + (dir / "pid").string() + "'\nwait\n");
  const auto report = (dir / "capture.nsys-rep").string();
  std::ofstream(report) << "fake report 1\n";
  std::atomic<bool> cancel{false};
  std::thread canceller([&] {
    for (int i = 0; i < 2000 && !fs::exists(dir / "pid"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    cancel = true;
  });
  ReadOptions options;
  options.cancel = &cancel;
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THROW(importFile(report, options), LoadCancelled);
  canceller.join();
  // Killed after the 2 s of grace, long before the 60 s the script would wait.
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(20));
  std::int64_t pid = 0, child = 0;
  std::ifstream(dir / "pid") >> pid;
  std::ifstream(dir / "child") >> child;
  ASSERT_GT(pid, 0);
  ASSERT_GT(child, 0);
  EXPECT_NE(::kill(static_cast<pid_t>(pid), 0), 0);  // killed and reaped
  for (int i = 0; i < 200 && running(static_cast<pid_t>(child)); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_FALSE(running(static_cast<pid_t>(child)));
  EXPECT_TRUE(nsys.cached().empty());
  fs::remove_all(dir);
}

TEST(Importers, DialogFilterAndFoldersKnowEveryFormat) {
  const auto filter = dialogNameFilter();
  for (const char* ext : {"*.json", "*.json.gz", "*.sqlite", "*.nsys-rep"})
    EXPECT_NE(filter.find(ext), std::string::npos) << filter;
  EXPECT_TRUE(hasImportableExtension("a/b/capture.sqlite"));
  EXPECT_FALSE(hasImportableExtension("notes.txt"));
  const auto dir = freshDir("folder");
  expectError(dir.string(), "*.sqlite");
  fs::remove_all(dir);
}

TEST(Importers, FileNameRankRule) {
  EXPECT_EQ(rankFromFileName("/x/rank-3.json.gz"), 3);
  EXPECT_EQ(rankFromFileName("rank_12.sqlite"), 12);
  EXPECT_EQ(rankFromFileName("/rank-x/trace.json"), std::nullopt);
  EXPECT_EQ(rankFromFileName("rank-.json"), std::nullopt);
}

// ---- hostile SQLite ---------------------------------------------------------------------------

TEST(NsysHostile, TruncatedExportIsAClearError) {
  const auto dir = freshDir("truncated");
  std::ifstream in(kExport, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const std::size_t keep : {std::size_t{100}, std::size_t{4096}, bytes.size() / 2}) {
    const auto path = dir / ("cut" + std::to_string(keep) + ".sqlite");
    std::ofstream(path, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(keep));
    try {
      loadRun({path.string()});
      ADD_FAILURE() << "a " << keep << "-byte prefix loaded";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

TEST(NsysHostile, SqliteThatIsNotAnExport) {
  const auto dir = freshDir("notnsys");
  FakeExport(dir / "shop.sqlite").sql("CREATE TABLE orders(id INTEGER, item TEXT);");
  expectError((dir / "shop.sqlite").string(), "is an SQLite database but not an Nsight Systems");
  std::ofstream(dir / "empty.sqlite");  // zero bytes: an empty database
  expectError((dir / "empty.sqlite").string(), "not an Nsight Systems export");
  fs::remove_all(dir);
}

TEST(NsysHostile, TableWithMissingColumns) {
  const auto dir = freshDir("columns");
  FakeExport(dir / "k.sqlite")
      .sql(
          "CREATE TABLE META_DATA_EXPORT(name TEXT, value TEXT);"
          "CREATE TABLE StringIds(id INTEGER, value TEXT);"
          "CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL(start INTEGER, end INTEGER);"
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(1, 2);");
  expectError((dir / "k.sqlite").string(),
              "CUPTI_ACTIVITY_KIND_KERNEL lacks the column(s) deviceId, streamId, globalPid");
  // An optional table lacking columns is left out with a note.
  FakeExport e(dir / "nvtx.sqlite");
  e.basics().kernel(7, 2000, 3000).sql("CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER);");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_TRUE(hasWarning(ranks[0].trace, "NVTX_EVENTS lacks the column(s) eventType, globalTid"));
  fs::remove_all(dir);
}

TEST(NsysHostile, StringIdsThatPointNowhereAreCounted) {
  const auto dir = freshDir("strings");
  FakeExport e(dir / "s.sqlite");
  e.basics()
      .kernel(7, 2000, 3000, 999)  // demangled 999 is missing; the short name (2) stands in
      .sql("INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(4000, 5000, 0, 1, 7, 0, " +
           std::to_string(7ll << 24) +
           ", 998, 997);"
           "INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES(1500, 1600, " +
           std::to_string((7ll << 24) | 9) + ", 0, 12345);");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  const auto& t = ranks[0].trace;
  EXPECT_NE(t.names.find("gemm"), StringTable::npos);
  EXPECT_NE(t.names.find("<unnamed kernel>"), StringTable::npos);
  EXPECT_NE(t.names.find("<unnamed CUDA call>"), StringTable::npos);
  EXPECT_TRUE(hasWarning(t, "4 names point to string ids that are not in StringIds")) << [&] {
    std::string all;
    for (const auto& w : t.warnings)
      all += w + "\n";
    return all;
  }();
  fs::remove_all(dir);
}

TEST(NsysHostile, NegativeDurationsAndEarlyRowsAreCountedAndDropped) {
  const auto dir = freshDir("durations");
  FakeExport e(dir / "d.sqlite");
  e.basics()
      .kernel(7, 2000, 3000)
      .kernel(7, 5000, 4000)                                 // ends before it starts
      .kernel(7, 500, 900)                                   // before the capture's start (1000)
      .kernel(7, 9223372036854775000, 9223372036854775800);  // impossibly late
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  const auto& t = ranks[0].trace;
  EXPECT_EQ(countKind(t, EventKind::Kernel), 1);
  EXPECT_TRUE(hasWarning(t, "1 rows with a negative duration"));
  EXPECT_TRUE(hasWarning(t, "1 rows before the capture's start were dropped"));
  EXPECT_TRUE(hasWarning(t, "1 rows with impossible timestamps"));
  // Times: ns since the capture's start, then rebased to the first event.
  EXPECT_EQ(t.base_time_ns + t.tracks[0].start[0], 5000000000000000000 + 1000);
  fs::remove_all(dir);
}

TEST(NsysHostile, NullsWhereValuesAreNeededAreCounted) {
  const auto dir = freshDir("nulls");
  FakeExport e(dir / "n.sqlite");
  e.basics()
      .kernel(7, 2000, 3000)
      .sql(
          "INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES(2500, 2600, NULL, 1, 7, 0, 117440512, 1, "
          "2);");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_TRUE(hasWarning(ranks[0].trace, "1 rows lacking a required value (NULL)"));
  fs::remove_all(dir);
}

TEST(NsysHostile, OldSchemaAndNoGpuWorkAreClearErrors) {
  const auto dir = freshDir("schema");
  FakeExport old(dir / "old.sqlite");
  old.basics()
      .kernel(7, 2000, 3000)
      .sql("UPDATE META_DATA_EXPORT SET value = '2.7.1' WHERE name = 'EXPORT_SCHEMA_VERSION';");
  expectError(old.path(), "export schema 2.7.1 is older than the schema 3");
  FakeExport none(dir / "none.sqlite");
  none.basics();
  expectError(none.path(), "holds no GPU activity");
  fs::remove_all(dir);
}

TEST(NsysHostile, HundredThousandProcesses) {
  const auto dir = freshDir("many");
  FakeExport e(dir / "m.sqlite");
  e.basics()
      .kernel(1, 2000, 3000)
      .sql(
          "CREATE TABLE PROCESSES(globalPid INTEGER, pid INTEGER, name TEXT);"
          "CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, globalTid "
          "INTEGER, text TEXT, textId INTEGER);"
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
          "INSERT INTO PROCESSES SELECT i << 24, i, 'worker' FROM n;"
          "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
          "INSERT INTO NVTX_EVENTS SELECT 1000 + i, 2000 + i, 59, (i << 24) | i, 'step', NULL FROM "
          "n;");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);  // one process ran GPU work
  EXPECT_EQ(ranks[0].trace.process_names.at(1), "worker");
  EXPECT_TRUE(hasWarning(ranks[0].trace, "of 99999 processes that ran no GPU work"));
  fs::remove_all(dir);
}

TEST(NsysHostile, UnfinishedRangesAndMarks) {
  const auto dir = freshDir("nvtx");
  FakeExport e(dir / "r.sqlite");
  e.basics()
      .kernel(7, 2000, 3000)
      .sql(
          "CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, globalTid "
          "INTEGER, text TEXT, textId INTEGER);"
          "INSERT INTO NVTX_EVENTS VALUES(1500, 9000, 59, " +
          std::to_string((7ll << 24) | 7) +
          ", 'ProfilerStep#4', NULL),"
          "(1600, NULL, 60, " +
          std::to_string((7ll << 24) | 7) +
          ", 'open', NULL),"
          "(1700, NULL, 34, " +
          std::to_string((7ll << 24) | 7) + ", 'mark', NULL);");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  const auto& t = ranks[0].trace;
  ASSERT_EQ(t.steps.size(), 1u);  // ProfilerStep#N from NVTX is a step
  EXPECT_EQ(t.steps[0].number, 4);
  EXPECT_TRUE(hasWarning(t, "1 NVTX ranges that never ended"));
  EXPECT_TRUE(hasWarning(t, "1 NVTX marks"));
  EXPECT_FALSE(hasWarning(t, "binary payload"));  // no binaryData column
  fs::remove_all(dir);
}

// NCCL's ranges with an extended payload (binaryData) are kept and the payloads counted, not
// decoded; ranges without one are not counted.
TEST(NsysHostile, NvtxPayloadsAreCountedNotDecoded) {
  const auto dir = freshDir("payload");
  FakeExport e(dir / "r.sqlite");
  const std::string tid = std::to_string((7ll << 24) | 7);
  e.basics()
      .kernel(7, 2000, 3000)
      .sql(
          "CREATE TABLE NVTX_EVENTS(start INTEGER, end INTEGER, eventType INTEGER, globalTid "
          "INTEGER, text TEXT, textId INTEGER, binaryData TEXT);"
          "INSERT INTO NVTX_EVENTS VALUES(1500, 1800, 59, " +
          tid +
          ", 'ncclAllReduce', NULL, x'0100000000000000000010000000000000'),(1900, 2100, 59, " +
          tid +
          ", 'ncclAllReduce', NULL, x'0100000000000000000020000000000000'),(2200, 2300, 59, " +
          tid + ", 'aten::add', NULL, NULL);");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  const auto& t = ranks[0].trace;
  std::size_t annotations = 0;
  for (const auto& tr : t.tracks)
    for (std::size_t i = 0; i < tr.size(); ++i)
      annotations += tr.kind_of[i] == EventKind::UserAnnotation ? 1 : 0;
  EXPECT_EQ(annotations, 3u);
  EXPECT_TRUE(hasWarning(t, "2 NVTX ranges carry a binary payload"))
      << ::testing::PrintToString(t.warnings);
  fs::remove_all(dir);
}

// ---- rank numbers -------------------------------------------------------------------------------

TEST(NsysRanks, MpiRanksTableWins) {
  const auto dir = freshDir("mpi");
  FakeExport e(dir / "mpi.sqlite");
  e.basics()
      .kernel(7, 2000, 3000)
      .kernel(8, 2000, 3000, 4, 0, 1)
      .sql(
          "CREATE TABLE MPI_RANKS(globalTid INTEGER, rank INTEGER);"
          "INSERT INTO MPI_RANKS VALUES(" +
          std::to_string((7ll << 24) | 7) + ", 5), (" + std::to_string((8ll << 24) | 8) + ", 3);");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 2u);
  EXPECT_EQ(ranks[0].trace.rank, 3);  // process 8
  EXPECT_EQ(ranks[1].trace.rank, 5);  // process 7
  EXPECT_EQ(ranks[0].origin, RankOrigin::Declared);
  EXPECT_TRUE(
      hasWarning(ranks[0].trace, "rank 3 is process 8, numbered from the export's MPI_RANKS"));
  FakeExport dup(dir / "dup.sqlite");
  dup.basics()
      .kernel(7, 2000, 3000)
      .kernel(8, 2000, 3000)
      .sql(
          "CREATE TABLE MPI_RANKS(globalTid INTEGER, rank INTEGER);"
          "INSERT INTO MPI_RANKS VALUES(" +
          std::to_string(7ll << 24) + ", 1), (" + std::to_string(8ll << 24) + ", 1);");
  expectError(dup.path(), "both have rank 1");
  fs::remove_all(dir);
}

TEST(NsysRanks, EnvironmentOfAOneProcessExport) {
  const auto dir = freshDir("env");
  FakeExport e(dir / "env.sqlite");
  e.basics()
      .kernel(7, 2000, 3000)
      .sql(
          "CREATE TABLE TARGET_INFO_SYSTEM_ENV(globalVid INTEGER, devStateName TEXT, name TEXT, "
          "nameEnum INTEGER, value TEXT);"
          "INSERT INTO TARGET_INFO_SYSTEM_ENV VALUES(0, 'x', 'DeviceEnvironment', 610, "
          "'HOME=/root;SLURM_PROCID=6;SLURM_NTASKS=8;PATH=/bin');");
  const auto ranks = importFile(e.path());
  ASSERT_EQ(ranks.size(), 1u);
  EXPECT_EQ(ranks[0].origin, RankOrigin::Environment);
  EXPECT_EQ(ranks[0].trace.rank, 6);
  EXPECT_EQ(ranks[0].trace.world_size, 8);
  EXPECT_TRUE(ranks[0].trace.world_size_declared);
  EXPECT_TRUE(hasWarning(ranks[0].trace, "from SLURM_PROCID=6 in the capture's environment"));
  fs::remove_all(dir);
}

// ---- a new importer: its own file and one registration line ----------------------------------

namespace {

// "TINYTRACE" then lines "start dur name": kernels of rank 0 on device 0, stream 1.
class TinyImporter final : public Importer {
 public:
  std::string_view name() const override { return "tiny test format"; }
  std::vector<std::string> extensions() const override { return {".tiny"}; }
  bool sniff(std::string_view head, std::string_view) const override {
    return head.starts_with("TINYTRACE");
  }
  std::vector<ImportedRank> read(const std::string& path, const ReadOptions&) const override {
    std::ifstream in(path);
    std::string magic;
    in >> magic;
    ImportedRank r;
    r.trace.path = path;
    r.trace.rank = rankFromFileName(path).value_or(0);
    const auto track = r.trace.trackIndex(TrackKind::Gpu, 0, 1);
    TimeNs start = 0, dur = 0;
    std::string name;
    while (in >> start >> dur >> name) {
      r.trace.tracks[static_cast<std::size_t>(track)].push({start, dur, r.trace.names.intern(name),
                                                            r.trace.names.intern("kernel"),
                                                            EventKind::Kernel});
    }
    finishImportedRank(r.trace);
    std::vector<ImportedRank> out;
    out.push_back(std::move(r));
    return out;
  }
};

const ImporterRegistration tiny_registration{std::make_shared<TinyImporter>()};

}  // namespace

TEST(Importers, ANewImporterNeedsOnlyItsRegistration) {
  const auto dir = freshDir("tiny");
  std::ofstream(dir / "rank-0.tiny") << "TINYTRACE\n100 50 gemm\n300 20 ncclKernel_AllReduce\n";
  std::ofstream(dir / "rank-1.tiny") << "TINYTRACE\n120 50 gemm\n";
  const trace::Run run = loadRun({dir.string()});  // the folder is found by the new extension
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[1].rank, 1);
  const auto report = analysis::analyzeRun(run);
  EXPECT_EQ(report.ranks[0].counts[static_cast<int>(analysis::ActivityClass::Communication)], 1);
  EXPECT_NE(dialogNameFilter().find("*.tiny"), std::string::npos);
  fs::remove_all(dir);
}
