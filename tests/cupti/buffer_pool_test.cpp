#include <gtest/gtest.h>

#include <cstdint>
#include <set>

#include "tracer/cupti/buffer_pool.h"

using ddpscope::cupti::BufferPool;

TEST(BufferPool, HoldsAtMostTheCapAndReusesReleasedBuffers) {
  BufferPool pool(1000, 3000, 8);  // 1000 rounds up to 1000 (a multiple of 8)
  EXPECT_EQ(pool.bufferBytes(), 1000u);
  std::set<std::uint8_t*> got;
  for (int i = 0; i < 3; ++i) {
    auto* b = pool.acquire();
    ASSERT_NE(b, nullptr);
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b) % 8, 0u);
    got.insert(b);
  }
  EXPECT_EQ(got.size(), 3u);
  EXPECT_EQ(pool.allocatedBytes(), 3000u);
  EXPECT_EQ(pool.outstanding(), 3u);
  // The cap is reached: declined and counted.
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.acquire(), nullptr);
  EXPECT_EQ(pool.refused(), 2u);
  // A released buffer is handed out again; no new memory.
  auto* back = *got.begin();
  pool.release(back);
  EXPECT_EQ(pool.outstanding(), 2u);
  EXPECT_EQ(pool.acquire(), back);
  EXPECT_EQ(pool.allocatedBytes(), 3000u);
  for (auto* b : got)
    pool.release(b);
  EXPECT_EQ(pool.outstanding(), 0u);
}

TEST(BufferPool, SizesAreRoundedToTheAlignment) {
  BufferPool pool(1001, 1 << 20, 8);
  EXPECT_EQ(pool.bufferBytes(), 1008u);
  BufferPool tiny(100, 50, 8);  // the cap is below one buffer: everything is declined
  EXPECT_EQ(tiny.acquire(), nullptr);
  EXPECT_EQ(tiny.refused(), 1u);
}
