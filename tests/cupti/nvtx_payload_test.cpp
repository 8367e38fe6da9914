// NCCL's NVTX extended payloads: attributes built the way NCCL builds them (a static-schema
// struct behind an nvtxPayloadData_t, attached with the NVTX payload header's macro), what the
// tracer copies of them, the message size read back for both of NCCL's layouts, and how the
// converter pairs each copy with its NCCL range by thread and time.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <cupti.h>
#include <generated_nvtx_meta.h>
#include <nvtx3/nvToolsExtPayload.h>

#include "record_buffer.h"
#include "tracer/cupti/activity_converter.h"
#include "tracer/cupti/nvtx_payload.h"

using namespace ddpscope;
using cupti::captureExtendedPayload;
using cupti::ncclMessageBytes;
using cupti::NvtxPayloadCapture;
using ddpscope::testing::RecordBuffer;
using trace::EventKind;

namespace {

constexpr std::uint64_t kStaticSchema = NVTX_PAYLOAD_SCHEMA_ID_STATIC_START;
constexpr std::uint64_t kAllReduceSchema = kStaticSchema + 5;

// NCCL 2.23 and later: the communicator's id, then the message size.
struct CommFirstAllReduce {
  std::uint64_t comm;
  std::size_t bytes;
  int op;
};
// NCCL 2.19 to 2.22: the message size first.
struct SizeFirstAllReduce {
  std::size_t bytes;
  int op;
};
struct CommInitRank {
  std::uint64_t comm;
  int nranks, rank, device;
};

nvtxEventAttributes_t attributes() {
  nvtxEventAttributes_t a{};
  a.version = NVTX_VERSION;
  a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  a.messageType = NVTX_MESSAGE_TYPE_ASCII;
  a.message.ascii = "ncclAllReduce";
  return a;
}

// The range start of an NCCL call, captured as the tracer's callback does.
template <typename Payload>
std::optional<NvtxPayloadCapture> ncclCall(std::uint64_t schema, const Payload& payload) {
  nvtxPayloadData_t data[] = {{schema, sizeof(payload), &payload}};
  auto a = attributes();
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(a, data)
  return captureExtendedPayload(&a);
}

}  // namespace

TEST(NvtxPayload, CopiesTheExtendedPayloadOfAnNcclRange) {
  const CommFirstAllReduce p{0x1234'5678'9abc'def0, 25 << 20, 0};
  const auto c = ncclCall(kAllReduceSchema, p);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->schema_id, kAllReduceSchema);
  EXPECT_EQ(c->size, sizeof(p));
  EXPECT_EQ(c->head_bytes, sizeof(p));
  EXPECT_EQ(std::memcmp(c->head.data(), &p, sizeof(p)), 0);
}

TEST(NvtxPayload, ReadsTheMessageSizeInBothOfNcclsLayouts) {
  const CommFirstAllReduce newer{0xfeed'beef, 6'637'568 * 4, 0};
  EXPECT_EQ(ncclMessageBytes("ncclAllReduce", *ncclCall(kAllReduceSchema, newer)), 26'550'272);
  const SizeFirstAllReduce older{1 << 20, 0};
  EXPECT_EQ(ncclMessageBytes("ncclAllReduce", *ncclCall(kAllReduceSchema, older)), 1 << 20);
  // ncclAllGather: the size alone (older), or after the communicator (newer).
  const std::size_t gather_older = 4096;
  EXPECT_EQ(ncclMessageBytes("ncclAllGather", *ncclCall(kStaticSchema + 4, gather_older)), 4096);
  const struct {
    std::uint64_t comm;
    std::size_t bytes;
  } gather_newer{7, 8192};
  EXPECT_EQ(ncclMessageBytes("ncclAllGather", *ncclCall(kStaticSchema + 4, gather_newer)), 8192);
  for (const char* name :
       {"ncclBroadcast", "ncclReduce", "ncclReduceScatter", "ncclSend", "ncclRecv"}) {
    EXPECT_EQ(ncclMessageBytes(name, *ncclCall(kStaticSchema + 9, newer)), 26'550'272) << name;
    EXPECT_TRUE(cupti::isNcclSizedRange(name));
  }
}

TEST(NvtxPayload, GivesNoSizeForOtherRangesLayoutsAndSchemas) {
  // A communicator range has a 24-byte payload too, but no message size.
  const CommInitRank init{42, 8, 3, 3};
  const auto c = ncclCall(kStaticSchema, init);
  ASSERT_TRUE(c);
  EXPECT_FALSE(ncclMessageBytes("ncclCommInitRank", *c));
  EXPECT_FALSE(cupti::isNcclSizedRange("ncclCommInitRank"));
  EXPECT_FALSE(cupti::isNcclSizedRange("ncclGroupEnd"));
  // A layout of unknown size, a dynamic (tool-given) schema, a non-NCCL range.
  const struct { std::uint64_t a, b, c, d; } unknown{1, 2, 3, 4};
  EXPECT_FALSE(ncclMessageBytes("ncclAllReduce", *ncclCall(kAllReduceSchema, unknown)));
  const CommFirstAllReduce p{1, 1024, 0};
  EXPECT_FALSE(
      ncclMessageBytes("ncclAllReduce", *ncclCall(NVTX_PAYLOAD_SCHEMA_ID_DYNAMIC_START + 5, p)));
  EXPECT_FALSE(ncclMessageBytes("allreduce", *ncclCall(kAllReduceSchema, p)));
  // A size past what a trace can hold.
  const CommFirstAllReduce huge{1, ~std::size_t{0}, 0};
  EXPECT_FALSE(ncclMessageBytes("ncclAllReduce", *ncclCall(kAllReduceSchema, huge)));
}

TEST(NvtxPayload, CopiesNothingWithoutAnExtendedPayload) {
  EXPECT_FALSE(captureExtendedPayload(nullptr));
  auto plain = attributes();
  plain.payloadType = NVTX_PAYLOAD_TYPE_UNSIGNED_INT64;
  plain.payload.ullValue = 1 << 20;
  EXPECT_FALSE(captureExtendedPayload(&plain));
  auto null_data = attributes();
  null_data.payloadType = NVTX_PAYLOAD_TYPE_EXT;
  null_data.reserved0 = 1;
  EXPECT_FALSE(captureExtendedPayload(&null_data));
  // An empty payload, a zero count, and attributes too short to hold a payload.
  const std::uint64_t value = 5;
  nvtxPayloadData_t empty[] = {{kAllReduceSchema, 0, &value}};
  auto a = attributes();
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(a, empty)
  EXPECT_FALSE(captureExtendedPayload(&a));
  nvtxPayloadData_t one[] = {{kAllReduceSchema, sizeof(value), &value}};
  NVTX_PAYLOAD_EVTATTR_SET_MULTIPLE(a, one)
  EXPECT_TRUE(captureExtendedPayload(&a));
  a.reserved0 = 0;
  EXPECT_FALSE(captureExtendedPayload(&a));
  a.reserved0 = 1;
  a.size = 16;
  EXPECT_FALSE(captureExtendedPayload(&a));
}

TEST(NvtxPayload, FindsTheAttributesOfEachRangeStartCallback) {
  auto a = attributes();
  const nvtxDomainRangePushEx_params domain_push{nullptr, {&a}};
  const nvtxDomainRangeStartEx_params domain_start{nullptr, {&a}};
  const nvtxRangePushEx_params push{&a};
  const nvtxRangeStartEx_params start{&a};
  EXPECT_EQ(cupti::nvtxEventAttributesOf(CUPTI_CBID_NVTX_nvtxDomainRangePushEx, &domain_push), &a);
  EXPECT_EQ(cupti::nvtxEventAttributesOf(CUPTI_CBID_NVTX_nvtxDomainRangeStartEx, &domain_start),
            &a);
  EXPECT_EQ(cupti::nvtxEventAttributesOf(CUPTI_CBID_NVTX_nvtxRangePushEx, &push), &a);
  EXPECT_EQ(cupti::nvtxEventAttributesOf(CUPTI_CBID_NVTX_nvtxRangeStartEx, &start), &a);
  EXPECT_EQ(cupti::nvtxEventAttributesOf(CUPTI_CBID_NVTX_nvtxDomainRangePop, &push), nullptr);
  EXPECT_EQ(cupti::nvtxEventAttributesOf(CUPTI_CBID_NVTX_nvtxRangePushEx, nullptr), nullptr);
}

// --- pairing in the converter ----------------------------------------------------------------

namespace {

constexpr std::uint64_t kBase = 5'000'000'000;
constexpr std::uint32_t kPid = 4242, kTid = 4243;

void range(RecordBuffer& b, std::uint32_t id, std::uint64_t start, std::uint64_t end,
           const char* name, std::uint32_t tid = kTid) {
  ddpscope::testing::addMarker(b, id, CUPTI_ACTIVITY_FLAG_MARKER_START, kBase + start, name, "NCCL",
                               kPid, tid);
  ddpscope::testing::addMarker(b, id, CUPTI_ACTIVITY_FLAG_MARKER_END, kBase + end, nullptr, nullptr,
                               kPid, tid);
}

NvtxPayloadCapture captured(std::size_t bytes, std::uint64_t ts, std::uint32_t tid = kTid) {
  const CommFirstAllReduce p{99, bytes, 0};
  auto c = *ncclCall(kAllReduceSchema, p);
  c.tid = tid;
  c.timestamp = kBase + ts;
  return c;
}

// Bytes of each NCCL range, in time order (-1: none).
std::vector<std::int64_t> rangeBytes(const trace::RankTrace& t) {
  std::vector<std::pair<trace::TimeNs, std::int64_t>> found;
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.kind_of[i] == EventKind::UserAnnotation) {
        found.emplace_back(track.start[i], track.bytes[i]);
      }
    }
  }
  std::sort(found.begin(), found.end());
  std::vector<std::int64_t> out;
  for (const auto& f : found)
    out.push_back(f.second);
  return out;
}

std::string configValue(const trace::RankTrace& t, std::string_view key) {
  for (const auto& [k, v] : t.ddpscope.config)
    if (k == key) return v;
  return "";
}

cupti::ConverterOptions options() {
  cupti::ConverterOptions o;
  o.base_ns = static_cast<std::int64_t>(kBase);
  o.process_id = kPid;
  return o;
}

}  // namespace

TEST(NvtxPayloadPairing, EachNcclRangeGetsThePayloadCopiedAtItsStart) {
  RecordBuffer b;
  range(b, 1, 1000, 9000, "ncclAllReduce");
  range(b, 2, 20000, 30000, "ncclAllReduce");
  cupti::ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  c.addNvtxPayload(captured(4 << 20, 20300));  // out of order: pairing sorts by time
  c.addNvtxPayload(captured(25 << 20, 1200));
  const auto t = c.finish();
  EXPECT_EQ(rangeBytes(t), (std::vector<std::int64_t>{25 << 20, 4 << 20}));
  EXPECT_EQ(c.stats().nvtx_payloads, 2u);
  EXPECT_EQ(c.stats().nvtx_payloads_matched, 2u);
  EXPECT_EQ(configValue(t, "nvtx_payloads"), "2");
  EXPECT_EQ(configValue(t, "nvtx_payloads_sized"), "2");
}

TEST(NvtxPayloadPairing, CloseCallsPairInOrderEvenWhenTheCopyLagsPastTheNextStart) {
  // A group of sends and receives 400 ns apart, each payload copied 700 ns after its start:
  // nearest-in-time would give each range its neighbour's size; pairing in order does not.
  RecordBuffer b;
  range(b, 1, 1000, 1300, "ncclSend");
  range(b, 2, 1400, 1700, "ncclRecv");
  range(b, 3, 1800, 2100, "ncclSend");
  cupti::ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  c.addNvtxPayload(captured(100, 1700));
  c.addNvtxPayload(captured(200, 2100));
  c.addNvtxPayload(captured(300, 2500));
  EXPECT_EQ(rangeBytes(c.finish()), (std::vector<std::int64_t>{100, 200, 300}));
}

TEST(NvtxPayloadPairing, OtherThreadsFarTimesAndUnsizedRangesGetNothing) {
  RecordBuffer b;
  range(b, 1, 1000, 2000, "ncclAllReduce");
  range(b, 2, 100'000, 110'000, "ncclAllReduce");
  range(b, 3, 200'000, 210'000, "ncclGroupEnd");
  range(b, 4, 300'000, 310'000, "ncclAllReduce", kTid + 1);
  cupti::ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  c.addNvtxPayload(captured(1, 1100, kTid + 7));    // another thread
  c.addNvtxPayload(captured(2, 100'000 + 50'000));  // too late for range 2
  c.addNvtxPayload(captured(3, 200'100));           // ncclGroupEnd carries no size
  c.addNvtxPayload(captured(4, 300'100, kTid + 1));
  EXPECT_EQ(rangeBytes(c.finish()), (std::vector<std::int64_t>{-1, -1, -1, 4}));
  EXPECT_EQ(c.stats().nvtx_payloads, 4u);
  EXPECT_EQ(c.stats().nvtx_payloads_matched, 1u);
}

TEST(NvtxPayloadPairing, APlainPayloadRecordKeepsItsSize) {
  RecordBuffer b;
  range(b, 1, 1000, 2000, "ncclAllReduce");
  auto& plain = b.add<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  plain.id = 1;
  plain.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
  plain.payload.metricValueUint64 = 777;
  cupti::ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  c.addNvtxPayload(captured(888, 1100));
  const auto t = c.finish();
  EXPECT_EQ(rangeBytes(t), (std::vector<std::int64_t>{777}));
  EXPECT_EQ(configValue(t, "nvtx_payloads_sized"), "0");
}
