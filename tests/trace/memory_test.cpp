// FreshBuffers: neighbouring buffers advised for huge pages as one range, contents never changed.
// PopulatedBehind: pages mapped beside a writer, every byte written kept.
#include "tracer/format/memory.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tracer/format/file_io.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ddpscope::trace {
namespace {

#if defined(__linux__)
// The VmFlags of the mapping that holds p, from /proc/self/smaps; "" when not found.
std::string vmFlagsAt(const void* p) {
  std::ifstream smaps("/proc/self/smaps");
  const auto at = reinterpret_cast<std::uintptr_t>(p);
  bool inside = false;
  for (std::string line; std::getline(smaps, line);) {
    std::uintptr_t lo = 0;
    std::uintptr_t hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= at && at < hi;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) return line;
  }
  return {};
}

bool hugePagesOnAdvice() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string modes;
  std::getline(f, modes);
  return modes.find("[madvise]") != std::string::npos;
}

struct Mapping {
  explicit Mapping(std::size_t n) : bytes(n) {
    void* m = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    p = m == MAP_FAILED ? nullptr : static_cast<char*>(m);
  }
  ~Mapping() {
    if (p != nullptr) ::munmap(p, bytes);
  }
  Mapping(const Mapping&) = delete;
  Mapping& operator=(const Mapping&) = delete;
  char* p = nullptr;
  std::size_t bytes;
};

TEST(FreshBuffers, NeighboursTooSmallAloneAreAdvisedTogether) {
  if (!hugePagesOnAdvice()) GTEST_SKIP() << "transparent huge pages are not in madvise mode here";
  constexpr std::size_t kMiB = std::size_t{1} << 20;
  // Four columns of 1.9 MiB side by side, a few bytes apart as the heap places them: each is
  // under the 4 MiB a buffer needs for advice of its own, together they hold whole 2 MiB blocks.
  Mapping whole(16 * kMiB);
  ASSERT_NE(whole.p, nullptr);
  Mapping alone(16 * kMiB);
  ASSERT_NE(alone.p, nullptr);
  constexpr std::size_t kColumn = 1900 * 1024;
  FreshBuffers together;
  for (int i = 0; i < 4; ++i)
    together.add(whole.p + 4096 + i * (kColumn + 48), kColumn);
  together.prepare();
  FreshBuffers single;
  single.add(alone.p + 4096, kColumn);
  single.prepare();
  // The advice splits the mapping: the part inside the columns' range carries "hg".
  EXPECT_NE(vmFlagsAt(whole.p + 4 * kMiB).find(" hg"), std::string::npos)
      << vmFlagsAt(whole.p + 4 * kMiB);
  EXPECT_EQ(vmFlagsAt(alone.p + kMiB).find(" hg"), std::string::npos) << vmFlagsAt(alone.p + kMiB);
}

bool resident(const char* p) {
  unsigned char in = 0;
  return ::mincore(const_cast<char*>(p), 4096, &in) == 0 && (in & 1) != 0;
}

// Whether this kernel maps pages on request (MADV_POPULATE_WRITE, Linux 5.14).
bool populatesOnRequest() {
  Mapping probe(std::size_t{64} << 10);
  if (probe.p == nullptr) return false;
  populateForWrite(probe.p, probe.bytes);
  return resident(probe.p);
}

TEST(PopulatedBehind, MapsTheBufferFromItsEndWithoutAWriter) {
  if (!populatesOnRequest()) GTEST_SKIP() << "this kernel does not map pages on request";
  constexpr std::size_t kBytes = std::size_t{32} << 20;
  Mapping m(kBytes);
  ASSERT_NE(m.p, nullptr);
  ASSERT_FALSE(resident(m.p));
  ASSERT_FALSE(resident(m.p + kBytes - 4096));
  {
    const PopulatedBehind populated(m.p, kBytes, true);
    // The helper works from the end back to the start; wait (bounded) until it got there.
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (!resident(m.p) && std::chrono::steady_clock::now() < give_up)
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  EXPECT_TRUE(resident(m.p + kBytes - 4096));
  EXPECT_TRUE(resident(m.p + kBytes / 2));
  EXPECT_TRUE(resident(m.p));
  for (std::size_t i = 0; i < kBytes; i += 4096)
    ASSERT_EQ(m.p[i], 0) << i;  // fresh pages stay zero
}

TEST(PopulatedBehind, DisabledOrSmallDoesNothing) {
  constexpr std::size_t kBytes = std::size_t{32} << 20;
  Mapping m(kBytes);
  ASSERT_NE(m.p, nullptr);
  { const PopulatedBehind off(m.p, kBytes, false); }
  { const PopulatedBehind small(m.p, std::size_t{8} << 20, true); }
  EXPECT_FALSE(resident(m.p));
  EXPECT_FALSE(resident(m.p + kBytes - 4096));
}
#endif

TEST(PopulatedBehind, AWriterRacingItKeepsEveryByte) {
  // The writer fills the buffer from the start while the helper maps it from the end; they
  // cross somewhere in the middle. Every byte must be the writer's.
  constexpr std::size_t kWords = std::size_t{48} << 17;  // 48 MiB of 8-byte words
  std::unique_ptr<std::uint64_t[]> buffer(new std::uint64_t[kWords]);
  {
    const PopulatedBehind populated(reinterpret_cast<char*>(buffer.get()),
                                    kWords * sizeof(std::uint64_t), true);
    for (std::size_t i = 0; i < kWords; ++i)
      buffer[i] = i * 0x9E3779B97F4A7C15ull;
  }
  for (std::size_t i = 0; i < kWords; ++i)
    ASSERT_EQ(buffer[i], i * 0x9E3779B97F4A7C15ull) << i;
}

TEST(PopulatedBehind, InflatingOnTwoThreadsGivesTheSameBytes) {
  // 24 MiB of trace-like text (over the 16 MiB where the helper starts), gzipped.
  std::string text = "{\"traceEvents\": [\n";
  for (int i = 0; text.size() < (std::size_t{24} << 20); ++i)
    text += "  {\"ph\": \"X\", \"name\": \"gemm_" + std::to_string(i % 97) +
            "\", \"ts\": " + std::to_string(i * 7) + ", \"dur\": 5},\n";
  text += "  {}\n]}\n";
  const std::string gz = gzipBytes(text, 1);
  const PaddedBuffer one = inflateBytes(gz, "t.json.gz", defaultReadLimits(), 1);
  const PaddedBuffer two = inflateBytes(gz, "t.json.gz", defaultReadLimits(), 2);
  ASSERT_EQ(one.size(), text.size());
  ASSERT_EQ(two.size(), text.size());
  EXPECT_TRUE(one.view() == text);
  EXPECT_TRUE(two.view() == text);
}

TEST(FreshBuffers, PreparingChangesNoContents) {
  std::vector<std::uint64_t> a(1 << 20);
  std::vector<std::uint64_t> b(1 << 19);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = i * 2654435761u;
  for (std::size_t i = 0; i < b.size(); ++i)
    b[i] = ~i;
  FreshBuffers fresh;
  fresh.add(a.data(), a.size() * sizeof(a[0]));
  fresh.add(nullptr, 64);  // ignored
  fresh.add(b.data(), b.size() * sizeof(b[0]));
  fresh.prepare();
  fresh.prepare();  // forgotten after the first: nothing to do
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(a[i], i * 2654435761u) << i;
  for (std::size_t i = 0; i < b.size(); ++i)
    ASSERT_EQ(b[i], ~i) << i;
}

}  // namespace
}  // namespace ddpscope::trace
