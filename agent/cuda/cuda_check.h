#pragma once
// Every CUDA, cuBLAS and NCCL call is checked; a failure names the call, where it was made and
// what the library said, so a user can act on it.

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace ddpscope::agent::cuda {

class CudaError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void throwCudaError(const char* call, const char* file, int line, cudaError_t e);
[[noreturn]] void throwCublasError(const char* call, const char* file, int line, cublasStatus_t s);
[[noreturn]] void throwNcclError(const char* call, const char* file, int line, ncclResult_t r);

}  // namespace ddpscope::agent::cuda

#define DDPSCOPE_CUDA_CHECK(call)                                                     \
  do {                                                                                \
    const cudaError_t ddpscope_e = (call);                                            \
    if (ddpscope_e != cudaSuccess)                                                    \
      ::ddpscope::agent::cuda::throwCudaError(#call, __FILE__, __LINE__, ddpscope_e); \
  } while (0)

#define DDPSCOPE_CUBLAS_CHECK(call)                                                     \
  do {                                                                                  \
    const cublasStatus_t ddpscope_s = (call);                                           \
    if (ddpscope_s != CUBLAS_STATUS_SUCCESS)                                            \
      ::ddpscope::agent::cuda::throwCublasError(#call, __FILE__, __LINE__, ddpscope_s); \
  } while (0)

#define DDPSCOPE_NCCL_CHECK(call)                                                     \
  do {                                                                                \
    const ncclResult_t ddpscope_r = (call);                                           \
    if (ddpscope_r != ncclSuccess && ddpscope_r != ncclInProgress)                    \
      ::ddpscope::agent::cuda::throwNcclError(#call, __FILE__, __LINE__, ddpscope_r); \
  } while (0)
