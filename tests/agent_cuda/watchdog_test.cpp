// The CUDA rank's watchdog without a GPU: NCCL's calls are replaced by counters, so each way a
// rank gives up (timeout, NCCL's asynchronous error, the launcher's stop, a main thread stuck in
// an NCCL call) and the one-abort rule are checked.

#include "agent/cuda/watchdog.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

using namespace ddpscope::agent::cuda;
using namespace std::chrono_literals;

namespace {

struct FakeNccl {
  std::atomic<int> aborts{0}, destroys{0};
  std::string async;  // set before the watchdog starts, or from the test thread only
  CommunicatorOps ops() {
    return {[this] { return async; }, [this] { ++aborts; }, [this] { ++destroys; }};
  }
};

// A communicator whose NCCL calls are the fake's.
struct Rig {
  FakeNccl nccl;
  Communicator c;
  explicit Rig(std::string async = "") {
    nccl.async = std::move(async);
    c.attach(nccl.ops());
  }
};

WatchdogOptions fast(double timeout_s, std::function<bool()> stop = {}) {
  WatchdogOptions o;
  o.timeout_s = timeout_s;
  o.rank = 3;
  o.stop_requested = std::move(stop);
  o.grace_ns = 200'000'000;
  o.poll_ns = 5'000'000;
  return o;
}

// Waits (up to 10 s, for a loaded machine) until n reaches want.
void waitFor(const std::atomic<int>& n, int want) {
  for (int i = 0; i < 1000 && n.load() < want; ++i)
    std::this_thread::sleep_for(10ms);
}

std::string firedReason(Watchdog& w) {
  try {
    w.check();
  } catch (const WatchdogFired& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Communicator, AbortsOnceAndDestroysOnlyAHealthyOne) {
  FakeNccl nccl;
  {
    Communicator c;
    c.abort();  // nothing attached yet (init did not return): nothing to do
    c.attach(nccl.ops());
    c.abort();
    c.abort();
    c.close(false);
    EXPECT_EQ(nccl.aborts, 1);
    EXPECT_EQ(nccl.destroys, 0);
  }
  {
    Communicator c;
    c.attach(nccl.ops());
    c.abort();
    c.close(true);  // aborted by the watchdog, then the run "succeeded": no destroy after abort
    EXPECT_EQ(nccl.aborts, 2);
    EXPECT_EQ(nccl.destroys, 0);
  }
  {
    Communicator c;
    c.attach(nccl.ops());
    c.close(true);
    c.close(true);
    EXPECT_EQ(nccl.destroys, 1);
    EXPECT_EQ(nccl.aborts, 2);
  }
}

TEST(Watchdog, HealthyRanksAreLeftAlone) {
  Rig rig;
  auto& [nccl, c] = rig;
  {
    Watchdog w(c, fast(2));
    for (int i = 0; i < 10; ++i) {
      std::this_thread::sleep_for(50ms);
      w.heartbeat();
      EXPECT_NO_THROW(w.check());
    }
    EXPECT_FALSE(w.fired());
  }
  EXPECT_EQ(nccl.aborts, 0);
}

TEST(Watchdog, NoProgressForTheTimeoutGivesUp) {
  Rig rig;
  auto& [nccl, c] = rig;
  Watchdog w(c, fast(0.05));
  std::this_thread::sleep_for(100ms);
  const std::string why = firedReason(w);
  EXPECT_NE(why.find("rank 3: no progress for 0.05 s (--timeout-s)"), std::string::npos) << why;
  EXPECT_TRUE(w.fired());
  EXPECT_EQ(firedReason(w), why);  // stays fired
}

TEST(Watchdog, NcclsAsynchronousErrorAndTheLaunchersStopGiveUp) {
  {
    Rig rig("remote process exited or there was a network error");
    auto& c = rig.c;
    Watchdog w(c, fast(60));
    EXPECT_NE(firedReason(w).find("NCCL reported an asynchronous error: remote process exited"),
              std::string::npos);
  }
  {
    Rig rig;
    auto& [nccl, c] = rig;
    std::atomic<bool> stop{false};
    Watchdog w(c, fast(60, [&] { return stop.load(); }));
    EXPECT_NO_THROW(w.check());
    stop = true;
    EXPECT_NE(firedReason(w).find("stopped by the launcher"), std::string::npos);
  }
}

TEST(Watchdog, ItsThreadAbortsWhenTheMainThreadIsStuck) {
  // The main thread never calls check() (it is inside an NCCL call): after the timeout and the
  // grace the watchdog's thread aborts, once.
  Rig rig;
  auto& [nccl, c] = rig;
  Watchdog w(c, fast(0.05));
  for (int i = 0; i < 1000 && nccl.aborts == 0; ++i)
    std::this_thread::sleep_for(10ms);
  EXPECT_EQ(nccl.aborts, 1);
  EXPECT_TRUE(w.fired());
  EXPECT_TRUE(c.aborted());
  c.close(false);
  EXPECT_EQ(nccl.aborts, 1);
}

TEST(Watchdog, TheMainThreadActsFirstWhenItPolls) {
  // The launcher's stop: the main thread sees it at its next check and aborts itself; the
  // thread, given its grace, has not aborted by then.
  Rig rig;
  auto& [nccl, c] = rig;
  std::atomic<bool> stop{false};
  {
    auto options = fast(60, [&] { return stop.load(); });
    options.grace_ns = 5'000'000'000;
    Watchdog w(c, std::move(options));
    stop = true;
    std::this_thread::sleep_for(20ms);
    EXPECT_THROW(w.check(), WatchdogFired);
    EXPECT_EQ(nccl.aborts, 0);
  }  // the watchdog's thread is joined before the main thread aborts
  c.abort();
  EXPECT_EQ(nccl.aborts, 1);
}

TEST(InitGuard, GivesUpOnlyWhenInitDoesNotReturn) {
  std::atomic<int> gave_up{0};
  std::string why;
  {
    const InitGuard g(0.05, {}, [&](const std::string& w) {
      why = w;
      ++gave_up;
    });
    waitFor(gave_up, 1);
  }
  EXPECT_EQ(gave_up, 1);
  EXPECT_NE(why.find("did not complete within --timeout-s 0.05 s"), std::string::npos) << why;
  {
    const InitGuard g(60, {}, [&](const std::string&) { ++gave_up; });
    std::this_thread::sleep_for(20ms);
  }  // init returned in time
  EXPECT_EQ(gave_up, 1);
  std::atomic<bool> stop{true};
  {
    const InitGuard g(
        60, [&] { return stop.load(); },
        [&](const std::string& w) {
          why = w;
          ++gave_up;
        });
    waitFor(gave_up, 2);
  }
  EXPECT_EQ(gave_up, 2);
  EXPECT_NE(why.find("stopped by the launcher"), std::string::npos) << why;
}
