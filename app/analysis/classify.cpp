#include "classify.h"

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
// ASCII case folding (what std::tolower does to a byte in the C and UTF-8 locales), inline:
// the library call per byte was most of classifying many distinct long kernel names.
char lowerAscii(char c) {
  return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `needle` in lower case.
bool containsNoCase(std::string_view hay, std::string_view needle) {
  if (needle.empty()) return true;
  if (needle.size() > hay.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (lowerAscii(hay[i]) != needle[0]) continue;
    std::size_t k = 1;
    while (k < needle.size() && lowerAscii(hay[i + k]) == needle[k])
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
