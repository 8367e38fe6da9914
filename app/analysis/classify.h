#pragma once
// Classification of GPU activity by name (DESIGN.md "Definitions").

#include <cstdint>
#include <string_view>

#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

enum class ActivityClass : std::uint8_t {
  Communication,  // NCCL/RCCL/HCCL collectives
  Computation,    // every other kernel
  Memory,         // Memcpy*, Memset*, dma*
  Other,          // synchronisation: cuda_sync, names containing "Sync" or "Stream Wait Event"
  None,           // not a GPU activity (host events, GPU annotations)
};
inline constexpr int kActivityClassCount = 4;

bool isCommunicationName(std::string_view name);
ActivityClass classify(trace::EventKind kind, std::string_view name);
std::string_view className(ActivityClass c);  // "communication", "computation", ...

}  // namespace ddpscope::analysis
