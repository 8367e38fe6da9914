#pragma once
// Activity buffers for CUPTI under a cap on the memory held at once: completed buffers are
// reused; when the cap is reached a request is declined (CUPTI then drops records and counts
// them) instead of growing without bound. Thread-safe.

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace ddpscope::cupti {

class BufferPool {
 public:
  // buffer_bytes is rounded up to `alignment`; cap_bytes limits the sum of all buffers.
  BufferPool(std::size_t buffer_bytes, std::size_t cap_bytes, std::size_t alignment = 8);
  ~BufferPool();
  BufferPool(const BufferPool&) = delete;
  BufferPool& operator=(const BufferPool&) = delete;

  // A free buffer of bufferBytes(), or nullptr when the cap is reached (counted as refused).
  std::uint8_t* acquire();
  // Gives a buffer from acquire() back for reuse.
  void release(std::uint8_t* buffer);

  std::size_t bufferBytes() const { return buffer_bytes_; }
  std::size_t allocatedBytes() const;
  // Buffers acquired and not yet released (held by CUPTI).
  std::size_t outstanding() const;
  std::uint64_t refused() const;

 private:
  const std::size_t alignment_;
  const std::size_t buffer_bytes_;
  const std::size_t cap_bytes_;
  mutable std::mutex mutex_;
  std::vector<std::uint8_t*> free_;
  std::vector<std::uint8_t*> all_;
  std::uint64_t refused_ = 0;
};

}  // namespace ddpscope::cupti
