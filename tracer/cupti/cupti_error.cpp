#include "cupti_error.h"

#include <cupti.h>

namespace ddpscope::cupti {

std::string resultString(CUptiResult result) {
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) == CUPTI_SUCCESS && text != nullptr) return text;
  return "CUPTI error " + std::to_string(static_cast<int>(result));
}

CuptiError::CuptiError(CUptiResult result, const std::string& call, const char* file, int line)
    : std::runtime_error(call + " failed: " + resultString(result) + " (" + file + ":" +
                         std::to_string(line) + ")"),
      result_(result) {}

}  // namespace ddpscope::cupti
