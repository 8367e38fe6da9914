#pragma once
// The training loop's own CUDA kernels (GEMMs are cuBLAS). Each mirrors the CPU reference of the
// same name in agent/sim/cpu_kernels.h; fp32, row-major. Launch wrappers enqueue on `stream` and
// check the launch.

#include <cuda_runtime.h>

#include <cstdint>

namespace ddpscope::agent::cuda::kernels {

// act: 0 none, 1 relu, 2 gelu (agent::Activation's values).
void epilogue(cudaStream_t s, std::int64_t rows, std::int64_t cols, float* x, const float* bias,
              const float* residual, float* out, int act);
void activationBackward(cudaStream_t s, std::int64_t n, const float* dy, const float* pre,
                        float* dx, int act);
void columnSum(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* dy, float* db);
void layerNorm(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* x,
               const float* gamma, const float* beta, float* out, float* stats);
void layerNormBackward(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* x,
                       const float* stats, const float* gamma, const float* dy,
                       const float* residual_grad, float* dx);
void layerNormGammaGrad(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* x,
                        const float* stats, const float* dy, float* dgamma);
void attentionCore(cudaStream_t s, std::int64_t rows, std::int64_t width, const float* qkv,
                   float* out);
void attentionCoreBackward(cudaStream_t s, std::int64_t rows, std::int64_t width, const float* qkv,
                           const float* dout, float* dqkv);
// Token ids are stored as floats (exact below 2^24), as on the simulated device.
void embedding(cudaStream_t s, std::int64_t rows, std::int64_t width, const float* tokens,
               const float* table, float* out);
void embeddingBackward(cudaStream_t s, std::int64_t rows, std::int64_t width,
                       std::int64_t table_rows, const float* tokens, const float* dout,
                       float* dtable);
void mseLoss(cudaStream_t s, std::int64_t rows, std::int64_t n, const float* pred,
             const float* target, float* dpred, float* loss);

// Many tensors in one launch: a table in device memory, `prefix` the running element count.
struct CopySpan {
  const float* src;
  float* dst;
  std::int64_t count;
  std::int64_t prefix;
};
struct UpdateSpan {
  float* param;
  const float* grad;
  std::int64_t count;
  std::int64_t prefix;
};
// Kernel names contain "pack", "unpack" and "sgd": the analysis tells their roles by name.
void packBucket(cudaStream_t s, const CopySpan* table, int spans, std::int64_t total);
void unpackBucket(cudaStream_t s, const CopySpan* table, int spans, std::int64_t total);
void sgdUpdate(cudaStream_t s, const UpdateSpan* table, int spans, std::int64_t total, float lr,
               float grad_scale);

}  // namespace ddpscope::agent::cuda::kernels
