#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <string>

#include "tracer/cupti/run_identity.h"
#include "tracer/format/file_io.h"

using namespace ddpscope::cupti;
namespace trace = ddpscope::trace;

namespace {

RunIdentity identity(const std::map<std::string, std::string>& env) {
  return runIdentityFromEnvironment([&env](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  });
}

}  // namespace

TEST(RunIdentity, Defaults) {
  const auto id = identity({});
  EXPECT_EQ(id.rank, 0);
  EXPECT_EQ(id.world_size, 1);
  EXPECT_FALSE(id.world_size_known);  // written as unknown, not compared with other files
  EXPECT_EQ(id.rank_variable, "");
  EXPECT_EQ(id.trace_dir, ".");
  EXPECT_EQ(id.buffer_cap_bytes, kDefaultBufferCapMb << 20);
  EXPECT_EQ(rankTracePath(id), "./rank-0.json.gz");
  EXPECT_TRUE(id.warnings.empty());
}

TEST(RunIdentity, LaunchersInOrder) {
  auto id = identity({{"RANK", "3"}, {"WORLD_SIZE", "8"}, {"OMPI_COMM_WORLD_RANK", "5"}});
  EXPECT_EQ(id.rank, 3);
  EXPECT_EQ(id.world_size, 8);
  EXPECT_TRUE(id.world_size_known);
  EXPECT_EQ(id.rank_variable, "RANK");
  id = identity(
      {{"OMPI_COMM_WORLD_RANK", "5"}, {"OMPI_COMM_WORLD_SIZE", "16"}, {"SLURM_PROCID", "1"}});
  EXPECT_EQ(id.rank, 5);
  EXPECT_EQ(id.world_size, 16);
  id =
      identity({{"SLURM_PROCID", "2"}, {"SLURM_NTASKS", "4"}, {"DDPSCOPE_TRACE_DIR", "/tmp/run7"}});
  EXPECT_EQ(id.rank, 2);
  EXPECT_EQ(id.world_size, 4);
  EXPECT_EQ(rankTracePath(id), "/tmp/run7/rank-2.json.gz");
}

TEST(RunIdentity, MalformedValuesAreReportedAndSkipped) {
  const auto id = identity({{"RANK", "two"},
                            {"SLURM_PROCID", "1"},
                            {"WORLD_SIZE", "-4"},
                            {"DDPSCOPE_CUPTI_BUFFER_MB", "64MB"}});
  EXPECT_EQ(id.rank, 1);
  EXPECT_EQ(id.rank_variable, "SLURM_PROCID");
  EXPECT_EQ(id.world_size, 2);        // at least rank + 1
  EXPECT_FALSE(id.world_size_known);  // a guess
  EXPECT_EQ(id.buffer_cap_bytes, kDefaultBufferCapMb << 20);
  EXPECT_EQ(id.warnings.size(), 3u);
}

TEST(RunIdentity, BufferCap) {
  EXPECT_EQ(identity({{"DDPSCOPE_CUPTI_BUFFER_MB", "64"}}).buffer_cap_bytes, 64u << 20);
  EXPECT_EQ(identity({{"DDPSCOPE_CUPTI_BUFFER_MB", "0"}}).buffer_cap_bytes, 1u << 20);
}

// Two processes of one run claiming the same rank: the second to finish keeps the first's file
// and publishes its own under its pid; a file from an earlier run is replaced.
TEST(RunIdentity, ATraceWrittenDuringThisRunIsNotReplaced) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("ddpscope-claim-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string path = (dir / "rank-3.json.gz").string();
  const std::string mine = (dir / "rank-3.pid4242.json.gz").string();
  const auto now = [] {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    return std::int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  };
  EXPECT_EQ(unclaimedTracePath(path, 3, 4242, now()), path);  // nothing there yet

  const std::int64_t started = now() - 1'000'000'000;  // this process began a second ago
  trace::writeFileAtomically(path, "a sibling's trace");
  EXPECT_EQ(unclaimedTracePath(path, 3, 4242, started), mine);

  // The same file dated before this process started: an earlier run's, replaced.
  const timespec old[2] = {{1'600'000'000, 0}, {1'600'000'000, 0}};
  ASSERT_EQ(utimensat(AT_FDCWD, path.c_str(), old, 0), 0);
  EXPECT_EQ(unclaimedTracePath(path, 3, 4242, started), path);

  // Through the writer: the hook picks the name just before the rename.
  trace::writeFileAtomically(path, "the sibling again");
  const auto written = trace::writeFileAtomically(
      path, "this process's trace",
      [&](const std::string& p) { return unclaimedTracePath(p, 3, 4242, started); });
  EXPECT_EQ(written, mine);
  EXPECT_EQ(trace::readTraceBytes(path).view(), "the sibling again");
  EXPECT_EQ(trace::readTraceBytes(mine).view(), "this process's trace");
  fs::remove_all(dir);
}
