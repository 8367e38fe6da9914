#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "agent/bootstrap/bootstrap.h"

using ddpscope::agent::bootstrap::BootstrapKind;
using ddpscope::agent::bootstrap::chooseBootstrap;
using ddpscope::agent::bootstrap::launchedWithMpiWorld;
using ddpscope::agent::bootstrap::makeMpiBootstrap;
using ddpscope::agent::bootstrap::mpiBootstrapBuilt;

namespace {
class ScopedPmiEnv {
 public:
  explicit ScopedPmiEnv(const char* name = nullptr) {
    for (const char* n : {"PMIX_RANK", "PMI_RANK", "PMI_FD"})
      unsetenv(n);
    if (name) setenv(name, "0", 1);
  }
  ~ScopedPmiEnv() {
    for (const char* n : {"PMIX_RANK", "PMI_RANK", "PMI_FD"})
      unsetenv(n);
  }
};
}  // namespace

TEST(BootstrapChoice, AutoIsMpiOnlyWhenBuiltAndLaunchedWithAnMpiWorld) {
  for (const std::string forced : {"", "auto"}) {
    EXPECT_EQ(chooseBootstrap(forced, "mpirun", true, true), BootstrapKind::kMpi);
    EXPECT_EQ(chooseBootstrap(forced, "srun", true, true), BootstrapKind::kMpi);
    EXPECT_EQ(chooseBootstrap(forced, "srun", false, true), BootstrapKind::kFile);
    EXPECT_EQ(chooseBootstrap(forced, "mpirun", true, false), BootstrapKind::kFile);
    for (const std::string other : {"ddpscope", "torchrun", ""}) {
      EXPECT_EQ(chooseBootstrap(forced, other, true, true), BootstrapKind::kFile) << other;
    }
  }
}

TEST(BootstrapChoice, ForcedFileWinsAlways) {
  EXPECT_EQ(chooseBootstrap("file", "mpirun", true, true), BootstrapKind::kFile);
  EXPECT_EQ(chooseBootstrap("file", "srun", true, false), BootstrapKind::kFile);
}

TEST(BootstrapChoice, ForcedMpiNeedsAnMpiBuild) {
  EXPECT_EQ(chooseBootstrap("mpi", "torchrun", false, true), BootstrapKind::kMpi);
  try {
    chooseBootstrap("mpi", "mpirun", true, false);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("built without MPI"), std::string::npos) << e.what();
  }
}

TEST(BootstrapChoice, UnknownValueIsAnError) {
  try {
    chooseBootstrap("nccl", "mpirun", true, true);
    FAIL() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "DDPSCOPE_BOOTSTRAP=nccl is not one of auto, file, mpi");
  }
}

TEST(BootstrapChoice, MpiWorldFromTheLaunchersVariables) {
  {
    ScopedPmiEnv env;
    EXPECT_TRUE(launchedWithMpiWorld("mpirun"));
    EXPECT_FALSE(launchedWithMpiWorld("srun"));  // srun --mpi=none: no PMI, no MPI world
    EXPECT_FALSE(launchedWithMpiWorld("torchrun"));
    EXPECT_FALSE(launchedWithMpiWorld(""));
  }
  for (const char* pmi : {"PMIX_RANK", "PMI_RANK", "PMI_FD"}) {
    ScopedPmiEnv env(pmi);
    EXPECT_TRUE(launchedWithMpiWorld("srun")) << pmi;
    EXPECT_FALSE(launchedWithMpiWorld("torchrun")) << pmi;
  }
}

TEST(BootstrapChoice, BuiltWithMpiExactlyWhenCMakeFoundIt) {
#ifdef DDPSCOPE_TEST_HAVE_MPI
  EXPECT_TRUE(mpiBootstrapBuilt());
#else
  EXPECT_FALSE(mpiBootstrapBuilt());
  try {
    makeMpiBootstrap({});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("DDPSCOPE_BOOTSTRAP=file"), std::string::npos) << e.what();
  }
#endif
}
