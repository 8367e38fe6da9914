#include "agent/cuda/watchdog.h"

#include <chrono>

#include "agent/short_number.h"

namespace ddpscope::agent::cuda {

namespace {

std::int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

Watchdog::Watchdog(Communicator& comm, WatchdogOptions options)
    : comm_(comm),
      options_(std::move(options)),
      timeout_ns_(static_cast<std::int64_t>(options_.timeout_s * 1e9)) {
  heartbeat();
  thread_ = std::thread([this] { watch(); });
}

Watchdog::~Watchdog() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

void Watchdog::heartbeat() {
  last_progress_ns_.store(steadyNs());
}

std::string Watchdog::reason() const {
  std::lock_guard lock(mutex_);
  return reason_;
}

void Watchdog::check() {
  if (!fired_.load()) {
    const std::string why = problem(0);
    if (why.empty()) return;
    fire(why);
  }
  throw WatchdogFired(reason());
}

std::string Watchdog::problem(std::int64_t extra_ns) const {
  if (std::string async = comm_.asyncError(); !async.empty()) {
    return "NCCL reported an asynchronous error: " + async;
  }
  if (options_.stop_requested && options_.stop_requested()) {
    return "stopped by the launcher (another rank failed, or the run was cancelled)";
  }
  if (steadyNs() - last_progress_ns_.load() > timeout_ns_ + extra_ns) {
    return "no progress for " + shortNumber(options_.timeout_s) +
           " s (--timeout-s): a peer rank died or hangs";
  }
  return "";
}

void Watchdog::fire(const std::string& why) {
  std::lock_guard lock(mutex_);
  if (fired_.load()) return;
  reason_ =
      "rank " + std::to_string(options_.rank) + ": " + why + "; the NCCL communicator was aborted";
  fired_.store(true);
}

void Watchdog::watch() {
  std::int64_t noticed_ns = 0;
  while (!stop_.load()) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(options_.poll_ns));
    if (stop_.load()) return;
    // The timeout is given the grace here; the other causes get it below.
    const std::string why = problem(options_.grace_ns);
    if (why.empty() && !fired_.load()) {
      noticed_ns = 0;
      continue;
    }
    if (noticed_ns == 0) noticed_ns = steadyNs();
    const bool timed_out = why.find("--timeout-s") != std::string::npos;
    if (!timed_out && steadyNs() - noticed_ns < options_.grace_ns) continue;
    fire(why.empty() ? "gave up" : why);
    comm_.abort();  // the main thread is stuck in an NCCL call: this makes it return
    return;
  }
}

InitGuard::InitGuard(double timeout_s, std::function<bool()> stop_requested,
                     std::function<void(const std::string& why)> give_up) {
  thread_ = std::thread(
      [this, timeout_s, stop = std::move(stop_requested), give_up = std::move(give_up)] {
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
        std::unique_lock lock(mutex_);
        while (!done_) {
          std::string why;
          if (stop && stop()) {
            why = "stopped by the launcher while NCCL was initialising";
          } else if (std::chrono::steady_clock::now() >= deadline) {
            why = "NCCL's initialisation did not complete within --timeout-s " +
                  shortNumber(timeout_s) + " s: a peer rank never joined";
          }
          if (!why.empty()) {
            give_up(why);
            return;
          }
          cv_.wait_for(lock, std::chrono::milliseconds(100));
        }
      });
}

InitGuard::~InitGuard() {
  {
    std::lock_guard lock(mutex_);
    done_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

}  // namespace ddpscope::agent::cuda
