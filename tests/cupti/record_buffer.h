#pragma once
// Hand-built CUPTI activity buffers: records laid out back to back as CUPTI lays them out
// (each record struct is 8-byte aligned and padded, so the next starts at sizeof(record)).

#include <cupti_activity.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace ddpscope::testing {

class RecordBuffer {
 public:
  // Appends a zeroed record of type T with its kind set; returns it for filling in. The
  // reference stays valid until the next add().
  template <typename T>
  T& add(CUpti_ActivityKind kind) {
    static_assert(sizeof(T) % ACTIVITY_RECORD_ALIGNMENT == 0);
    const std::size_t offset = used_;
    used_ += sizeof(T);
    if (used_ > capacity_) grow(used_ * 2);
    T* r = new (data() + offset) T{};  // value-initialised: all zero, like CUPTI's padding
    r->kind = kind;
    return *r;
  }
  std::uint8_t* data() { return reinterpret_cast<std::uint8_t*>(storage_.data()); }
  std::size_t size() const { return used_; }

 private:
  void grow(std::size_t bytes) {
    storage_.resize((bytes + sizeof(std::uint64_t) - 1) / sizeof(std::uint64_t));
    capacity_ = storage_.size() * sizeof(std::uint64_t);
  }
  std::vector<std::uint64_t> storage_;  // uint64_t storage: 8-byte aligned like CUPTI's
  std::size_t used_ = 0;
  std::size_t capacity_ = 0;
};

// An NVTX marker record (a range start or end, or an instantaneous mark) of a thread.
inline CUpti_ActivityMarker2& addMarker(RecordBuffer& b, std::uint32_t id, CUpti_ActivityFlag flag,
                                        std::uint64_t timestamp, const char* name,
                                        const char* domain, std::uint32_t pid, std::uint32_t tid) {
  auto& m = b.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
  m.flags = flag;
  m.timestamp = timestamp;
  m.id = id;
  m.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  m.objectId.pt.processId = pid;
  m.objectId.pt.threadId = tid;
  m.name = name;
  m.domain = domain;
  return m;
}

}  // namespace ddpscope::testing
