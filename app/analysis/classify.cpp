#include "classify.h"

namespace ddpscope::analysis {

using trace::EventKind;

bool isCommunicationName(std::string_view name) {
  return name.starts_with("nccl") || name.find("ncclKernel") != std::string_view::npos ||
         name.find("ncclDevKernel") != std::string_view::npos || name.starts_with("hccl") ||
         name.starts_with("rccl") || name.starts_with("hipccl");
}

ActivityClass classify(EventKind kind, std::string_view name) {
  switch (kind) {
    case EventKind::Sync:
      return ActivityClass::Other;
    case EventKind::Memcpy:
    case EventKind::Memset:
      return ActivityClass::Memory;
    case EventKind::Kernel:
      break;
    default:
      return ActivityClass::None;
  }
  if (isCommunicationName(name)) return ActivityClass::Communication;
  if (name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma")) {
    return ActivityClass::Memory;
  }
  if (name.find("Sync") != std::string_view::npos ||
      name.find("Stream Wait Event") != std::string_view::npos) {
    return ActivityClass::Other;
  }
  return ActivityClass::Computation;
}

std::string_view className(ActivityClass c) {
  switch (c) {
    case ActivityClass::Communication:
      return "communication";
    case ActivityClass::Computation:
      return "computation";
    case ActivityClass::Memory:
      return "memory";
    case ActivityClass::Other:
      return "other";
    case ActivityClass::None:
      return "none";
  }
  return "none";
}

}  // namespace ddpscope::analysis
