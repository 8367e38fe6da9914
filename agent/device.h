#pragma once
// The Device interface: everything the training loop asks of a GPU. Implemented by the simulated
// device (agent/sim/) and the CUDA device (agent/cuda/), so the loop is the same code for both.
//
// Semantics follow CUDA: work launched on a stream runs in launch order; an event recorded on a
// stream completes when the work launched before it completes; waitEvent makes a stream wait for
// an event without blocking the host; synchronize blocks the host until all streams are idle.
// Tensors are row-major; a View names `count` elements starting at element `offset` of a buffer.

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace ddpscope::agent {

enum class DType : std::uint8_t { F32, BF16, I32 };
std::string_view dtypeName(DType d);  // "f32", "bf16", "i32"
std::int64_t dtypeBytes(DType d);

using StreamId = std::int32_t;
using EventId = std::int32_t;
using BufferId = std::int32_t;

struct View {
  BufferId buffer = -1;
  std::int64_t offset = 0;  // elements
  std::int64_t count = 0;   // elements
  bool valid() const { return buffer >= 0; }
};

// Labels that travel with a launch into the trace (args.bucket, args.bytes).
struct Tags {
  std::int32_t bucket = -1;
  std::int64_t bytes = -1;
};

// C[m x n] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T (cuBLAS sgemm semantics,
// row-major). A is m x k after op, B is k x n after op.
struct GemmArgs {
  bool trans_a = false;
  bool trans_b = false;
  std::int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  float beta = 0.0f;
  View a, b, c;
};

enum class Activation : std::uint8_t { None, Relu, Gelu };

// out = act(x + bias) + residual, and x := x + bias (the pre-activation, kept for backward).
// bias (cols) and residual (rows x cols) may be absent (invalid View).
struct EpilogueArgs {
  std::int64_t rows = 0, cols = 0;
  View x, bias, residual, out;
  Activation act = Activation::None;
};

// Layer normalisation over the last dimension, eps 1e-5; stats holds (mean, rstd) per row.
struct LayerNormArgs {
  std::int64_t rows = 0, cols = 0;
  View x, gamma, beta, out, stats;
};

// One tensor copied into or out of a fused bucket buffer.
struct CopyPair {
  View src, dst;
};

// One parameter updated from its (summed) gradient: p -= lr * grad_scale * g.
struct UpdatePair {
  View param, grad;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::int32_t rank() const = 0;
  virtual std::int32_t worldSize() const = 0;
  // False on the simulated device without --sim-math: kernels then only take time, and buffers
  // hold no values (uploads are ignored, downloads give zeros).
  virtual bool computesValues() const = 0;

  // Memory. Uploads are synchronous; download waits for all streams first.
  virtual BufferId allocate(std::int64_t count, DType dtype, std::string_view name) = 0;
  virtual void upload(View dst, std::span<const float> src) = 0;
  virtual void uploadIndices(View dst, std::span<const std::int32_t> src) = 0;
  virtual void download(View src, std::span<float> dst) = 0;

  // Streams and events.
  virtual StreamId computeStream() const = 0;
  virtual StreamId commStream() const = 0;
  virtual EventId createEvent() = 0;
  virtual void recordEvent(EventId event, StreamId stream) = 0;
  virtual void waitEvent(StreamId stream, EventId event) = 0;
  virtual void synchronize() = 0;
  // Host wall time in ns since the device was created (virtual time on the simulated device).
  virtual std::int64_t hostTimeNs() const = 0;

  // NVTX-style ranges. beginStep/endStep bracket a training step ("ProfilerStep#N") and tag
  // every launch in between with the step number.
  virtual void beginStep(std::int32_t step) = 0;
  virtual void endStep() = 0;
  virtual void pushRange(StreamId stream, std::string_view name) = 0;
  virtual void popRange(StreamId stream) = 0;
  // A zero-length marker on a stream at the point all earlier work on it has finished.
  virtual void mark(StreamId stream, std::string_view name, Tags tags) = 0;

  // Kernels.
  virtual void gemm(StreamId stream, const GemmArgs& args, Tags tags) = 0;
  virtual void epilogue(StreamId stream, const EpilogueArgs& args) = 0;
  // dx = dy * act'(pre), elementwise.
  virtual void activationBackward(StreamId stream, View dy, View pre, View dx, Activation act) = 0;
  // db[j] = sum_i dy[i, j] (a bias gradient).
  virtual void columnSum(StreamId stream, View dy, View db, std::int64_t rows, std::int64_t cols,
                         Tags tags) = 0;
  virtual void layerNorm(StreamId stream, const LayerNormArgs& args) = 0;
  // dx = residual_grad + d(layer norm)/dx^T dy, with args.out as dx and args.x the input.
  virtual void layerNormBackward(StreamId stream, const LayerNormArgs& args, View dy,
                                 View residual_grad) = 0;
  // dgamma[j] = sum_i dy[i, j] * xhat[i, j].
  virtual void layerNormGammaGrad(StreamId stream, const LayerNormArgs& args, View dy, View dgamma,
                                  Tags tags) = 0;
  // The token-local attention core of the transformer: a = v * sigmoid(q * k), qkv = [q k v].
  virtual void attentionCore(StreamId stream, View qkv, View out, std::int64_t rows,
                             std::int64_t width) = 0;
  virtual void attentionCoreBackward(StreamId stream, View qkv, View dout, View dqkv,
                                     std::int64_t rows, std::int64_t width) = 0;
  // out[i, :] = table[tokens[i], :]; backward: dtable = scatter-add of dout by token (zeroed
  // first).
  virtual void embedding(StreamId stream, View tokens, View table, View out,
                         std::int64_t width) = 0;
  virtual void embeddingBackward(StreamId stream, View tokens, View dout, View dtable,
                                 std::int64_t width, Tags tags) = 0;
  // loss[0] = sum (pred - target)^2 / (2 rows); dpred = (pred - target) / rows.
  virtual void mseLoss(StreamId stream, View pred, View target, View dpred, View loss,
                       std::int64_t rows) = 0;
  // Copies tensors into a fused bucket buffer (pack) or back out of it (unpack), one kernel.
  virtual void packBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) = 0;
  virtual void unpackBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) = 0;
  // SGD over several tensors in one kernel (multi-tensor apply).
  virtual void sgdUpdate(StreamId stream, std::span<const UpdatePair> params, float lr,
                         float grad_scale, Tags tags) = 0;

  // Collectives: sum over all ranks, in place. Every rank must launch the same sequence.
  virtual void allreduceSum(StreamId stream, View buffer, DType dtype, Tags tags) = 0;
};

}  // namespace ddpscope::agent
