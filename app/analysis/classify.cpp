#include "classify.h"

#include <cctype>

namespace ddpscope::analysis {

using trace::EventKind;

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

namespace {
bool containsNoCase(std::string_view hay, std::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    std::size_t k = 0;
    while (k < needle.size() && std::tolower(static_cast<unsigned char>(hay[i + k])) == needle[k])
      ++k;
    if (k == needle.size()) return true;
  }
  return false;
}
}  // namespace

bool isAllreduceName(std::string_view name) {
  return containsNoCase(name, "allreduce") || containsNoCase(name, "all_reduce");
}

bool isOptimizerName(std::string_view name) {
  for (std::string_view w :
       {"sgd", "optim", "adam", "update", "multi_tensor", "foreach", "momentum"})
    if (containsNoCase(name, w)) return true;
  return false;
}

KernelRole kernelRole(EventKind kind, ActivityClass cls, std::string_view name) {
  if (cls == ActivityClass::Communication) return KernelRole::Allreduce;
  if (kind == EventKind::GpuAnnotation) return KernelRole::ReadyMarker;
  if (containsNoCase(name, "unpack")) return KernelRole::Unpack;
  if (containsNoCase(name, "pack")) return KernelRole::Pack;
  if (isOptimizerName(name)) return KernelRole::Optimizer;
  return KernelRole::Gradient;
}

std::string_view streamRoleName(StreamRole r) {
  switch (r) {
    case StreamRole::Communication:
      return "communication";
    case StreamRole::Compute:
      return "compute";
    case StreamRole::Copy:
      return "copy";
    case StreamRole::Sync:
      return "sync";
    case StreamRole::Mixed:
      return "mixed";
  }
  return "compute";
}

std::string_view streamRoleShortName(StreamRole r) {
  if (r == StreamRole::Communication) return "comm";
  return streamRoleName(r);
}

}  // namespace ddpscope::analysis
