#pragma once
// Independent pieces of work spread over the machine's cores.

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#ifdef __linux__
#include <sched.h>
#endif

namespace ddpscope::trace {

// The threads to use when a caller asks for `threads` (0: one per core), never more than `work`
// items and never fewer than one.
inline unsigned threadsFor(unsigned threads, std::size_t work) {
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<unsigned>(std::clamp<std::size_t>(threads, 1, std::max<std::size_t>(work, 1)));
}

// The cores this process may run on (its CPU affinity: a scheduler's binding, a cpuset), or
// every online core when that cannot be told.
inline unsigned allowedCores() {
#ifdef __linux__
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    if (const int n = CPU_COUNT(&set); n > 0) return static_cast<unsigned>(n);
  }
#endif
  return std::max(1u, std::thread::hardware_concurrency());
}

// The threads for one of `processes` processes of a job on one machine of `online` cores,
// allowed `allowed` of them: a process bound to its own cores takes them (the binding already
// shared the machine), and processes free to run anywhere share the cores evenly; at least one.
inline unsigned shareOfMachine(unsigned online, unsigned allowed, unsigned processes) {
  const unsigned even = std::max(1u, online / std::max(1u, processes));
  return std::max(1u, std::min(std::max(1u, allowed), even));
}

// Rethrows the first of `errors` that is a Preferred (the one error that must not be mistaken
// for another), else the first of them; returns when there is none.
template <typename Preferred>
void rethrowPreferring(const std::vector<std::exception_ptr>& errors) {
  for (const auto& e : errors) {
    if (!e) continue;
    try {
      std::rethrow_exception(e);
    } catch (const Preferred&) {
      throw;
    } catch (...) {
    }
  }
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

// Calls f(i) for every i in [0, n) on up to `threads` threads (0: one per core), this one among
// them; each thread takes the next index when it is done with one. f must not touch what another
// index's call writes. Once a call throws, indices not yet begun are skipped; after every thread
// has stopped, the failure of the lowest index is rethrown. Without a thread to be had (the
// system refuses one) the work runs on the threads already going, this one at least.
template <typename F>
void forEachIndex(std::size_t n, unsigned threads, F&& f) {
  threads = threadsFor(threads, n);
  std::atomic<std::size_t> next{0};
  std::vector<std::exception_ptr> errors(n);
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      try {
        f(i);
      } catch (...) {
        errors[i] = std::current_exception();
        next = n;
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(threads - 1);
  for (unsigned t = 1; t < threads; ++t) {
    try {
      pool.emplace_back(work);
    } catch (const std::system_error&) {
      break;
    }
  }
  work();
  for (auto& t : pool)
    t.join();
  for (const auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace ddpscope::trace
