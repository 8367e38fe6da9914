#include "agent/cuda/cuda_check.h"

namespace ddpscope::agent::cuda {

namespace {
std::string where(const char* call, const char* file, int line) {
  std::string f = file;
  const auto slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return std::string(call) + " failed (" + f + ":" + std::to_string(line) + "): ";
}
}  // namespace

void throwCudaError(const char* call, const char* file, int line, cudaError_t e) {
  std::string hint;
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) {
    hint = "; no usable GPU or driver here: use --backend sim, or run on a GPU machine";
  }
  throw CudaError(where(call, file, line) + cudaGetErrorName(e) + ": " + cudaGetErrorString(e) +
                  hint);
}

void throwCublasError(const char* call, const char* file, int line, cublasStatus_t s) {
  throw CudaError(where(call, file, line) + cublasGetStatusName(s) + ": " +
                  cublasGetStatusString(s));
}

void throwNcclError(const char* call, const char* file, int line, ncclResult_t r) {
  throw CudaError(where(call, file, line) + ncclGetErrorString(r) +
                  " (set NCCL_DEBUG=WARN for NCCL's own explanation)");
}

}  // namespace ddpscope::agent::cuda
