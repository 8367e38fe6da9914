#pragma once
// How a CUDA rank gives up instead of hanging when a peer is gone (docs/agent.md "When a rank
// fails on CUDA"). Plain C++: the backend binds NCCL's calls into CommunicatorOps, tests bind
// their own, so the decisions are tested without a GPU.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace ddpscope::agent::cuda {

// What the watchdog needs of an NCCL communicator.
struct CommunicatorOps {
  std::function<std::string()> async_error;  // "" while healthy, else NCCL's description
  std::function<void()> abort;               // ncclCommAbort
  std::function<void()> destroy;             // ncclCommDestroy
};

// The communicator, aborted at most once, by whichever thread gets there first.
class Communicator {
 public:
  void attach(CommunicatorOps ops) { ops_ = std::move(ops); }
  bool attached() const { return static_cast<bool>(ops_.abort); }
  bool aborted() const { return aborted_.load(); }
  std::string asyncError() const {
    return attached() && !aborted() && ops_.async_error ? ops_.async_error() : std::string();
  }
  // Ends NCCL's kernels of a collective whose peer is gone. Only the first call aborts.
  void abort() {
    bool expected = false;
    if (attached() && aborted_.compare_exchange_strong(expected, true)) ops_.abort();
  }
  // At the end of a run: destroy (success) or abort (failure), unless already aborted.
  void close(bool ok) {
    if (!attached()) return;
    if (!ok) {
      abort();
    } else if (!aborted_.load() && ops_.destroy) {
      ops_.destroy();
    }
    ops_ = {};
  }

 private:
  CommunicatorOps ops_;
  std::atomic<bool> aborted_{false};
};

class WatchdogFired : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct WatchdogOptions {
  double timeout_s = 300;  // --timeout-s: no step completing this long means a peer is gone
  std::int32_t rank = 0;
  std::function<bool()> stop_requested;   // the launcher asked this rank to stop (SIGTERM)
  std::int64_t grace_ns = 5'000'000'000;  // for the main thread to act before the thread
  std::int64_t poll_ns = 50'000'000;      // how often the thread looks
};

// Gives up on a rank whose peers are gone: NCCL reports an asynchronous error, no step completes
// for timeout_s, or the launcher asks this rank to stop. The main thread polls check() while it
// waits for the GPU and, when it throws, aborts the communicator itself. When the main thread
// cannot poll (it is stuck inside an NCCL call), the watchdog's thread aborts the communicator
// grace_ns later, which makes that call return. Destroy the watchdog (its thread is joined)
// before the main thread touches the communicator again.
class Watchdog {
 public:
  Watchdog(Communicator& comm, WatchdogOptions options);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void heartbeat();  // a step completed
  bool fired() const { return fired_.load(); }
  std::string reason() const;
  // On the main thread: throws WatchdogFired when this rank should give up.
  void check();

 private:
  std::string problem(std::int64_t extra_ns) const;  // "" when nothing is wrong
  void fire(const std::string& why);
  void watch();

  Communicator& comm_;
  WatchdogOptions options_;
  std::int64_t timeout_ns_;
  std::atomic<std::int64_t> last_progress_ns_{0};
  std::atomic<bool> stop_{false}, fired_{false};
  mutable std::mutex mutex_;
  std::string reason_;
  std::thread thread_;
};

// NCCL's initialisation blocks until every rank has joined, and there is no communicator to
// abort until it returns: when a peer never joins (timeout_s) or the launcher stops this rank,
// the guard calls give_up (the backend prints the reason and ends the process: the only way out
// of that call). Destroying the guard (init returned) disarms it.
class InitGuard {
 public:
  InitGuard(double timeout_s, std::function<bool()> stop_requested,
            std::function<void(const std::string& why)> give_up);
  ~InitGuard();
  InitGuard(const InitGuard&) = delete;
  InitGuard& operator=(const InitGuard&) = delete;

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace ddpscope::agent::cuda
