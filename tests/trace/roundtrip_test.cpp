#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tracer/format/file_io.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope::trace;
namespace fs = std::filesystem;

namespace {

std::string dataPath(const std::string& name) {
  return std::string(DDPSCOPE_TEST_DATA) + "/" + name;
}

fs::path tempDir() {
  auto d = fs::temp_directory_path() / ("ddpscope-rt-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

RankTrace ourTrace() {
  RankTrace t;
  t.rank = 3;
  t.world_size = 8;
  t.base_time_ns = 1'700'000'000'123'456'789;
  t.distributed_backend = "nccl";
  t.ddpscope.present = true;
  t.ddpscope.source = "sim";
  t.ddpscope.config = {{"bucket_mb", "25"}, {"fusion", "\"view\""}, {"world_size", "8"}};
  t.ddpscope.clock = {{"offset_to_rank0_ns", "-1200"}};
  t.ddpscope.buckets = {
      {0, 4096, "f32", {{"blocks.1.mlp.fc2.weight", 4000}, {"blocks.1.mlp.fc2.bias", 96}}},
      {1, 1 << 20, "bf16", {{"blocks.0.attn.qkv.weight", 1 << 20}}}};
  t.ddpscope.incomplete = true;
  t.ddpscope.dropped_records = 17;
  auto add = [&](TrackKind k, std::int64_t pid, std::int64_t tid, EventKind kind, const char* name,
                 TimeNs s, TimeNs d, std::int64_t corr, std::int32_t bucket, std::int32_t step,
                 std::int64_t bytes) {
    t.tracks[static_cast<std::size_t>(t.trackIndex(k, pid, tid))].push(
        {s, d, t.names.intern(name), t.names.intern(categoryName(kind)), kind, corr, bucket, step,
         bytes});
  };
  add(TrackKind::Host, 1000, 1000, EventKind::UserAnnotation, "ProfilerStep#0", 0, 90001, -1, -1,
      -1, -1);
  add(TrackKind::Host, 1000, 1000, EventKind::Runtime, "cudaLaunchKernel", 5, 3, 11, -1, -1, -1);
  add(TrackKind::Gpu, 0, 7, EventKind::Kernel, "sm90_xmma_gemm_bf16 \"quoted\" \\ ü", 10, 1001, 11,
      0, 0, -1);
  add(TrackKind::Gpu, 0, 40, EventKind::Kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 1011,
      50007, 12, 0, 0, 4096);
  add(TrackKind::Gpu, 0, 7, EventKind::Memcpy, "Memcpy DtoD (Device -> Device)", 2000, 1, 13, -1, 0,
      256);
  add(TrackKind::Gpu, 0, 7, EventKind::GpuAnnotation, "bucket 0 ready", 1011, 0, -1, 0, 0, -1);
  t.process_names[1000] = "ddpscope-agent";
  t.thread_names[{0, 7}] = "stream 7 compute";
  Flow f;
  f.id = 11;
  f.cat = t.names.intern("ac2g");
  f.name = t.names.intern("ac2g");
  f.from_ts = 5;
  f.to_ts = 10;
  f.from_track = t.findTrack(TrackKind::Host, 1000, 1000);
  f.to_track = t.findTrack(TrackKind::Gpu, 0, 7);
  t.flows.push_back(f);
  canonicalize(t);
  return t;
}

}  // namespace

class RoundTrip : public ::testing::TestWithParam<const char*> {};

TEST_P(RoundTrip, WriteThenReadReproducesTheModel) {
  const RankTrace original = readTraceFile(dataPath(GetParam()));
  const auto dir = tempDir();
  for (const char* suffix : {".json", ".json.gz"}) {
    const auto path = (dir / (std::string("rt") + suffix)).string();
    writeTraceFile(original, path);
    const RankTrace back = readTraceFile(path);
    EXPECT_EQ(describeDifference(original, back), "") << suffix;
  }
  fs::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(KinetoTraces, RoundTrip,
                         ::testing::Values("resnet50_ddp_rank0.json.gz",
                                           "resnet50_world1_rank0.json.gz",
                                           "alexnet_sync_events.json.gz", "rocm_mi250_tiny.json.gz",
                                           "triton_driver_launch.json.gz"));

TEST(RoundTripOurs, DdpscopeBlockAndEveryColumnSurvive) {
  const RankTrace original = ourTrace();
  const auto dir = tempDir();
  const auto path = (dir / "rank-3.json.gz").string();
  writeTraceFile(original, path);
  const RankTrace back = readTraceFile(path);
  EXPECT_EQ(describeDifference(original, back), "");
  EXPECT_EQ(back.source(), "sim");
  EXPECT_TRUE(back.ddpscope.incomplete);
  EXPECT_EQ(back.ddpscope.dropped_records, 17);
  ASSERT_EQ(back.ddpscope.buckets.size(), 2u);
  EXPECT_EQ(back.ddpscope.buckets[0].params[0].name, "blocks.1.mlp.fc2.weight");
  EXPECT_EQ(back.ddpscope.configValue("fusion"), "\"view\"");
  EXPECT_EQ(back.base_time_ns, 1'700'000'000'123'456'789);
  ASSERT_EQ(back.steps.size(), 1u);
  EXPECT_EQ(back.steps[0].end, 90001);
  fs::remove_all(dir);
}

TEST(RoundTripOurs, WrittenFileHasTheKinetoLayout) {
  const std::string json = serializeTrace(ourTrace());
  // Tools that look for the rank match this exact text.
  EXPECT_NE(json.find("\"rank\": 3"), std::string::npos);
  EXPECT_NE(json.find("\"traceEvents\": ["), std::string::npos);
  EXPECT_NE(json.find("\"baseTimeNanoseconds\": 1700000000123456789"), std::string::npos);
  EXPECT_NE(json.find("\"ts\": 1.011, \"dur\": 50.007"), std::string::npos);
  EXPECT_NE(json.find("\"ph\": \"s\""), std::string::npos);
  EXPECT_NE(json.find("\"cat\": \"ac2g\""), std::string::npos);
}

TEST(AtomicWrite, FailureLeavesThePreviousFileIntact) {
  const auto dir = tempDir();
  const auto path = (dir / "keep.json").string();
  writeFileAtomically(path, "old");
  EXPECT_THROW(writeFileAtomically((dir / "no-such-dir" / "x.json").string(), "new"),
               std::runtime_error);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "old");
  std::size_t leftovers = 0;
  for (const auto& e : fs::directory_iterator(dir))
    leftovers += e.path().filename().string().starts_with(".");
  EXPECT_EQ(leftovers, 0u);
  fs::remove_all(dir);
}

// A write that fails part-way in the destination's own folder (the file-size limit stands in for
// a full disk: write() stores what fits, then fails with EFBIG): the file already at the final
// name is unchanged byte for byte, and no temporary file is left next to it.
TEST(AtomicWrite, FailureMidWriteInTheTargetFolderLeavesTheOldFileIntact) {
  const auto dir = tempDir() / "mid-write";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto path = (dir / "rank-3.json").string();
  WriteOptions plain;
  plain.compression = WriteOptions::Compression::Plain;
  writeTraceFile(ourTrace(), path, plain);
  std::string old;
  {
    std::ifstream in(path, std::ios::binary);
    old.assign(std::istreambuf_iterator<char>(in), {});
  }
  ASSERT_GT(old.size(), 100u);

  // The new trace is megabytes; at most 64 KiB of it can be written.
  const RankTrace big = readTraceFile(dataPath("resnet50_ddp_rank0.json.gz"));
  constexpr rlim_t kLimit = 64 << 10;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < kLimit)
    GTEST_SKIP() << "RLIMIT_FSIZE hard limit below 64 KiB";
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);  // EFBIG instead of a signal
  rlimit limited = saved;
  limited.rlim_cur = kLimit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string error;
  try {
    writeTraceFile(big, path, plain);
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);

  // It failed while writing (not opening): part of the file had been written.
  EXPECT_NE(error.find("(write)"), std::string::npos) << error;
  EXPECT_NE(error.find(path), std::string::npos) << error;
  std::string now;
  {
    std::ifstream in(path, std::ios::binary);
    now.assign(std::istreambuf_iterator<char>(in), {});
  }
  EXPECT_TRUE(now == old) << "the file at the final name changed: " << now.size() << " bytes, was "
                          << old.size();
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"rank-3.json"});
  // And the writer still works once there is room.
  writeTraceFile(big, path, plain);
  EXPECT_GT(fs::file_size(path), std::uintmax_t{kLimit});
  fs::remove_all(dir);
}

// A set of files (a report's Markdown, HTML and figures) is written as one: the second file
// failing mid-write in the target folder leaves the first, already written to its temporary,
// unrenamed, so every destination keeps its old bytes and no temporary remains.
TEST(AtomicWrite, ASetOfFilesIsWrittenWholeOrNotAtAll) {
  const auto dir = tempDir() / "file-set";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto a = (dir / "report.md").string(), b = (dir / "timeline.png").string();
  writeFilesAtomically({{a, "old report"}, {b, "old figure"}});
  const std::string small = "new report", big(1 << 20, 'x');  // 1 MiB cannot fit in 64 KiB
  constexpr rlim_t kLimit = 64 << 10;
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  if (saved.rlim_max != RLIM_INFINITY && saved.rlim_max < kLimit)
    GTEST_SKIP() << "RLIMIT_FSIZE hard limit below 64 KiB";
  const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
  rlimit limited = saved;
  limited.rlim_cur = kLimit;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &limited), 0);
  std::string error;
  try {
    writeFilesAtomically({{a, small}, {b, big}});
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(error.find(b), std::string::npos) << error;
  EXPECT_NE(error.find("none of the 2 files was written"), std::string::npos) << error;
  const auto contents = [](const std::string& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(contents(a), "old report");
  EXPECT_EQ(contents(b), "old figure");
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"report.md", "timeline.png"}));
  writeFilesAtomically({{a, small}, {b, big}});  // with room, both are replaced
  EXPECT_EQ(contents(a), small);
  EXPECT_EQ(fs::file_size(b), big.size());
  fs::remove_all(dir);
}

// An output path that names a folder (`digest --out runs/`) is refused in the user's words, and
// nothing is left beside it.
TEST(AtomicWrite, AFolderInTheWayIsNamedAsOne) {
  const auto dir = tempDir() / "folder-in-the-way";
  fs::remove_all(dir);
  fs::create_directories(dir / "out");
  std::string error;
  try {
    writeFileAtomically((dir / "out").string(), "bytes");
  } catch (const std::runtime_error& e) {
    error = e.what();
  }
  EXPECT_NE(error.find("it is a folder; give a file name"), std::string::npos) << error;
  EXPECT_EQ(error.find("rename"), std::string::npos) << error;
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.push_back(e.path().filename().string());
  EXPECT_EQ(names, std::vector<std::string>{"out"});
  fs::remove_all(dir);
}

// A copied trace interns into its own strings: the copy's index must not point into the
// original's storage (it did, and interning after the original was gone read freed memory).
TEST(StringTable, ACopyIndexesItsOwnStrings) {
  StringTable copy;
  {
    StringTable original;
    original.intern("gemm");
    original.intern("ncclDevKernel_AllReduce_Sum_f32_RING_LL");
    copy = original;
  }
  EXPECT_EQ(copy.intern("gemm"), 0u);
  EXPECT_EQ(copy.find("ncclDevKernel_AllReduce_Sum_f32_RING_LL"), 1u);
  EXPECT_EQ(copy.intern("sgd_update"), 2u);
  StringTable constructed = copy;
  EXPECT_EQ(constructed.find("sgd_update"), 2u);
  EXPECT_EQ(constructed.size(), 3u);
}

// A track keeps each kind's usual category once and the events written with another aside; every
// way of writing rows (push, setRow after resize, in any order), sorting and shrinking keeps
// each event's category as written.
TEST(TrackCategory, EveryEventKeepsTheCategoryItWasWrittenWith) {
  StringTable names;
  const NameId kernel = names.intern("kernel"), Kernel = names.intern("Kernel"),
               overhead = names.intern("overhead"), python = names.intern("python_function");
  Track t;
  const auto row = [](TimeNs start, NameId cat, EventKind kind) {
    EventRow e;
    e.start = start;
    e.dur = 10;
    e.cat = cat;
    e.kind = kind;
    return e;
  };
  t.push(row(50, kernel, EventKind::Kernel));
  t.push(row(40, Kernel, EventKind::Kernel));  // the same kind, written the other way
  t.push(row(30, overhead, EventKind::Other));
  t.push(row(20, python, EventKind::Other));
  t.push(row(10, kernel, EventKind::Kernel));
  const std::vector<NameId> written = {kernel, Kernel, overhead, python, kernel};
  for (std::size_t i = 0; i < written.size(); ++i)
    EXPECT_EQ(t.category(i), written[i]) << i;
  // Rows written in place, out of order, and one overwritten back to its kind's usual category.
  t.resize(8);
  t.setRow(7, row(5, python, EventKind::Other));
  t.setRow(5, row(7, Kernel, EventKind::Kernel));
  t.setRow(6, row(6, overhead, EventKind::Other));
  t.setRow(1, row(40, kernel, EventKind::Kernel));
  const std::vector<NameId> after = {kernel, kernel, overhead, python,
                                     kernel, Kernel, overhead, python};
  for (std::size_t i = 0; i < after.size(); ++i)
    EXPECT_EQ(t.category(i), after[i]) << i;
  EXPECT_EQ(t.row(5).cat, Kernel);
  // Sorted by start (5, 6, 7, 10, 20, 30, 40, 50): each category follows its event.
  t.sortByStart();
  const std::vector<NameId> sorted = {python, overhead, Kernel, kernel,
                                      python, overhead, kernel, kernel};
  for (std::size_t i = 0; i < sorted.size(); ++i)
    EXPECT_EQ(t.category(i), sorted[i]) << i;
  // Shrunk: the events cut off take their categories with them.
  t.resize(3);
  t.push(row(60, kernel, EventKind::Kernel));
  EXPECT_EQ(t.category(2), Kernel);
  EXPECT_EQ(t.category(3), kernel);
  EXPECT_LT(t.categoryBytes(), 200u);

  // A track whose first Other event is a "Trace" range and the rest python_function: settled,
  // python_function is the usual one and only the first is kept aside; every category reads
  // the same.
  Track h;
  h.push(row(0, names.intern("Trace"), EventKind::Other));
  for (int i = 1; i <= 1000; ++i)
    h.push(row(i, python, EventKind::Other));
  h.push(row(2000, Kernel, EventKind::Kernel));
  const std::size_t before = h.categoryBytes();
  h.settleCategories();
  EXPECT_LT(h.categoryBytes(), before / 50);
  EXPECT_EQ(h.category(0), names.find("Trace"));
  for (std::size_t i = 1; i <= 1000; ++i)
    ASSERT_EQ(h.category(i), python) << i;
  EXPECT_EQ(h.category(1001), Kernel);

  // Loading settles them: canonicalize (what every reader ends with) does it for each track.
  RankTrace rank;
  const NameId trace_cat = rank.names.intern("Trace"), py = rank.names.intern("python_function");
  Track host;
  host.push(row(0, trace_cat, EventKind::Other));
  for (int i = 1; i <= 1000; ++i)
    host.push(row(i, py, EventKind::Other));
  rank.tracks.push_back(std::move(host));
  const std::size_t unsettled = rank.tracks[0].categoryBytes();
  canonicalize(rank);
  ASSERT_EQ(rank.tracks.size(), 1u);
  EXPECT_LT(rank.tracks[0].categoryBytes(), unsettled / 50);
  EXPECT_EQ(rank.tracks[0].category(0), trace_cat);
  EXPECT_EQ(rank.tracks[0].category(1000), py);
}
