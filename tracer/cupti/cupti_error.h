#pragma once
// CUPTI failures as exceptions that name the call and CUPTI's own description.

#include <cupti_result.h>

#include <stdexcept>
#include <string>

namespace ddpscope::cupti {

class CuptiError : public std::runtime_error {
 public:
  CuptiError(CUptiResult result, const std::string& call, const char* file, int line);
  CUptiResult result() const { return result_; }

 private:
  CUptiResult result_;
};

// "CUPTI_ERROR_NOT_INITIALIZED" (cuptiGetResultString), or "CUPTI error <n>".
std::string resultString(CUptiResult result);

}  // namespace ddpscope::cupti

// Throws ddpscope::cupti::CuptiError naming the call when it does not return CUPTI_SUCCESS.
#define CUPTI_CALL(call)                                                                      \
  do {                                                                                        \
    const CUptiResult ddpscope_cupti_result_ = (call);                                        \
    if (ddpscope_cupti_result_ != CUPTI_SUCCESS) {                                            \
      throw ::ddpscope::cupti::CuptiError(ddpscope_cupti_result_, #call, __FILE__, __LINE__); \
    }                                                                                         \
  } while (0)
