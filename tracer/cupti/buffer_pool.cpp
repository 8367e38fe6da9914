#include "buffer_pool.h"

#include <algorithm>
#include <cstdlib>

namespace ddpscope::cupti {

namespace {
std::size_t roundUp(std::size_t n, std::size_t alignment) {
  return (std::max<std::size_t>(n, 1) + alignment - 1) / alignment * alignment;
}
}  // namespace

BufferPool::BufferPool(std::size_t buffer_bytes, std::size_t cap_bytes, std::size_t alignment)
    : alignment_(alignment),
      buffer_bytes_(roundUp(buffer_bytes, alignment)),
      cap_bytes_(cap_bytes) {}

BufferPool::~BufferPool() {
  for (auto* b : all_)
    std::free(b);
}

std::uint8_t* BufferPool::acquire() {
  std::lock_guard lock(mutex_);
  if (!free_.empty()) {
    auto* b = free_.back();
    free_.pop_back();
    return b;
  }
  if ((all_.size() + 1) * buffer_bytes_ <= cap_bytes_) {
    if (auto* b = static_cast<std::uint8_t*>(std::aligned_alloc(alignment_, buffer_bytes_))) {
      all_.push_back(b);
      return b;
    }
  }
  ++refused_;
  return nullptr;
}

void BufferPool::release(std::uint8_t* buffer) {
  if (buffer == nullptr) return;
  std::lock_guard lock(mutex_);
  free_.push_back(buffer);
}

std::size_t BufferPool::allocatedBytes() const {
  std::lock_guard lock(mutex_);
  return all_.size() * buffer_bytes_;
}

std::size_t BufferPool::outstanding() const {
  std::lock_guard lock(mutex_);
  return all_.size() - free_.size();
}

std::uint64_t BufferPool::refused() const {
  std::lock_guard lock(mutex_);
  return refused_;
}

}  // namespace ddpscope::cupti
