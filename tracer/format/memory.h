#pragma once
// Big buffers filled right after they are allocated (file bytes, event columns, staging rows).
//
// A fresh page costs a page fault on first touch; in virtual machines each fault is an exit to
// the hypervisor (measured 33 us per 4 KiB page on the project's build VM: 1.3 s to touch 200 MB).
// Asking for transparent huge pages on such a buffer makes the same 200 MB cost about 60 ms.
// The advice is only a hint: it changes no contents, and does nothing where unsupported.

#include <atomic>
#include <cstddef>
#include <thread>
#include <vector>

namespace ddpscope::trace {

// The size of a transparent huge page on x86-64 and most arm64 kernels.
inline constexpr std::size_t kHugePageBytes = std::size_t{2} << 20;
// Buffers of at least this many bytes are advised for huge pages (adviseHugePages).
inline constexpr std::size_t kHugePagesAdvisedFrom = std::size_t{4} << 20;

// Advises the kernel to back [p, p + bytes) with huge pages where the range covers whole
// 2 MiB-aligned blocks. Call it before the first write. No-op below kHugePagesAdvisedFrom.
// Giving back part of such a block later (madvise) splits it into 4 KiB pages, and on the build
// VM reading the rest of a split block was then several times slower (the TLB or the
// hypervisor's page tables: not known): give back whole blocks only.
void adviseHugePages(const void* p, std::size_t bytes) noexcept;

// Maps the whole pages of [p, p + bytes) in one call, for a buffer about to be written from end
// to end: one system call instead of a fault per page (on the build VM, 200 MB cost 60 ms this
// way against 1.3 s faulted page by page). No-op below 64 KiB or where unsupported; never
// changes contents.
void populateForWrite(void* p, std::size_t bytes) noexcept;

// A buffer about to be written from its start by one long call (inflating a gzip file), its
// pages mapped meanwhile on a thread of their own, from the end backwards, until the writer is
// done (the destructor; pages the writer reached first cost the helper a quick no-op) or the
// start is reached: the kernel's zeroing of fresh pages, the bigger part of
// writing fresh memory on the build VM, runs beside the writer on a second core instead of
// inside its faults. Populating changes no contents, so a page the writer reached first is left
// as it is. Does nothing below 16 MiB, where no thread can be started, or with `enabled` false
// (no core to spare).
class PopulatedBehind {
 public:
  PopulatedBehind(char* p, std::size_t bytes, bool enabled) noexcept;
  ~PopulatedBehind();
  PopulatedBehind(const PopulatedBehind&) = delete;
  PopulatedBehind& operator=(const PopulatedBehind&) = delete;

 private:
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Buffers just allocated and about to be written from end to end, prepared together: the huge-page
// advice is given over runs of neighbouring buffers (consecutive allocations from the heap lie
// side by side, so a track's columns of 1-4 MB each, too small one by one, make a range of several
// 2 MiB blocks), then each buffer is populated. The advice changes no contents; it stays on that
// part of the heap after the buffers are freed, where blocks not yet touched fault in as huge
// pages and the kernel may later merge touched ones into huge pages. A buffer must stay allocated
// from add() until prepare() (which writes to it).
class FreshBuffers {
 public:
  void add(void* p, std::size_t bytes) {
    if (p != nullptr && bytes > 0) buffers_.push_back({static_cast<char*>(p), bytes});
  }
  // Advises, then populates, every buffer added; forgets them.
  void prepare() noexcept;

 private:
  struct Buffer {
    char* p;
    std::size_t bytes;
  };
  std::vector<Buffer> buffers_;
};

// Reserves room for `n` elements in a vector with no storage yet and advises huge pages for it,
// for a big result built by push_back: no regrowth (each doubling faults fresh pages and copies),
// and a fault per 2 MiB instead of per 4 KiB. Room never written stays virtual. A vector that
// already has storage is only reserved.
template <typename T>
void reserveAdvised(std::vector<T>& v, std::size_t n) {
  if (v.capacity() >= n) return;
  const bool fresh = v.capacity() == 0;
  v.reserve(n);
  if (fresh) adviseHugePages(v.data(), n * sizeof(T));
}

// Sets up glibc's allocator for a process that loads and analyses traces (the app, the CLI, the
// benchmarks that stand for them): memory freed by one load or analysis is kept for the next
// (blocks under 32 MiB come from the heap, which is trimmed only past 256 MiB free) instead of
// being handed back to the kernel and faulted in again. Measured on the build VM: the whole-run
// analysis of 1 M events 124 ms -> 33 ms. Call once, first thing in main(); no-op elsewhere.
void tuneAllocatorForTraces() noexcept;

}  // namespace ddpscope::trace
