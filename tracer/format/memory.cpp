#include "memory.h"

#include <algorithm>
#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#endif
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace ddpscope::trace {

void adviseHugePages(const void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = kHugePageBytes;
  if (p == nullptr || bytes < kHugePagesAdvisedFrom) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kHuge - 1) & ~(kHuge - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kHuge - 1);
  if (end > begin) {
    // Fails harmlessly (EINVAL) where THP is compiled out; nothing to report.
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
#else
  (void)p;
  (void)bytes;
#endif
}

void populateForWrite(void* p, std::size_t bytes) noexcept {
#if defined(__linux__)
#ifndef MADV_POPULATE_WRITE
  constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels answer EINVAL
#endif
  constexpr std::uintptr_t kPage = 4096;
  if (p == nullptr || bytes < (std::size_t{64} << 10)) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (end > begin)
    (void)::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

PopulatedBehind::PopulatedBehind(char* p, std::size_t bytes, bool enabled) noexcept {
  if (!enabled || p == nullptr || bytes < (std::size_t{16} << 20)) return;
  try {
    thread_ = std::thread([this, p, bytes] {
      // 4 MiB at a time (two huge pages): a stop is seen soon, and the calls stay few.
      constexpr std::size_t kChunk = std::size_t{4} << 20;
      for (std::size_t end = bytes; end > 0 && !stop_.load(std::memory_order_relaxed);) {
        const std::size_t begin = end > kChunk ? end - kChunk : 0;
        populateForWrite(p + begin, end - begin);
        end = begin;
      }
    });
  } catch (...) {  // no thread to be had: the writer faults its pages in itself, as before
  }
}

PopulatedBehind::~PopulatedBehind() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

void FreshBuffers::prepare() noexcept {
  std::sort(buffers_.begin(), buffers_.end(), [](const Buffer& a, const Buffer& b) {
    return reinterpret_cast<std::uintptr_t>(a.p) < reinterpret_cast<std::uintptr_t>(b.p);
  });
  // Neighbours: the allocator's chunk headers and alignment leave a few bytes between them.
  constexpr std::size_t kGap = std::size_t{64} << 10;
  for (std::size_t i = 0; i < buffers_.size();) {
    const auto at = [](const char* p) { return reinterpret_cast<std::uintptr_t>(p); };
    const std::uintptr_t begin = at(buffers_[i].p);
    std::uintptr_t end = begin + buffers_[i].bytes;
    std::size_t j = i + 1;
    for (; j < buffers_.size() && at(buffers_[j].p) <= end + kGap; ++j)
      end = std::max(end, at(buffers_[j].p) + buffers_[j].bytes);
    adviseHugePages(buffers_[i].p, end - begin);
    i = j;
  }
  for (const auto& b : buffers_)
    populateForWrite(b.p, b.bytes);
  buffers_.clear();
}

void tuneAllocatorForTraces() noexcept {
#if defined(__GLIBC__)
  (void)::mallopt(M_MMAP_THRESHOLD, 32 << 20);
  (void)::mallopt(M_TRIM_THRESHOLD, 256 << 20);
#endif
}

}  // namespace ddpscope::trace
