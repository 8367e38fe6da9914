#pragma once
// Display names of CUPTI records, spelled as Kineto spells them so that Perfetto and Holistic
// Trace Analysis users see familiar names (docs/FORMAT.md).

#include <cstdint>
#include <string>
#include <string_view>

namespace ddpscope::cupti {

// "HtoD", "DtoH", ..., "PtoP"; "Unknown" for values CUPTI may add later.
std::string_view memcpyKindName(std::uint32_t copy_kind);
// "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static".
std::string_view memoryKindName(std::uint32_t memory_kind);
// "Memcpy HtoD (Pageable -> Device)".
std::string memcpyName(std::uint32_t copy_kind, std::uint32_t src_kind, std::uint32_t dst_kind);
// "Memset (Device)".
std::string memsetName(std::uint32_t memory_kind);
// "Stream Sync", "Event Sync", "Context Sync", "Stream Wait Event", "Sync" when unknown.
std::string_view syncName(std::uint32_t sync_type);
// "CUPTI Buffer Flush", "CUPTI Instrumentation", ...; "Unknown Overhead" otherwise.
std::string_view overheadName(std::uint32_t overhead_kind);

enum class ApiDomain : std::uint8_t { Runtime, Driver };
// The API call's name without CUPTI's version suffix ("cudaLaunchKernel", "cuLaunchKernel"):
// from cuptiGetCallbackName (works without a GPU), else from a table of the calls that matter
// for launches and synchronisation, else "cudaRuntimeApi#<cbid>" / "cuDriverApi#<cbid>".
std::string apiName(ApiDomain domain, std::uint32_t cbid);
// The same from the built-in table only (no CUPTI call); "" when not in the table.
std::string_view apiNameFromTable(ApiDomain domain, std::uint32_t cbid);
// Strips a trailing CUPTI version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel",
// "cudaMemcpyAsync_ptsz_v7000" -> "cudaMemcpyAsync_ptsz".
constexpr std::string_view stripVersionSuffix(std::string_view name) {
  const auto pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 >= name.size()) return name;
  for (std::size_t i = pos + 2; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9') return name;
  }
  return name.substr(0, pos);
}

// Demangles an Itanium C++ ABI name; returns the input unchanged when it is not mangled or
// cannot be demangled (extern "C" kernels, already readable names).
std::string demangle(std::string_view name);

}  // namespace ddpscope::cupti
