// Any bytes as a buffer of CUPTI activity records, walked by CUPTI and converted: whatever the
// kinds, ids, flags and timestamps (zero, huge, end before start), the converter never crashes,
// and the trace it makes is one our writer writes and our reader reads back, unchanged by a
// second round trip, and that the analysis digests.
//
// Names are never fuzzed as raw pointers (CUPTI hands the converter pointers it owns): a name
// field points at a string of a fixed table, at a string cut from the input, or is null. Records
// are laid out as CUPTI lays them out (the structs of tests/cupti/record_buffer.h); a record of
// a kind the converter does not know can only come last, since CUPTI sizes records by kind.
#include <cupti_activity.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "tests/cupti/record_buffer.h"
#include "tracer/cupti/activity_converter.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;

namespace {

// Reads the fuzz input front to back; past its end everything reads as zero.
class Input {
 public:
  Input(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  std::uint8_t u8() { return p_ < end_ ? *p_++ : 0; }
  std::uint16_t u16() { return static_cast<std::uint16_t>(u8() | (u8() << 8)); }
  std::uint32_t u32() { return static_cast<std::uint32_t>(u16()) | (std::uint32_t{u16()} << 16); }
  std::uint64_t u64() { return static_cast<std::uint64_t>(u32()) | (std::uint64_t{u32()} << 32); }
  // Any value a CUPTI enum can hold: they all end in *_FORCE_INT = 0x7fffffff.
  std::uint32_t enumValue() { return u32() & 0x7fffffffu; }
  std::string bytes(std::size_t n) {
    n = std::min<std::size_t>(n, static_cast<std::size_t>(end_ - p_));
    std::string s(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return s;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

constexpr std::uint64_t kBase = 1'700'000'000'000'000'000ull;  // a CUPTI-like ns timestamp

const char* const kNames[] = {
    "_Z10gemmKernelPfPKfS1_i",
    "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
    "ncclKernel_AllReduce_RING_LL_Sum_float",
    "triton_poi_fused_add_0",
    "_ZN5torch8autograd",  // cut short: not demangleable
    "_ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ",
    "",
    "ProfilerStep#3",
    "ProfilerStep#2147483647",
    "ncclAllReduce",
    "ncclSend",
    "NCCL",
    "backward",
    "bucket 0 ready",
    "NVIDIA H200",
    "\xff\xfe not UTF-8",
};
constexpr std::size_t kNameCount = sizeof kNames / sizeof kNames[0];

class RecordMaker {
 public:
  explicit RecordMaker(Input& in) : in_(in) {
    // Strings cut from the input, NUL-terminated by std::string.
    const std::size_t n = in_.u8() % 4;
    for (std::size_t i = 0; i < n; ++i)
      pool_.push_back(in_.bytes(in_.u8() % 64));
  }

  const char* name() {
    const std::size_t pick = in_.u8() % (kNameCount + pool_.size() + 1);
    if (pick < kNameCount) return kNames[pick];
    if (pick < kNameCount + pool_.size()) return pool_[pick - kNameCount].c_str();
    return nullptr;
  }

  std::uint64_t time() {
    switch (in_.u8() % 6) {
      case 0:
        return 0;
      case 1:
        return kBase + in_.u16();
      case 2:
        return kBase + in_.u32();
      case 3:
        return ~std::uint64_t{0} - in_.u16();  // near the top: overflows when added to
      case 4:
        return std::uint64_t{1} << 63 | in_.u32();
      default:
        return in_.u64();
    }
  }

  // Sets r.start and r.end: usually ordered and close, sometimes reversed, zero or far apart.
  // (Record structs are packed: fields are assigned, never bound to references.)
  template <typename Record>
  void interval(Record& r) {
    const std::uint64_t start = time();
    std::uint64_t end = 0;
    switch (in_.u8() % 4) {
      case 0:
        end = start + in_.u16();
        break;
      case 1:
        end = start - in_.u16();  // end before start
        break;
      case 2:
        end = time();
        break;
      default:
        break;
    }
    r.start = start;
    r.end = end;
  }

  std::uint32_t smallId() { return in_.u8() % 4 == 0 ? in_.u32() : in_.u8() % 8; }
  // Device, context, stream, correlation and the interval of a record of GPU work, in this order.
  template <typename Record>
  void onStream(Record& r) {
    r.deviceId = smallId();
    r.contextId = smallId();
    r.streamId = smallId();
    r.correlationId = smallId();
    interval(r);
  }

  // Appends one record; false when the input is used up.
  bool add(testing::RecordBuffer& b, bool last) {
    if (in_.empty()) return false;
    const std::uint8_t selector = in_.u8();
    switch (selector % 15) {
      case 0:
      case 1: {
        auto& k =
            b.add<CUpti_ActivityKernel10>(selector % 15 == 0 ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                                             : CUPTI_ACTIVITY_KIND_KERNEL);
        k.name = name();
        onStream(k);
        break;
      }
      case 2: {
        auto& m = b.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
        m.copyKind = in_.u8();
        m.srcKind = in_.u8();
        m.dstKind = in_.u8();
        m.bytes = in_.u64();
        onStream(m);
        break;
      }
      case 3: {
        auto& m = b.add<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
        m.copyKind = in_.u8();
        m.srcKind = in_.u8();
        m.dstKind = in_.u8();
        m.bytes = in_.u64();
        m.deviceId = smallId();
        m.srcDeviceId = smallId();
        m.dstDeviceId = smallId();
        m.contextId = smallId();
        m.streamId = smallId();
        m.correlationId = smallId();
        interval(m);
        break;
      }
      case 4: {
        auto& m = b.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
        m.memoryKind = in_.u16();
        m.bytes = in_.u64();
        onStream(m);
        break;
      }
      case 5: {
        auto& s = b.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
        s.type = static_cast<CUpti_ActivitySynchronizationType>(in_.u8() % 6);
        s.contextId = smallId();
        s.streamId = in_.u8() % 2 ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : smallId();
        s.cudaEventId = in_.u8() % 2 ? CUPTI_SYNCHRONIZATION_INVALID_VALUE : smallId();
        s.cudaEventSyncId = smallId();
        s.correlationId = smallId();
        interval(s);
        break;
      }
      case 6: {
        auto& e = b.add<CUpti_ActivityCudaEvent2>(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
        e.eventId = smallId();
        e.cudaEventSyncId = smallId();
        e.contextId = smallId();
        e.deviceId = smallId();
        e.streamId = smallId();
        e.correlationId = smallId();
        break;
      }
      case 7:
      case 8: {
        auto& a = b.add<CUpti_ActivityAPI>(selector % 15 == 7 ? CUPTI_ACTIVITY_KIND_RUNTIME
                                                              : CUPTI_ACTIVITY_KIND_DRIVER);
        a.cbid = in_.u8() % 2 ? in_.u32() : in_.u16() % 512;
        a.processId = smallId();
        a.threadId = smallId();
        a.correlationId = smallId();
        interval(a);
        break;
      }
      case 9: {
        auto& m = b.add<CUpti_ActivityMarker2>(CUPTI_ACTIVITY_KIND_MARKER);
        static constexpr CUpti_ActivityFlag kFlags[] = {
            CUPTI_ACTIVITY_FLAG_MARKER_START, CUPTI_ACTIVITY_FLAG_MARKER_END,
            CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, CUPTI_ACTIVITY_FLAG_NONE};
        m.flags = in_.u8() % 5 == 4 ? static_cast<CUpti_ActivityFlag>(in_.enumValue())
                                    : kFlags[in_.u8() % 4];
        m.timestamp = time();
        m.id = smallId();
        m.objectKind = static_cast<CUpti_ActivityObjectKind>(in_.u8() % 8);
        m.objectId.pt.processId = smallId();
        m.objectId.pt.threadId = smallId();
        m.name = name();
        m.domain = name();
        break;
      }
      case 10: {
        auto& d = b.add<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
        d.id = smallId();
        d.payloadKind = static_cast<CUpti_MetricValueKind>(in_.u8() % 8);
        d.payload.metricValueUint64 = in_.u64();
        break;
      }
      case 11: {
        auto& o = b.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
        o.overheadKind = static_cast<CUpti_ActivityOverheadKind>(in_.enumValue());
        o.objectKind = static_cast<CUpti_ActivityObjectKind>(in_.u8() % 8);
        o.objectId.pt.processId = smallId();
        o.objectId.pt.threadId = smallId();
        o.correlationId = smallId();
        interval(o);
        break;
      }
      case 12: {
        auto& d = b.add<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
        d.id = smallId();
        d.name = name();
        d.globalMemorySize = in_.u64();
        d.computeCapabilityMajor = in_.u32();
        d.computeCapabilityMinor = in_.u32();
        d.numMultiprocessors = in_.u32();
        break;
      }
      case 13: {
        auto& c = b.add<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
        c.contextId = smallId();
        c.deviceId = smallId();
        break;
      }
      default: {
        // A kind the converter ignores (or no kind at all): only as the last record.
        if (!last) return add(b, true);
        auto& r = b.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_KERNEL);
        r.kind = static_cast<CUpti_ActivityKind>(in_.enumValue());
        r.name = name();
        return false;
      }
    }
    return true;
  }

 private:
  Input& in_;
  std::vector<std::string> pool_;
};

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "cupti_converter fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Input in(data, size);
  cupti::ConverterOptions options;
  const std::uint8_t mode = in.u8();
  options.base_ns =
      mode & 1 ? static_cast<std::int64_t>(kBase) : static_cast<std::int64_t>(in.u64());
  options.epoch_offset_ns = mode & 2 ? 0 : static_cast<std::int64_t>(in.u64());
  options.process_id = in.u8();
  options.process_name = mode & 4 ? "train.py" : "";
  options.project_annotations = (mode & 8) == 0;
  options.keep_nested_driver_calls = (mode & 16) != 0;

  RecordMaker maker(in);
  testing::RecordBuffer buffer;
  for (int i = 0; i < 256 && maker.add(buffer, i == 255); ++i) {
  }
  cupti::ActivityConverter converter(options);
  if (buffer.size() > 0) converter.addBuffer(buffer.data(), buffer.size());
  // NVTX extended payloads as the tracer's callback copies them, paired with the NCCL ranges.
  for (int n = in.u8() % 8; n > 0; --n) {
    cupti::NvtxPayloadCapture p;
    p.tid = maker.smallId();
    p.timestamp = maker.time();
    p.schema_id = in.u8() % 2 ? (std::uint64_t{1} << 24) + 5 : in.u64();
    static constexpr std::uint64_t kSizes[] = {8, 16, 24};
    p.size = in.u8() % 4 == 3 ? in.u64() : kSizes[in.u8() % 3];
    p.head_bytes = static_cast<std::uint8_t>(in.u8() % (p.head.size() + 1));
    for (auto& byte : p.head)
      byte = in.u8();
    converter.addNvtxPayload(p);
  }
  converter.addDroppedByCupti(in.u8());
  cupti::FinishOptions finish;
  finish.rank = in.u8() % 4;
  finish.world_size = 4;
  finish.incomplete = (in.u8() & 1) != 0;
  trace::RankTrace t = converter.finish(finish);

  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.dur[i] < 0) fail("negative duration", std::to_string(track.dur[i]));
    }
  }
  // What the tracer writes must open in ddpscope.
  trace::RankTrace back;
  try {
    back = trace::parseTraceText(trace::serializeTrace(t), "cupti-fuzz.json");
  } catch (const trace::TraceError& e) {
    fail("the converted trace does not read back", e.what());
  }
  const auto again = trace::parseTraceText(trace::serializeTrace(back), "cupti-fuzz-2.json");
  if (const auto d = trace::describeDifference(back, again); !d.empty()) {
    fail("a second round trip changed the trace", d);
  }
  const auto report = analysis::analyzeRank(back);
  if (report.whole.overlap_ns > report.whole.comm_ns) fail("overlap exceeds communication", "");
  // The converter is reusable after finish().
  converter.addBuffer(buffer.data(), buffer.size());
  (void)converter.finish(finish);
  return 0;
}
