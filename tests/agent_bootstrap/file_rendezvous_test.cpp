#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "agent/bootstrap/bootstrap.h"

namespace fs = std::filesystem;
using ddpscope::agent::bootstrap::FileRendezvousOptions;
using ddpscope::agent::bootstrap::makeFileRendezvous;

namespace {

using Blob = std::array<char, 128>;  // the size of an ncclUniqueId

Blob randomBlob() {
  std::random_device rd;
  std::mt19937 gen(rd());
  std::uniform_int_distribution<int> byte(0, 255);
  Blob b{};
  for (char& c : b)
    c = static_cast<char>(byte(gen));
  return b;
}

class FileRendezvousTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ddpscope-rendezvous-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path() const { return (dir_ / ".ddpscope-nccl-id-test").string(); }

  FileRendezvousOptions options(std::int32_t rank, double timeout_s = 30) const {
    FileRendezvousOptions o;
    o.path = path();
    o.rank = rank;
    o.timeout_s = timeout_s;
    o.what = "the NCCL id";
    return o;
  }

  fs::path dir_;
};

double secondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

// Four threads as ranks: the others start waiting before rank 0 publishes.
TEST_F(FileRendezvousTest, ThreadsAsRanksAllGetRankZerosBlob) {
  const Blob sent = randomBlob();
  constexpr int kRanks = 4;
  std::vector<Blob> got(kRanks);
  std::vector<std::string> errors(kRanks);
  std::vector<std::thread> ranks;
  for (int r = kRanks - 1; r >= 0; --r) {
    ranks.emplace_back([&, r] {
      try {
        auto b = makeFileRendezvous(options(r));
        if (r == 0) {
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          got[0] = sent;
        }
        b->broadcast(got[static_cast<std::size_t>(r)]);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks)
    t.join();
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(errors[static_cast<std::size_t>(r)], "") << "rank " << r;
    EXPECT_EQ(got[static_cast<std::size_t>(r)], sent) << "rank " << r;
  }
}

// Processes as ranks, as the agent's ranks are: two forked children read what this process
// (rank 0) publishes later.
TEST_F(FileRendezvousTest, ProcessesAsRanksAllGetRankZerosBlob) {
  const Blob sent = randomBlob();
  std::vector<pid_t> children;
  for (std::int32_t r = 1; r <= 2; ++r) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int code = 3;
      try {
        Blob got{};
        makeFileRendezvous(options(r))->broadcast(got);
        code = got == sent ? 0 : 1;
      } catch (...) {
        code = 2;
      }
      _exit(code);
    }
    children.push_back(pid);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Blob mine = sent;
  makeFileRendezvous(options(0))->broadcast(mine);
  EXPECT_EQ(mine, sent);
  for (pid_t c : children) {
    int status = 0;
    ASSERT_EQ(waitpid(c, &status, 0), c);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0) << "1: wrong bytes, 2: an exception";
  }
}

TEST_F(FileRendezvousTest, RankZeroWritesTheFileAtomicallyAndReturnsAtOnce) {
  Blob sent = randomBlob();
  const auto t0 = std::chrono::steady_clock::now();
  makeFileRendezvous(options(0, 0.01))->broadcast(sent);
  EXPECT_LT(secondsSince(t0), 5.0);
  std::ifstream in(path(), std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(bytes, std::string(sent.data(), sent.size()));
  // No temporary file is left next to it.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 1);
}

TEST_F(FileRendezvousTest, TimeoutNamesTheRankThePathAndTheSharedFolder) {
  Blob got{};
  const auto t0 = std::chrono::steady_clock::now();
  try {
    makeFileRendezvous(options(2, 0.3))->broadcast(got);
    FAIL() << "expected a timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()),
              "rank 2: rank 0 did not publish the NCCL id in " + path() +
                  " within 0.3 s; is the folder shared between the ranks' machines?");
  }
  const double waited = secondsSince(t0);
  EXPECT_GE(waited, 0.3);
  EXPECT_LT(waited, 10.0);
}

// A file of another size (a stale id of another length, or another job's data) is not taken.
TEST_F(FileRendezvousTest, AFileOfTheWrongSizeIsNotTaken) {
  { std::ofstream(path(), std::ios::binary) << std::string(64, 'x'); }
  Blob got{};
  EXPECT_THROW(makeFileRendezvous(options(1, 0.1))->broadcast(got), std::runtime_error);
  const Blob sent = randomBlob();
  std::thread rank0([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    Blob b = sent;
    makeFileRendezvous(options(0))->broadcast(b);
  });
  makeFileRendezvous(options(1))->broadcast(got);
  rank0.join();
  EXPECT_EQ(got, sent);
}

TEST_F(FileRendezvousTest, CancelledStopsTheWaitEarly) {
  std::atomic<bool> stop{false};
  auto o = options(1, 600);
  o.cancelled = [&] { return stop.load(); };
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    stop.store(true);
  });
  Blob got{};
  const auto t0 = std::chrono::steady_clock::now();
  EXPECT_THROW(makeFileRendezvous(o)->broadcast(got), std::runtime_error);
  stopper.join();
  EXPECT_LT(secondsSince(t0), 10.0);
}

TEST_F(FileRendezvousTest, RankZeroThatCannotWriteSaysSo) {
  auto o = options(0);
  o.path = (dir_ / "no-such-folder" / "id").string();
  Blob b = randomBlob();
  try {
    makeFileRendezvous(o)->broadcast(b);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot write " + o.path), std::string::npos) << e.what();
  }
}

TEST_F(FileRendezvousTest, DescribesItselfWithThePath) {
  EXPECT_EQ(makeFileRendezvous(options(0))->describe(), "file " + path());
}
