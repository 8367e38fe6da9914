#pragma once
// The one object a process-wide callback works on (CUPTI's buffer and NVTX callbacks carry no
// user data), and a safe way to take it away: after close() returns true no callback is using
// the object or can reach it, so its owner may destroy it. Callbacks run on CUPTI's and the
// program's threads at any time, including while the owner is being destroyed.

#include <atomic>
#include <chrono>
#include <thread>

namespace ddpscope::cupti {

template <class T>
class ActiveSlot {
 public:
  // A callback's use of the slot: get() is the active object or nullptr; while a Use lives,
  // close() waits.
  class Use {
   public:
    explicit Use(ActiveSlot& slot) : slot_(slot) {
      // Entering is announced before the object is read (both sequentially consistent), so
      // close() either sees this callback inside or this callback sees nullptr.
      slot_.inside_.fetch_add(1);
      object_ = slot_.active_.load();
      // Found nothing: out at once, so that close() never waits on callbacks that hold nothing.
      if (object_ == nullptr) slot_.inside_.fetch_sub(1);
    }
    ~Use() {
      if (object_ != nullptr) slot_.inside_.fetch_sub(1);
    }
    Use(const Use&) = delete;
    Use& operator=(const Use&) = delete;
    T* get() const { return object_; }

   private:
    ActiveSlot& slot_;
    T* object_ = nullptr;
  };

  // Makes p the active object; false when another one is.
  bool claim(T* p) {
    T* expected = nullptr;
    return active_.compare_exchange_strong(expected, p) || expected == p;
  }
  T* peek() const { return active_.load(); }

  // Takes p away from callbacks and waits until none is using it. False when one was still
  // inside after `timeout` (a callback stuck in CUPTI): the caller must then not destroy p.
  bool close(T* p, std::chrono::milliseconds timeout = std::chrono::milliseconds(2000)) {
    T* expected = p;
    active_.compare_exchange_strong(expected, nullptr);
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    // Callbacks still inside may hold p, or another object's pointer read before it changed;
    // either way the object they read stays alive until they leave.
    while (inside_.load() != 0) {
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return true;
  }

 private:
  std::atomic<T*> active_{nullptr};
  std::atomic<int> inside_{0};
};

}  // namespace ddpscope::cupti
