#pragma once
// NVTX extended payloads (NVTX_PAYLOAD_TYPE_EXT), as NCCL >= 2.19 attaches them to its API
// ranges: the range's event attributes point at an nvtxPayloadData_t {schema id, size, pointer}
// whose bytes live in the caller's stack frame. CUPTI's activity records do not carry them, so
// the live tracer copies them in its NVTX callback (while the call is on the stack) and the
// converter matches each copy to its marker record by thread and time.
//
// Plain C++: nothing here calls CUDA, CUPTI or NVTX, so tests build attributes the way NCCL does
// and check what comes out.

#include <cupti.h>  // CUpti_CallbackId and the NVTX callback ids (that header has no guard)
#include <nvtx3/nvToolsExt.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ddpscope::cupti {

// What the tracer keeps of one extended payload.
struct NvtxPayloadCapture {
  std::uint32_t tid = 0;        // the calling thread, as CUPTI names it in marker records
  std::uint64_t timestamp = 0;  // CUPTI ns at the call
  std::uint64_t schema_id = 0;
  std::uint64_t size = 0;  // the payload's declared size in bytes
  std::array<std::uint8_t, 32> head{};
  std::uint8_t head_bytes = 0;  // min(size, head.size()) bytes copied into head
};

// The event attributes of an NVTX call CUPTI reports (params = CUpti_NvtxData::functionParams):
// the *Ex range starts and pushes, with or without a domain. nullptr for other calls.
const nvtxEventAttributes_t* nvtxEventAttributesOf(CUpti_CallbackId cbid, const void* params);

// The first extended payload of the attributes, copied (tid and timestamp left 0); nullopt when
// the attributes carry none (no payload, a plain number, a null pointer, a zero size).
std::optional<NvtxPayloadCapture> captureExtendedPayload(const nvtxEventAttributes_t* attributes);

// The message size in bytes an NCCL API range's payload gives, or nullopt. NCCL's collective and
// point-to-point ranges (ncclAllReduce, ncclAllGather, ncclBroadcast, ncclReduce,
// ncclReduceScatter, ncclSend, ncclRecv) carry a static-schema struct that starts with the
// communicator's 64-bit id followed by the message size as a size_t, in every NCCL release that
// has extended payloads; the static schema ids themselves differ between releases, so the range
// name decides. Communicator ranges (ncclCommInitRank, ...) carry no size.
bool isNcclSizedRange(std::string_view range_name);  // one of the ranges above
std::optional<std::int64_t> ncclMessageBytes(std::string_view range_name,
                                             const NvtxPayloadCapture& payload);

}  // namespace ddpscope::cupti
