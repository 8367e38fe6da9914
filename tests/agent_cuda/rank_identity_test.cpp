#include "agent/cuda/rank_identity.h"

#include <gtest/gtest.h>

#include <cstdlib>

using ddpscope::agent::cuda::rankIdentityFromEnvironment;

namespace {
class ScopedEnv {
 public:
  ScopedEnv(std::initializer_list<std::pair<const char*, const char*>> vars) {
    for (const char* n :
         {"DDPSCOPE_RANK", "DDPSCOPE_WORLD_SIZE", "DDPSCOPE_LOCAL_RANK", "OMPI_COMM_WORLD_RANK",
          "OMPI_COMM_WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_STEP_ID",
          "RANK", "WORLD_SIZE", "LOCAL_RANK", "PMI_RANK", "PMI_SIZE"}) {
      unsetenv(n);
    }
    for (const auto& [k, v] : vars)
      setenv(k, v, 1);
  }
};
}  // namespace

TEST(RankIdentity, NoneWithoutALauncher) {
  ScopedEnv env({});
  EXPECT_FALSE(rankIdentityFromEnvironment().has_value());
}

TEST(RankIdentity, FromEachLauncher) {
  {
    ScopedEnv env({{"OMPI_COMM_WORLD_RANK", "3"},
                   {"OMPI_COMM_WORLD_SIZE", "8"},
                   {"OMPI_COMM_WORLD_LOCAL_RANK", "1"}});
    const auto id = rankIdentityFromEnvironment();
    ASSERT_TRUE(id);
    EXPECT_EQ(id->rank, 3);
    EXPECT_EQ(id->world_size, 8);
    EXPECT_EQ(id->local_rank, 1);
    EXPECT_EQ(id->launcher, "mpirun");
  }
  {
    ScopedEnv env({{"SLURM_PROCID", "5"},
                   {"SLURM_NTASKS", "16"},
                   {"SLURM_LOCALID", "5"},
                   {"SLURM_JOB_ID", "777"}});
    const auto id = rankIdentityFromEnvironment();
    ASSERT_TRUE(id);
    EXPECT_EQ(id->launcher, "srun");
    EXPECT_EQ(id->job_key, "777");
  }
  {
    // Steps of one allocation share SLURM_JOB_ID; their NCCL ids must not meet in one file.
    ScopedEnv env({{"SLURM_PROCID", "0"},
                   {"SLURM_NTASKS", "2"},
                   {"SLURM_JOB_ID", "777"},
                   {"SLURM_STEP_ID", "3"}});
    const auto id = rankIdentityFromEnvironment();
    ASSERT_TRUE(id);
    EXPECT_EQ(id->job_key, "777.3");
  }
  {
    ScopedEnv env({{"RANK", "1"}, {"WORLD_SIZE", "2"}});
    const auto id = rankIdentityFromEnvironment();
    ASSERT_TRUE(id);
    EXPECT_EQ(id->launcher, "torchrun");
    EXPECT_EQ(id->local_rank, 1);
  }
}

TEST(RankIdentity, BadValuesAreClearErrors) {
  {
    ScopedEnv env({{"RANK", "two"}, {"WORLD_SIZE", "2"}});
    EXPECT_THROW(rankIdentityFromEnvironment(), std::invalid_argument);
  }
  {
    ScopedEnv env({{"RANK", "4"}, {"WORLD_SIZE", "2"}});
    EXPECT_THROW(rankIdentityFromEnvironment(), std::invalid_argument);
  }
}
