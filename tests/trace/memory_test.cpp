// FreshBuffers: neighbouring buffers advised for huge pages as one range, contents never changed.
#include "tracer/format/memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

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
#endif

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
