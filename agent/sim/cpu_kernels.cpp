#include "agent/sim/cpu_kernels.h"

#include <cmath>
#include <stdexcept>
#include <vector>

namespace ddpscope::agent::sim::cpu {

namespace {
constexpr float kLayerNormEps = 1e-5f;
constexpr float kGeluC = 0.7978845608028654f;  // sqrt(2 / pi)

float gelu(float x) {
  return 0.5f * x * (1.0f + std::tanh(kGeluC * (x + 0.044715f * x * x * x)));
}
float geluGrad(float x) {
  const float t = std::tanh(kGeluC * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * kGeluC * (1.0f + 3 * 0.044715f * x * x);
}
float sigmoid(float x) {
  return 1.0f / (1.0f + std::exp(-x));
}
}  // namespace

// Loop orders keep the innermost loop contiguous in memory for each transpose mode.
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, const float* b, float beta, float* c) {
  std::vector<float> acc(static_cast<std::size_t>(m * n), 0.0f);
  if (!trans_b) {
    for (std::int64_t p = 0; p < k; ++p) {
      for (std::int64_t i = 0; i < m; ++i) {
        const float av = trans_a ? a[p * m + i] : a[i * k + p];
        float* row = acc.data() + i * n;
        const float* brow = b + p * n;
        for (std::int64_t j = 0; j < n; ++j)
          row[j] += av * brow[j];
      }
    }
  } else {
    std::vector<float> arow(static_cast<std::size_t>(k));
    for (std::int64_t i = 0; i < m; ++i) {
      for (std::int64_t p = 0; p < k; ++p)
        arow[static_cast<std::size_t>(p)] = trans_a ? a[p * m + i] : a[i * k + p];
      for (std::int64_t j = 0; j < n; ++j) {
        const float* bcol = b + j * k;
        float dot = 0.0f;
        for (std::int64_t p = 0; p < k; ++p)
          dot += arow[static_cast<std::size_t>(p)] * bcol[p];
        acc[static_cast<std::size_t>(i * n + j)] = dot;
      }
    }
  }
  for (std::int64_t i = 0; i < m * n; ++i)
    c[i] = alpha * acc[static_cast<std::size_t>(i)] + (beta == 0.0f ? 0.0f : beta * c[i]);
}

void epilogue(std::int64_t rows, std::int64_t cols, float* x, const float* bias,
              const float* residual, float* out, Activation act) {
  for (std::int64_t i = 0; i < rows * cols; ++i) {
    float v = x[i] + (bias ? bias[i % cols] : 0.0f);
    x[i] = v;
    if (act == Activation::Relu) v = v > 0 ? v : 0.0f;
    if (act == Activation::Gelu) v = gelu(v);
    out[i] = v + (residual ? residual[i] : 0.0f);
  }
}

void activationBackward(std::int64_t n, const float* dy, const float* pre, float* dx,
                        Activation act) {
  for (std::int64_t i = 0; i < n; ++i) {
    const float g = act == Activation::Relu   ? (pre[i] > 0 ? 1.0f : 0.0f)
                    : act == Activation::Gelu ? geluGrad(pre[i])
                                              : 1.0f;
    dx[i] = dy[i] * g;
  }
}

void columnSum(std::int64_t rows, std::int64_t cols, const float* dy, float* db) {
  for (std::int64_t j = 0; j < cols; ++j)
    db[j] = 0.0f;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      db[j] += dy[i * cols + j];
}

void layerNorm(std::int64_t rows, std::int64_t cols, const float* x, const float* gamma,
               const float* beta, float* out, float* stats) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* xr = x + i * cols;
    double mean = 0, var = 0;
    for (std::int64_t j = 0; j < cols; ++j)
      mean += xr[j];
    mean /= static_cast<double>(cols);
    for (std::int64_t j = 0; j < cols; ++j)
      var += (xr[j] - mean) * (xr[j] - mean);
    var /= static_cast<double>(cols);
    const float rstd = 1.0f / std::sqrt(static_cast<float>(var) + kLayerNormEps);
    stats[2 * i] = static_cast<float>(mean);
    stats[2 * i + 1] = rstd;
    for (std::int64_t j = 0; j < cols; ++j)
      out[i * cols + j] = (xr[j] - static_cast<float>(mean)) * rstd * gamma[j] + beta[j];
  }
}

void layerNormBackward(std::int64_t rows, std::int64_t cols, const float* x, const float* stats,
                       const float* gamma, const float* dy, const float* residual_grad, float* dx) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float mean = stats[2 * i], rstd = stats[2 * i + 1];
    double sum_g = 0, sum_gx = 0;  // mean of dxhat and of dxhat * xhat
    for (std::int64_t j = 0; j < cols; ++j) {
      const float g = dy[i * cols + j] * gamma[j];
      sum_g += g;
      sum_gx += g * (x[i * cols + j] - mean) * rstd;
    }
    const auto mg = static_cast<float>(sum_g / static_cast<double>(cols));
    const auto mgx = static_cast<float>(sum_gx / static_cast<double>(cols));
    for (std::int64_t j = 0; j < cols; ++j) {
      const float xhat = (x[i * cols + j] - mean) * rstd;
      const float g = dy[i * cols + j] * gamma[j];
      dx[i * cols + j] =
          rstd * (g - mg - xhat * mgx) + (residual_grad ? residual_grad[i * cols + j] : 0.0f);
    }
  }
}

void layerNormGammaGrad(std::int64_t rows, std::int64_t cols, const float* x, const float* stats,
                        const float* dy, float* dgamma) {
  for (std::int64_t j = 0; j < cols; ++j)
    dgamma[j] = 0.0f;
  for (std::int64_t i = 0; i < rows; ++i)
    for (std::int64_t j = 0; j < cols; ++j)
      dgamma[j] += dy[i * cols + j] * (x[i * cols + j] - stats[2 * i]) * stats[2 * i + 1];
}

void attentionCore(std::int64_t rows, std::int64_t width, const float* qkv, float* out) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* q = qkv + i * 3 * width;
    for (std::int64_t j = 0; j < width; ++j)
      out[i * width + j] = q[2 * width + j] * sigmoid(q[j] * q[width + j]);
  }
}

void attentionCoreBackward(std::int64_t rows, std::int64_t width, const float* qkv,
                           const float* dout, float* dqkv) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const float* q = qkv + i * 3 * width;
    float* d = dqkv + i * 3 * width;
    for (std::int64_t j = 0; j < width; ++j) {
      const float s = sigmoid(q[j] * q[width + j]);
      const float da = dout[i * width + j];
      const float dz = da * q[2 * width + j] * s * (1.0f - s);
      d[j] = dz * q[width + j];
      d[width + j] = dz * q[j];
      d[2 * width + j] = da * s;
    }
  }
}

void embedding(std::int64_t rows, std::int64_t width, const float* tokens, const float* table,
               float* out) {
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto t = static_cast<std::int64_t>(tokens[i]);
    for (std::int64_t j = 0; j < width; ++j)
      out[i * width + j] = table[t * width + j];
  }
}

void embeddingBackward(std::int64_t rows, std::int64_t width, std::int64_t table_rows,
                       const float* tokens, const float* dout, float* dtable) {
  for (std::int64_t i = 0; i < table_rows * width; ++i)
    dtable[i] = 0.0f;
  for (std::int64_t i = 0; i < rows; ++i) {
    const auto t = static_cast<std::int64_t>(tokens[i]);
    if (t < 0 || t >= table_rows) throw std::out_of_range("embedding: token id out of range");
    for (std::int64_t j = 0; j < width; ++j)
      dtable[t * width + j] += dout[i * width + j];
  }
}

void mseLoss(std::int64_t rows, std::int64_t n, const float* pred, const float* target,
             float* dpred, float* loss) {
  double sum = 0;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (std::int64_t i = 0; i < n; ++i) {
    const float d = pred[i] - target[i];
    sum += static_cast<double>(d) * d;
    dpred[i] = d * inv_rows;
  }
  loss[0] = static_cast<float>(sum / (2.0 * static_cast<double>(rows)));
}

}  // namespace ddpscope::agent::sim::cpu
