#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tracer/cupti/run_identity.h"

using namespace ddpscope::cupti;

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
  EXPECT_EQ(id.world_size, 2);  // at least rank + 1
  EXPECT_EQ(id.buffer_cap_bytes, kDefaultBufferCapMb << 20);
  EXPECT_EQ(id.warnings.size(), 3u);
}

TEST(RunIdentity, BufferCap) {
  EXPECT_EQ(identity({{"DDPSCOPE_CUPTI_BUFFER_MB", "64"}}).buffer_cap_bytes, 64u << 20);
  EXPECT_EQ(identity({{"DDPSCOPE_CUPTI_BUFFER_MB", "0"}}).buffer_cap_bytes, 1u << 20);
}
