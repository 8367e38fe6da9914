#pragma once
// The arithmetic of the simulated device's kernels (--sim-math), fp32 on the CPU. Row-major
// tensors; each function is the reference for the kernel of the same name in agent/device.h.

#include <cstdint>

#include "agent/device.h"

namespace ddpscope::agent::sim::cpu {

void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, const float* b, float beta, float* c);
void epilogue(std::int64_t rows, std::int64_t cols, float* x, const float* bias,
              const float* residual, float* out, Activation act);
void activationBackward(std::int64_t n, const float* dy, const float* pre, float* dx,
                        Activation act);
void columnSum(std::int64_t rows, std::int64_t cols, const float* dy, float* db);
void layerNorm(std::int64_t rows, std::int64_t cols, const float* x, const float* gamma,
               const float* beta, float* out, float* stats);
void layerNormBackward(std::int64_t rows, std::int64_t cols, const float* x, const float* stats,
                       const float* gamma, const float* dy, const float* residual_grad, float* dx);
void layerNormGammaGrad(std::int64_t rows, std::int64_t cols, const float* x, const float* stats,
                        const float* dy, float* dgamma);
void attentionCore(std::int64_t rows, std::int64_t width, const float* qkv, float* out);
void attentionCoreBackward(std::int64_t rows, std::int64_t width, const float* qkv,
                           const float* dout, float* dqkv);
void embedding(std::int64_t rows, std::int64_t width, const float* tokens, const float* table,
               float* out);
void embeddingBackward(std::int64_t rows, std::int64_t width, std::int64_t table_rows,
                       const float* tokens, const float* dout, float* dtable);
void mseLoss(std::int64_t rows, std::int64_t n, const float* pred, const float* target,
             float* dpred, float* loss);

}  // namespace ddpscope::agent::sim::cpu
