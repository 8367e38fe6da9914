// The slot CUPTI's callbacks find the tracer in: closing it waits for callbacks inside, and
// no callback reaches the object afterwards (under ASan a use after free would fail here).
#include "tracer/cupti/active_slot.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>
#include <vector>

using ddpscope::cupti::ActiveSlot;

namespace {
struct Counter {
  std::atomic<long> uses{0};
  std::atomic<bool> destroyed{false};
};
}  // namespace

TEST(ActiveSlot, ClaimIsExclusive) {
  ActiveSlot<int> slot;
  int a = 0, b = 0;
  EXPECT_TRUE(slot.claim(&a));
  EXPECT_TRUE(slot.claim(&a));  // again: the same object
  EXPECT_FALSE(slot.claim(&b));
  EXPECT_TRUE(slot.close(&a));
  EXPECT_EQ(slot.peek(), nullptr);
  EXPECT_TRUE(slot.claim(&b));
}

TEST(ActiveSlot, CloseWaitsForTheCallbackInside) {
  ActiveSlot<Counter> slot;
  Counter c;
  slot.claim(&c);
  std::atomic<bool> entered{false}, leave{false};
  std::thread callback([&] {
    ActiveSlot<Counter>::Use use(slot);
    entered = true;
    while (!leave)
      std::this_thread::yield();
    use.get()->uses++;
  });
  while (!entered)
    std::this_thread::yield();
  // Inside: close gives up after its timeout and says so.
  EXPECT_FALSE(slot.close(&c, std::chrono::milliseconds(20)));
  EXPECT_EQ(slot.peek(), nullptr);  // but new callbacks no longer find it
  {
    ActiveSlot<Counter>::Use late(slot);
    EXPECT_EQ(late.get(), nullptr);
    // ... and one that found nothing does not hold close() up.
  }
  leave = true;
  callback.join();
  EXPECT_TRUE(slot.close(&c, std::chrono::milliseconds(20)));
  EXPECT_EQ(c.uses, 1);
}

TEST(ActiveSlot, NoCallbackUsesTheObjectAfterClose) {
  // Threads call in as CUPTI's would while the owner closes and destroys the object, many times.
  for (int round = 0; round < 100; ++round) {
    ActiveSlot<Counter> slot;
    auto object = std::make_unique<Counter>();
    slot.claim(object.get());
    std::atomic<bool> stop{false};
    std::atomic<long> used_after_destroy{0};
    std::vector<std::thread> callbacks;
    for (int t = 0; t < 3; ++t) {
      callbacks.emplace_back([&] {
        while (!stop) {
          ActiveSlot<Counter>::Use use(slot);
          if (Counter* c = use.get()) {
            if (c->destroyed) used_after_destroy++;
            c->uses++;
          }
        }
      });
    }
    while (object->uses < 10)
      std::this_thread::yield();
    const bool closed = slot.close(object.get());
    if (closed) {
      object->destroyed = true;
      object.reset();  // a callback touching it now is a use after free
    }
    stop = true;
    for (auto& t : callbacks)
      t.join();
    EXPECT_TRUE(closed);
    EXPECT_EQ(used_after_destroy, 0);
  }
}
