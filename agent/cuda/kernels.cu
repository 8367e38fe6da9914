#include "agent/cuda/kernels.h"

#include "agent/cuda/cuda_check.h"

// Kernel names start with ddpscope_ so a trace shows whose they are; the analysis recognises the
// bucket roles "pack", "unpack" and "sgd" by name.
namespace ddpscope::agent::cuda::kernels {

namespace {

constexpr int kThreads = 256;
constexpr float kLayerNormEps = 1e-5f;
constexpr float kGeluC = 0.7978845608028654f;

unsigned blocksFor(std::int64_t n) {
  const std::int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > 65535 * 8 ? 65535 * 8 : b));
}

// Grid-stride reductions finish with one atomic per block: keep the block count modest.
unsigned reductionBlocks(std::int64_t n) {
  const unsigned b = blocksFor(n);
  return b > 1024 ? 1024 : b;
}

void checkLaunch(const char* kernel) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throwCudaError(kernel, __FILE__, __LINE__, e);
}

__device__ float geluF(float x) {
  return 0.5f * x * (1.0f + tanhf(kGeluC * (x + 0.044715f * x * x * x)));
}

__device__ float geluGradF(float x) {
  const float t = tanhf(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3 * 0.044715f * x * x);
}

__device__ float sigmoidF(float x) {
  return 1.0f / (1.0f + expf(-x));
}

// Sum over a block of blockDim.x threads (a power of two, <= 1024).
__device__ double blockSum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();
  return total;
}

__global__ void ddpscope_epilogue(std::int64_t rows, std::int64_t cols, float* x, const float* bias,
                                  const float* residual, float* out, int act) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       i < rows * cols; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    float v = x[i] + (bias ? bias[i % cols] : 0.0f);
    x[i] = v;
    if (act == 1) v = v > 0 ? v : 0.0f;
    if (act == 2) v = geluF(v);
    out[i] = v + (residual ? residual[i] : 0.0f);
  }
}

__global__ void ddpscope_activation_backward(std::int64_t n, const float* dy, const float* pre,
                                             float* dx, int act) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float g = act == 1 ? (pre[i] > 0 ? 1.0f : 0.0f) : act == 2 ? geluGradF(pre[i]) : 1.0f;
    dx[i] = dy[i] * g;
  }
}

// Column sums of a row-major rows x cols matrix, one block per kColTile columns: each warp
// reads kColTile adjacent floats of a row (coalesced), the kRowLanes warps take every
// kRowLanes-th row, and a column's partial sums are added in a fixed order, so the result is
// the same on every run. (One thread walking all the rows of its column left most of the GPU
// idle and took milliseconds for a transformer's bias gradients.)
constexpr int kColTile = 32;
constexpr int kRowLanes = 32;

unsigned columnBlocks(std::int64_t cols) {  // at least one block
  const std::int64_t b = (cols + kColTile - 1) / kColTile;
  return static_cast<unsigned>(b < 1 ? 1 : b);
}

struct RowTerm {  // dy[i][j]: a bias gradient
  const float* dy;
  std::int64_t cols;
  __device__ float operator()(std::int64_t i, std::int64_t j) const { return dy[i * cols + j]; }
};

struct GammaTerm {  // dy[i][j] * xhat[i][j]: layer norm's gamma gradient
  const float* x;
  const float* stats;  // mean, rstd per row
  const float* dy;
  std::int64_t cols;
  __device__ float operator()(std::int64_t i, std::int64_t j) const {
    return dy[i * cols + j] * (x[i * cols + j] - stats[2 * i]) * stats[2 * i + 1];
  }
};

template <typename Term>
__device__ void columnReduce(std::int64_t rows, std::int64_t cols, const Term& term, float* out) {
  __shared__ float partial[kRowLanes][kColTile + 1];
  const std::int64_t j = blockIdx.x * static_cast<std::int64_t>(kColTile) + threadIdx.x;
  float acc = 0.0f;
  if (j < cols) {
    for (std::int64_t i = threadIdx.y; i < rows; i += kRowLanes)
      acc += term(i, j);
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();  // every thread reaches it: no early return above
  if (threadIdx.y == 0 && j < cols) {
    float total = 0.0f;
    for (int r = 0; r < kRowLanes; ++r)
      total += partial[r][threadIdx.x];
    out[j] = total;
  }
}

__global__ void ddpscope_column_sum(std::int64_t rows, std::int64_t cols, const float* dy,
                                    float* db) {
  columnReduce(rows, cols, RowTerm{dy, cols}, db);
}

// One block per row.
__global__ void ddpscope_layer_norm(std::int64_t cols, const float* x, const float* gamma,
                                    const float* beta, float* out, float* stats) {
  __shared__ double shared[kThreads];
  const std::int64_t row = blockIdx.x;
  const float* xr = x + row * cols;
  double s = 0;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    s += xr[j];
  const double mean = blockSum(s, shared) / static_cast<double>(cols);
  double v = 0;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x)
    v += (xr[j] - mean) * (xr[j] - mean);
  const double var = blockSum(v, shared) / static_cast<double>(cols);
  const float rstd = 1.0f / sqrtf(static_cast<float>(var) + kLayerNormEps);
  const float m = static_cast<float>(mean);
  if (threadIdx.x == 0) {
    stats[2 * row] = m;
    stats[2 * row + 1] = rstd;
  }
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    out[row * cols + j] = (xr[j] - m) * rstd * gamma[j] + beta[j];
  }
}

__global__ void ddpscope_layer_norm_backward(std::int64_t cols, const float* x, const float* stats,
                                             const float* gamma, const float* dy,
                                             const float* residual_grad, float* dx) {
  __shared__ double shared[kThreads];
  const std::int64_t row = blockIdx.x;
  const float mean = stats[2 * row], rstd = stats[2 * row + 1];
  double sg = 0, sgx = 0;
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float g = dy[row * cols + j] * gamma[j];
    sg += g;
    sgx += g * (x[row * cols + j] - mean) * rstd;
  }
  const float mg = static_cast<float>(blockSum(sg, shared) / static_cast<double>(cols));
  const float mgx = static_cast<float>(blockSum(sgx, shared) / static_cast<double>(cols));
  for (std::int64_t j = threadIdx.x; j < cols; j += blockDim.x) {
    const float xhat = (x[row * cols + j] - mean) * rstd;
    const float g = dy[row * cols + j] * gamma[j];
    dx[row * cols + j] =
        rstd * (g - mg - xhat * mgx) + (residual_grad ? residual_grad[row * cols + j] : 0.0f);
  }
}

__global__ void ddpscope_layer_norm_gamma_grad(std::int64_t rows, std::int64_t cols, const float* x,
                                               const float* stats, const float* dy, float* dgamma) {
  columnReduce(rows, cols, GammaTerm{x, stats, dy, cols}, dgamma);
}

__global__ void ddpscope_attention_core(std::int64_t rows, std::int64_t width, const float* qkv,
                                        float* out) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       e < rows * width; e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / width, j = e % width;
    const float* q = qkv + i * 3 * width;
    out[e] = q[2 * width + j] * sigmoidF(q[j] * q[width + j]);
  }
}

__global__ void ddpscope_attention_core_backward(std::int64_t rows, std::int64_t width,
                                                 const float* qkv, const float* dout, float* dqkv) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       e < rows * width; e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / width, j = e % width;
    const float* q = qkv + i * 3 * width;
    float* d = dqkv + i * 3 * width;
    const float sg = sigmoidF(q[j] * q[width + j]);
    const float da = dout[e];
    const float dz = da * q[2 * width + j] * sg * (1.0f - sg);
    d[j] = dz * q[width + j];
    d[width + j] = dz * q[j];
    d[2 * width + j] = da * sg;
  }
}

__global__ void ddpscope_embedding(std::int64_t rows, std::int64_t width, const float* tokens,
                                   const float* table, float* out) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       e < rows * width; e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / width, j = e % width;
    out[e] = table[static_cast<std::int64_t>(tokens[i]) * width + j];
  }
}

__global__ void ddpscope_embedding_backward(std::int64_t rows, std::int64_t width,
                                            std::int64_t table_rows, const float* tokens,
                                            const float* dout, float* dtable) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x;
       e < rows * width; e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e / width, j = e % width;
    const auto t = static_cast<std::int64_t>(tokens[i]);
    if (t >= 0 && t < table_rows) atomicAdd(&dtable[t * width + j], dout[e]);
  }
}

__global__ void ddpscope_mse_loss(std::int64_t n, float inv_rows, double inv_two_rows,
                                  const float* pred, const float* target, float* dpred,
                                  float* loss) {
  __shared__ double shared[kThreads];
  double s = 0;
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float d = pred[i] - target[i];
    s += static_cast<double>(d) * d;
    dpred[i] = d * inv_rows;
  }
  const double total = blockSum(s, shared);
  if (threadIdx.x == 0) atomicAdd(loss, static_cast<float>(total * inv_two_rows));
}

__device__ int spanOf(const std::int64_t* prefix_of, int stride_bytes, int spans, std::int64_t e) {
  // Binary search for the last span whose prefix <= e; prefixes live in a struct array.
  int lo = 0, hi = spans - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    const auto p = *reinterpret_cast<const std::int64_t*>(
        reinterpret_cast<const char*>(prefix_of) + static_cast<std::int64_t>(mid) * stride_bytes);
    if (p <= e) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

__global__ void ddpscope_pack_bucket(const CopySpan* table, int spans, std::int64_t total) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int k = spanOf(&table[0].prefix, sizeof(CopySpan), spans, e);
    table[k].dst[e - table[k].prefix] = table[k].src[e - table[k].prefix];
  }
}

__global__ void ddpscope_unpack_bucket(const CopySpan* table, int spans, std::int64_t total) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int k = spanOf(&table[0].prefix, sizeof(CopySpan), spans, e);
    table[k].dst[e - table[k].prefix] = table[k].src[e - table[k].prefix];
  }
}

__global__ void ddpscope_sgd_update(const UpdateSpan* table, int spans, std::int64_t total,
                                    float lr, float grad_scale) {
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < total;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const int k = spanOf(&table[0].prefix, sizeof(UpdateSpan), spans, e);
    const std::int64_t i = e - table[k].prefix;
    table[k].param[i] -= lr * grad_scale * table[k].grad[i];
  }
}

}  // namespace

void epilogue(cudaStream_t s, std::int64_t rows, std::int64_t cols, float* x, const float* bias,
              const float* residual, float* out, int act) {
  ddpscope_epilogue<<<blocksFor(rows * cols), kThreads, 0, s>>>(rows, cols, x, bias, residual, out,
                                                                act);
  checkLaunch("ddpscope_epilogue<<<>>>");
}

void activationBackward(cudaStream_t s, std::int64_t n, const float* dy, const float* pre,
                        float* dx, int act) {
  ddpscope_activation_backward<<<blocksFor(n), kThreads, 0, s>>>(n, dy, pre, dx, act);
  checkLaunch("ddpscope_activation_backward<<<>>>");
}

void columnSum(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* dy, float* db) {
  ddpscope_column_sum<<<columnBlocks(cols), dim3(kColTile, kRowLanes), 0, s>>>(rows, cols, dy, db);
  checkLaunch("ddpscope_column_sum<<<>>>");
}

void layerNorm(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* x,
               const float* gamma, const float* beta, float* out, float* stats) {
  if (rows == 0) return;
  ddpscope_layer_norm<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(cols, x, gamma, beta, out,
                                                                       stats);
  checkLaunch("ddpscope_layer_norm<<<>>>");
}

void layerNormBackward(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* x,
                       const float* stats, const float* gamma, const float* dy,
                       const float* residual_grad, float* dx) {
  if (rows == 0) return;
  ddpscope_layer_norm_backward<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
      cols, x, stats, gamma, dy, residual_grad, dx);
  checkLaunch("ddpscope_layer_norm_backward<<<>>>");
}

void layerNormGammaGrad(cudaStream_t s, std::int64_t rows, std::int64_t cols, const float* x,
                        const float* stats, const float* dy, float* dgamma) {
  ddpscope_layer_norm_gamma_grad<<<columnBlocks(cols), dim3(kColTile, kRowLanes), 0, s>>>(
      rows, cols, x, stats, dy, dgamma);
  checkLaunch("ddpscope_layer_norm_gamma_grad<<<>>>");
}

void attentionCore(cudaStream_t s, std::int64_t rows, std::int64_t width, const float* qkv,
                   float* out) {
  ddpscope_attention_core<<<blocksFor(rows * width), kThreads, 0, s>>>(rows, width, qkv, out);
  checkLaunch("ddpscope_attention_core<<<>>>");
}

void attentionCoreBackward(cudaStream_t s, std::int64_t rows, std::int64_t width, const float* qkv,
                           const float* dout, float* dqkv) {
  ddpscope_attention_core_backward<<<blocksFor(rows * width), kThreads, 0, s>>>(rows, width, qkv,
                                                                                dout, dqkv);
  checkLaunch("ddpscope_attention_core_backward<<<>>>");
}

void embedding(cudaStream_t s, std::int64_t rows, std::int64_t width, const float* tokens,
               const float* table, float* out) {
  ddpscope_embedding<<<blocksFor(rows * width), kThreads, 0, s>>>(rows, width, tokens, table, out);
  checkLaunch("ddpscope_embedding<<<>>>");
}

void embeddingBackward(cudaStream_t s, std::int64_t rows, std::int64_t width,
                       std::int64_t table_rows, const float* tokens, const float* dout,
                       float* dtable) {
  DDPSCOPE_CUDA_CHECK(
      cudaMemsetAsync(dtable, 0, static_cast<std::size_t>(table_rows * width) * sizeof(float), s));
  ddpscope_embedding_backward<<<blocksFor(rows * width), kThreads, 0, s>>>(rows, width, table_rows,
                                                                           tokens, dout, dtable);
  checkLaunch("ddpscope_embedding_backward<<<>>>");
}

void mseLoss(cudaStream_t s, std::int64_t rows, std::int64_t n, const float* pred,
             const float* target, float* dpred, float* loss) {
  DDPSCOPE_CUDA_CHECK(cudaMemsetAsync(loss, 0, sizeof(float), s));
  ddpscope_mse_loss<<<reductionBlocks(n), kThreads, 0, s>>>(n, 1.0f / static_cast<float>(rows),
                                                            1.0 / (2.0 * static_cast<double>(rows)),
                                                            pred, target, dpred, loss);
  checkLaunch("ddpscope_mse_loss<<<>>>");
}

void packBucket(cudaStream_t s, const CopySpan* table, int spans, std::int64_t total) {
  if (total == 0) return;
  ddpscope_pack_bucket<<<blocksFor(total), kThreads, 0, s>>>(table, spans, total);
  checkLaunch("ddpscope_pack_bucket<<<>>>");
}

void unpackBucket(cudaStream_t s, const CopySpan* table, int spans, std::int64_t total) {
  if (total == 0) return;
  ddpscope_unpack_bucket<<<blocksFor(total), kThreads, 0, s>>>(table, spans, total);
  checkLaunch("ddpscope_unpack_bucket<<<>>>");
}

void sgdUpdate(cudaStream_t s, const UpdateSpan* table, int spans, std::int64_t total, float lr,
               float grad_scale) {
  if (total == 0) return;
  ddpscope_sgd_update<<<blocksFor(total), kThreads, 0, s>>>(table, spans, total, lr, grad_scale);
  checkLaunch("ddpscope_sgd_update<<<>>>");
}

}  // namespace ddpscope::agent::cuda::kernels
