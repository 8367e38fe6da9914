#include "nvtx_payload.h"

#include <generated_nvtx_meta.h>
#if __has_include(<nvtx3/nvToolsExtPayload.h>)
#include <nvtx3/nvToolsExtPayload.h>
#endif

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <limits>

namespace ddpscope::cupti {

namespace {

// The NVTX payload extension's ABI (nvToolsExtPayload.h), spelt out here because older CUDA
// toolkits do not ship that header (the tracer must build on a GPU machine's toolkit); where it
// is installed, the two must agree.
constexpr std::int32_t kPayloadTypeExt = static_cast<std::int32_t>(0xDFBD0009u);
struct PayloadData {
  std::uint64_t schemaId;
  std::size_t size;
  const void* payload;
};
#ifdef NVTX_PAYLOAD_TYPE_EXT
static_assert(kPayloadTypeExt == NVTX_PAYLOAD_TYPE_EXT);
static_assert(sizeof(PayloadData) == sizeof(nvtxPayloadData_t));
static_assert(offsetof(PayloadData, schemaId) == offsetof(nvtxPayloadData_t, schemaId));
static_assert(offsetof(PayloadData, size) == offsetof(nvtxPayloadData_t, size));
static_assert(offsetof(PayloadData, payload) == offsetof(nvtxPayloadData_t, payload));
#endif

// Static schema ids lie in [1 << 24, 1 << 32); the tool hands out dynamic ones above.
constexpr std::uint64_t kStaticSchemaStart = std::uint64_t{1} << 24;
constexpr std::uint64_t kDynamicSchemaStart = std::uint64_t{1} << 32;

// NCCL's payload layouts, per API range. Releases 2.19 to 2.22 put the message size first
// (ncclAllGather: the size alone); later ones put the communicator's 64-bit id before it. Both
// are static-size structs of size_t and int members, so the payload's size says which layout it
// is; any other size is a layout this code does not know, and no size is read from it.
struct NcclLayout {
  std::string_view name;
  std::uint64_t size_first;  // payload size when the message size is at offset 0
  std::uint64_t comm_first;  // payload size when it is at offset 8, after the communicator
};
constexpr NcclLayout kNcclLayouts[] = {
    {"ncclAllGather", 8, 16}, {"ncclAllReduce", 16, 24},     {"ncclBroadcast", 16, 24},
    {"ncclReduce", 16, 24},   {"ncclReduceScatter", 16, 24}, {"ncclSend", 16, 24},
    {"ncclRecv", 16, 24},
};

}  // namespace

const nvtxEventAttributes_t* nvtxEventAttributesOf(CUpti_CallbackId cbid, const void* params) {
  if (params == nullptr) return nullptr;
  switch (cbid) {
    case CUPTI_CBID_NVTX_nvtxDomainRangePushEx:
      return static_cast<const nvtxDomainRangePushEx_params*>(params)->core.eventAttrib;
    case CUPTI_CBID_NVTX_nvtxDomainRangeStartEx:
      return static_cast<const nvtxDomainRangeStartEx_params*>(params)->core.eventAttrib;
    case CUPTI_CBID_NVTX_nvtxRangePushEx:
      return static_cast<const nvtxRangePushEx_params*>(params)->eventAttrib;
    case CUPTI_CBID_NVTX_nvtxRangeStartEx:
      return static_cast<const nvtxRangeStartEx_params*>(params)->eventAttrib;
    default:
      return nullptr;
  }
}

std::optional<NvtxPayloadCapture> captureExtendedPayload(const nvtxEventAttributes_t* attributes) {
  if (attributes == nullptr) return std::nullopt;
  // Attributes of an older, shorter version end before the payload fields.
  constexpr std::size_t kPayloadEnd =
      offsetof(nvtxEventAttributes_t, payload) + sizeof(attributes->payload);
  if (attributes->size < kPayloadEnd) return std::nullopt;
  if (attributes->payloadType != kPayloadTypeExt || attributes->reserved0 < 1) {
    return std::nullopt;
  }
  const auto* data = reinterpret_cast<const PayloadData*>(
      static_cast<std::uintptr_t>(attributes->payload.ullValue));
  if (data == nullptr || data->payload == nullptr || data->size == 0) return std::nullopt;
  NvtxPayloadCapture c;
  c.schema_id = data->schemaId;
  c.size = data->size;
  c.head_bytes = static_cast<std::uint8_t>(std::min<std::size_t>(data->size, c.head.size()));
  std::memcpy(c.head.data(), data->payload, c.head_bytes);
  return c;
}

bool isNcclSizedRange(std::string_view range_name) {
  return std::any_of(std::begin(kNcclLayouts), std::end(kNcclLayouts),
                     [&](const NcclLayout& l) { return l.name == range_name; });
}

std::optional<std::int64_t> ncclMessageBytes(std::string_view range_name,
                                             const NvtxPayloadCapture& payload) {
  if (payload.schema_id < kStaticSchemaStart || payload.schema_id >= kDynamicSchemaStart) {
    return std::nullopt;  // NCCL's schemas are static
  }
  const auto* layout = std::find_if(std::begin(kNcclLayouts), std::end(kNcclLayouts),
                                    [&](const NcclLayout& l) { return l.name == range_name; });
  if (layout == std::end(kNcclLayouts)) return std::nullopt;
  std::size_t offset = 0;
  if (payload.size == layout->comm_first) {
    offset = 8;
  } else if (payload.size != layout->size_first) {
    return std::nullopt;
  }
  if (offset + sizeof(std::uint64_t) > payload.head_bytes) return std::nullopt;
  std::uint64_t bytes = 0;  // a size_t of the traced process, which is this one's
  static_assert(sizeof(std::size_t) == sizeof(std::uint64_t));
  std::memcpy(&bytes, payload.head.data() + offset, sizeof(bytes));
  if (bytes > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
    return std::nullopt;
  }
  return static_cast<std::int64_t>(bytes);
}

}  // namespace ddpscope::cupti
