// forEachIndex: every index once, each failure kept, the lowest one's rethrown.
#include "tracer/format/parallel.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace ddpscope::trace {
namespace {

TEST(ForEachIndex, CallsEveryIndexOnceOnSeveralThreads) {
  constexpr std::size_t n = 1000;
  std::vector<std::atomic<int>> calls(n);
  std::vector<std::thread::id> by(n);
  // The thread that takes index 0 (the first taken) holds it until some other index has run:
  // that one ran on another thread, whatever the machine's scheduling (the wait is bounded).
  std::atomic<bool> other_ran{false};
  forEachIndex(n, 4, [&](std::size_t i) {
    calls[i]++;
    by[i] = std::this_thread::get_id();
    if (i == 0) {
      const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
      while (!other_ran && std::chrono::steady_clock::now() < give_up)
        std::this_thread::yield();
    } else {
      other_ran = true;
    }
  });
  for (std::size_t i = 0; i < n; ++i)
    ASSERT_EQ(calls[i].load(), 1) << "index " << i;
  const std::set<std::thread::id> threads(by.begin(), by.end());
  EXPECT_GE(threads.size(), 2u) << "the work should be spread over the threads asked for";
  EXPECT_LE(threads.size(), 4u);
}

TEST(ForEachIndex, NoWorkAndOneThreadRunHere) {
  int called = 0;
  forEachIndex(0, 4, [&](std::size_t) { ++called; });
  EXPECT_EQ(called, 0);
  const auto here = std::this_thread::get_id();
  forEachIndex(5, 1, [&](std::size_t) {
    ++called;
    EXPECT_EQ(std::this_thread::get_id(), here);
  });
  EXPECT_EQ(called, 5);
}

TEST(ForEachIndex, TheLowestFailingIndexIsRethrownAfterAllStopped) {
  std::atomic<int> running{0};
  try {
    forEachIndex(64, 4, [&](std::size_t i) {
      running++;
      if (i == 3 || i == 7) throw std::runtime_error("index " + std::to_string(i));
      running--;
    });
    FAIL() << "expected the failure";
  } catch (const std::runtime_error& e) {
    // Indices are taken in order, so 3 is taken before 7: whichever of them failed first, the
    // failure of 3 is the one rethrown (7 may not have run at all).
    EXPECT_STREQ(e.what(), "index 3");
  }
  // Only the failing calls are still counted as running: every thread has returned.
  EXPECT_GE(running.load(), 1);
  EXPECT_LE(running.load(), 2);
}

TEST(ForEachIndex, ThreadsAskedForAreBoundedByTheWork) {
  EXPECT_EQ(threadsFor(8, 3), 3u);
  EXPECT_EQ(threadsFor(1, 100), 1u);
  EXPECT_EQ(threadsFor(5, 0), 1u);
  EXPECT_GE(threadsFor(0, 100), 1u);
}

// An MPI job's processes on one machine: free to run anywhere, they share its cores evenly;
// bound to cores of their own (srun --cpus-per-task), each takes its own; never none.
TEST(ForEachIndex, ShareOfMachine) {
  EXPECT_EQ(shareOfMachine(32, 32, 8), 4u);   // mpirun -n 8, unbound
  EXPECT_EQ(shareOfMachine(128, 4, 8), 4u);   // 8 tasks of 4 CPUs on a 128-core node
  EXPECT_EQ(shareOfMachine(32, 16, 8), 4u);   // bound to a socket of 16, shared by 8
  EXPECT_EQ(shareOfMachine(2, 2, 3), 1u);     // more processes than cores
  EXPECT_EQ(shareOfMachine(16, 16, 1), 16u);  // one process: the whole machine
  EXPECT_EQ(shareOfMachine(0, 0, 0), 1u);     // nothing known
  EXPECT_GE(allowedCores(), 1u);
}

}  // namespace
}  // namespace ddpscope::trace
