#include "cupti_names.h"

#include <cupti.h>
#include <cxxabi.h>

#include <array>
#include <cstdlib>
#include <memory>

namespace ddpscope::cupti {

std::string_view memcpyKindName(std::uint32_t copy_kind) {
  switch (copy_kind) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD:
      return "HtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH:
      return "DtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA:
      return "HtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH:
      return "AtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
      return "AtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
      return "AtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA:
      return "DtoA";
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD:
      return "DtoD";
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH:
      return "HtoH";
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP:
      return "PtoP";
    default:
      return "Unknown";
  }
}

std::string_view memoryKindName(std::uint32_t memory_kind) {
  switch (memory_kind) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE:
      return "Pageable";
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED:
      return "Pinned";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
      return "Device";
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY:
      return "Array";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
      return "Managed";
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
      return "Device Static";
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC:
      return "Managed Static";
    default:
      return "Unknown";
  }
}

std::string memcpyName(std::uint32_t copy_kind, std::uint32_t src_kind, std::uint32_t dst_kind) {
  std::string out = "Memcpy ";
  out += memcpyKindName(copy_kind);
  out += " (";
  out += memoryKindName(src_kind);
  out += " -> ";
  out += memoryKindName(dst_kind);
  out += ')';
  return out;
}

std::string memsetName(std::uint32_t memory_kind) {
  std::string out = "Memset (";
  out += memoryKindName(memory_kind);
  out += ')';
  return out;
}

std::string_view syncName(std::uint32_t sync_type) {
  switch (sync_type) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
      return "Event Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
      return "Stream Wait Event";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
      return "Stream Sync";
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
      return "Context Sync";
    default:
      return "Sync";
  }
}

std::string_view overheadName(std::uint32_t overhead_kind) {
  switch (overhead_kind) {
    case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER:
      return "Driver Compiler";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH:
      return "CUPTI Buffer Flush";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION:
      return "CUPTI Instrumentation";
    case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE:
      return "CUPTI Resource";
    case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING:
      return "Runtime Triggered Module Loading";
    case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING:
      return "Lazy Function Loading";
    case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL:
      return "Command Buffer Full";
    case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST:
      return "Activity Buffer Request";
    case CUPTI_ACTIVITY_OVERHEAD_UVM_ACTIVITY_INIT:
      return "UVM Activity Init";
    default:
      return "Unknown Overhead";
  }
}

namespace {

struct TableEntry {
  std::uint32_t cbid;
  std::string_view name;
};

// The calls that launch work or synchronise: what flows, HTA's launch matching and the
// dependency check need when cuptiGetCallbackName is unavailable.
#define DDPSCOPE_RT(n)                                   \
  TableEntry {                                           \
    CUPTI_RUNTIME_TRACE_CBID_##n, stripVersionSuffix(#n) \
  }
#define DDPSCOPE_DRV(n)                                 \
  TableEntry {                                          \
    CUPTI_DRIVER_TRACE_CBID_##n, stripVersionSuffix(#n) \
  }
constexpr std::array kRuntimeTable = {
    DDPSCOPE_RT(cudaLaunchKernel_v7000),
    DDPSCOPE_RT(cudaLaunchKernel_ptsz_v7000),
    DDPSCOPE_RT(cudaLaunchKernelExC_v11060),
    DDPSCOPE_RT(cudaLaunchCooperativeKernel_v9000),
    DDPSCOPE_RT(cudaMemcpy_v3020),
    DDPSCOPE_RT(cudaMemcpyAsync_v3020),
    DDPSCOPE_RT(cudaMemsetAsync_v3020),
    DDPSCOPE_RT(cudaMemset_v3020),
    DDPSCOPE_RT(cudaStreamSynchronize_v3020),
    DDPSCOPE_RT(cudaStreamWaitEvent_v3020),
    DDPSCOPE_RT(cudaEventRecord_v3020),
    DDPSCOPE_RT(cudaEventSynchronize_v3020),
    DDPSCOPE_RT(cudaDeviceSynchronize_v3020),
    DDPSCOPE_RT(cudaGraphLaunch_v10000),
    DDPSCOPE_RT(cudaMalloc_v3020),
    DDPSCOPE_RT(cudaFree_v3020),
};
constexpr std::array kDriverTable = {
    DDPSCOPE_DRV(cuLaunchKernel),       DDPSCOPE_DRV(cuLaunchKernel_ptsz),
    DDPSCOPE_DRV(cuLaunchKernelEx),     DDPSCOPE_DRV(cuLaunchCooperativeKernel),
    DDPSCOPE_DRV(cuMemcpyAsync),        DDPSCOPE_DRV(cuMemcpyHtoDAsync_v2),
    DDPSCOPE_DRV(cuMemcpyDtoHAsync_v2), DDPSCOPE_DRV(cuMemsetD8Async),
    DDPSCOPE_DRV(cuStreamSynchronize),  DDPSCOPE_DRV(cuStreamWaitEvent),
    DDPSCOPE_DRV(cuEventRecord),        DDPSCOPE_DRV(cuEventSynchronize),
    DDPSCOPE_DRV(cuCtxSynchronize),     DDPSCOPE_DRV(cuGraphLaunch),
};
#undef DDPSCOPE_RT
#undef DDPSCOPE_DRV

}  // namespace

std::string_view apiNameFromTable(ApiDomain domain, std::uint32_t cbid) {
  if (domain == ApiDomain::Runtime) {
    for (const auto& e : kRuntimeTable)
      if (e.cbid == cbid) return e.name;
  } else {
    for (const auto& e : kDriverTable)
      if (e.cbid == cbid) return e.name;
  }
  return {};
}

std::string apiName(ApiDomain domain, std::uint32_t cbid) {
  const char* name = nullptr;
  const auto cb_domain =
      domain == ApiDomain::Runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API;
  if (cuptiGetCallbackName(cb_domain, cbid, &name) == CUPTI_SUCCESS && name != nullptr &&
      *name != '\0') {
    return std::string(stripVersionSuffix(name));
  }
  if (const auto known = apiNameFromTable(domain, cbid); !known.empty()) return std::string(known);
  return (domain == ApiDomain::Runtime ? "cudaRuntimeApi#" : "cuDriverApi#") + std::to_string(cbid);
}

std::string demangle(std::string_view name) {
  if (!name.starts_with("_Z")) return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  if (status != 0 || !out) return mangled;
  return std::string(out.get());
}

}  // namespace ddpscope::cupti
