#include "agent/cuda/cuda_device.h"

#include <nvtx3/nvToolsExt.h>

#include <stdexcept>
#include <string>
#include <thread>

#include "agent/cuda/cuda_check.h"

namespace ddpscope::agent::cuda {

CudaDevice::CudaDevice(const CudaDeviceOptions& options) : options_(options) {
  DDPSCOPE_CUDA_CHECK(cudaSetDevice(options_.device));
  int least = 0, greatest = 0;
  DDPSCOPE_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest));
  DDPSCOPE_CUDA_CHECK(cudaStreamCreateWithPriority(&streams_[0], cudaStreamNonBlocking, least));
  DDPSCOPE_CUDA_CHECK(cudaStreamCreateWithPriority(&streams_[1], cudaStreamNonBlocking,
                                                   options_.high_priority_comm ? greatest : least));
  DDPSCOPE_CUBLAS_CHECK(cublasCreate(&cublas_));
}

CudaDevice::~CudaDevice() {
  // Teardown must not throw; errors here are past caring about (the run already reported).
  if (cublas_) cublasDestroy(cublas_);
  for (auto e : events_)
    cudaEventDestroy(e);
  for (auto b : buffers_)
    cudaFree(b);
  for (auto& [key, table] : tables_)
    cudaFree(table);
  for (auto s : streams_) {
    if (s) cudaStreamDestroy(s);
  }
}

cudaStream_t CudaDevice::cudaStream(StreamId id) const {
  if (id != 0 && id != 1)
    throw std::invalid_argument("CUDA device: unknown stream " + std::to_string(id));
  return streams_[id];
}

float* CudaDevice::ptr(View v, const char* what) const {
  if (v.buffer < 0 || static_cast<std::size_t>(v.buffer) >= buffers_.size() || v.offset < 0 ||
      v.count < 0 || v.offset + v.count > sizes_[static_cast<std::size_t>(v.buffer)]) {
    throw std::out_of_range(std::string("CUDA device: ") + what +
                            " reads or writes outside its buffer");
  }
  return buffers_[static_cast<std::size_t>(v.buffer)] + v.offset;
}

BufferId CudaDevice::allocate(std::int64_t count, DType dtype, std::string_view name) {
  // Every buffer holds fp32 elements (indices too, exact below 2^24), as on the simulated device.
  if (dtype == DType::BF16) {
    throw std::invalid_argument("CUDA device: bf16 buffers are not supported yet (" +
                                std::string(name) + ")");
  }
  if (count < 0) throw std::invalid_argument("CUDA device: negative allocation");
  float* p = nullptr;
  if (count > 0)
    DDPSCOPE_CUDA_CHECK(cudaMalloc(&p, static_cast<std::size_t>(count) * sizeof(float)));
  if (p) {
    // On the compute stream: both streams are non-blocking, so work on the legacy default
    // stream (a plain cudaMemset) would not be ordered before theirs.
    DDPSCOPE_CUDA_CHECK(
        cudaMemsetAsync(p, 0, static_cast<std::size_t>(count) * sizeof(float), streams_[0]));
    DDPSCOPE_CUDA_CHECK(cudaStreamSynchronize(streams_[0]));
  }
  buffers_.push_back(p);
  sizes_.push_back(count);
  return static_cast<BufferId>(buffers_.size() - 1);
}

void CudaDevice::upload(View dst, std::span<const float> src) {
  if (static_cast<std::int64_t>(src.size()) != dst.count)
    throw std::invalid_argument("CUDA device: upload size mismatch");
  if (src.empty()) return;
  copyToDevice(ptr(dst, "upload"), src.data(), src.size_bytes(), 0);
  DDPSCOPE_CUDA_CHECK(cudaStreamSynchronize(streams_[0]));  // both streams may read it next
}

void CudaDevice::copyToDevice(void* dst, const void* src, std::size_t bytes, StreamId stream) {
  DDPSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, cudaStream(stream)));
}

void CudaDevice::uploadIndices(View dst, std::span<const std::int32_t> src) {
  std::vector<float> as_float(src.begin(), src.end());
  upload(dst, as_float);
}

void CudaDevice::download(View src, std::span<float> dst) {
  if (static_cast<std::int64_t>(dst.size()) != src.count)
    throw std::invalid_argument("CUDA device: download size mismatch");
  synchronize();
  if (dst.empty()) return;
  DDPSCOPE_CUDA_CHECK(
      cudaMemcpy(dst.data(), ptr(src, "download"), dst.size_bytes(), cudaMemcpyDeviceToHost));
}

EventId CudaDevice::createEvent() {
  cudaEvent_t e = nullptr;
  DDPSCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
  events_.push_back(e);
  return static_cast<EventId>(events_.size() - 1);
}

void CudaDevice::recordEvent(EventId event, StreamId stream) {
  DDPSCOPE_CUDA_CHECK(
      cudaEventRecord(events_.at(static_cast<std::size_t>(event)), cudaStream(stream)));
}

void CudaDevice::waitEvent(StreamId stream, EventId event) {
  DDPSCOPE_CUDA_CHECK(
      cudaStreamWaitEvent(cudaStream(stream), events_.at(static_cast<std::size_t>(event)), 0));
}

void CudaDevice::synchronize() {
  for (const cudaStream_t s : streams_) {
    if (!options_.while_waiting) {
      DDPSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
      continue;
    }
    for (int polls = 0;; ++polls) {
      const cudaError_t q = cudaStreamQuery(s);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) throwCudaError("cudaStreamQuery(stream)", __FILE__, __LINE__, q);
      options_.while_waiting();
      // Spin first (a step's tail is usually short), then poll every 20 µs.
      if (polls < 1000) {
        std::this_thread::yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(20));
      }
    }
  }
}

std::int64_t CudaDevice::hostTimeNs() const {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                              created_)
      .count();
}

void CudaDevice::beginStep(std::int32_t step) {
  step_ = step;
  nvtxRangePushA(("ProfilerStep#" + std::to_string(step)).c_str());
}

void CudaDevice::endStep() {
  nvtxRangePop();
  step_ = -1;
}

void CudaDevice::pushRange(StreamId /*stream*/, std::string_view name) {
  nvtxRangePushA(std::string(name).c_str());
}

void CudaDevice::popRange(StreamId /*stream*/) {
  nvtxRangePop();
}

void CudaDevice::mark(StreamId /*stream*/, std::string_view name, Tags /*tags*/) {
  nvtxMarkA(std::string(name).c_str());
}

void CudaDevice::gemm(StreamId stream, const GemmArgs& a, Tags tags) {
  // Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T: swap the operands.
  // Shapes are checked as the simulated device checks them: a wrong view would otherwise be
  // silent corruption or an illegal address.
  if (a.a.count != a.m * a.k || a.b.count != a.k * a.n || a.c.count != a.m * a.n)
    throw std::invalid_argument("CUDA device: gemm operand sizes do not match m, n, k");
  const float* pa = ptr(a.a, "gemm A");
  const float* pb = ptr(a.b, "gemm B");
  float* pc = ptr(a.c, "gemm C");
  const int m = static_cast<int>(a.m), n = static_cast<int>(a.n), k = static_cast<int>(a.k);
  const int lda = a.trans_a ? m : k;
  const int ldb = a.trans_b ? k : n;
  launch(tags, [&] {
    DDPSCOPE_CUBLAS_CHECK(cublasSetStream(cublas_, cudaStream(stream)));
    DDPSCOPE_CUBLAS_CHECK(cublasSgemm(cublas_, a.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                      a.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &a.alpha, pb,
                                      ldb, pa, lda, &a.beta, pc, n));
  });
}

void CudaDevice::epilogue(StreamId stream, const EpilogueArgs& a) {
  float* x = ptr(a.x, "epilogue x");
  float* out = ptr(a.out, "epilogue out");
  const float* bias = optional(a.bias, "epilogue bias");
  const float* residual = optional(a.residual, "epilogue residual");
  launch({}, [&] {
    kernels::epilogue(cudaStream(stream), a.rows, a.cols, x, bias, residual, out,
                      static_cast<int>(a.act));
  });
}

void CudaDevice::activationBackward(StreamId stream, View dy, View pre, View dx, Activation act) {
  const float* pdy = ptr(dy, "activation dy");
  const float* ppre = ptr(pre, "activation pre");
  float* pdx = ptr(dx, "activation dx");
  launch({}, [&] {
    kernels::activationBackward(cudaStream(stream), dy.count, pdy, ppre, pdx,
                                static_cast<int>(act));
  });
}

void CudaDevice::columnSum(StreamId stream, View dy, View db, std::int64_t rows, std::int64_t cols,
                           Tags tags) {
  const float* pdy = ptr(dy, "columnSum dy");
  float* pdb = ptr(db, "columnSum db");
  launch(tags, [&] { kernels::columnSum(cudaStream(stream), rows, cols, pdy, pdb); });
}

void CudaDevice::layerNorm(StreamId stream, const LayerNormArgs& a) {
  const float* x = ptr(a.x, "layerNorm x");
  const float* g = ptr(a.gamma, "layerNorm gamma");
  const float* b = ptr(a.beta, "layerNorm beta");
  float* out = ptr(a.out, "layerNorm out");
  float* stats = ptr(a.stats, "layerNorm stats");
  launch({}, [&] { kernels::layerNorm(cudaStream(stream), a.rows, a.cols, x, g, b, out, stats); });
}

void CudaDevice::layerNormBackward(StreamId stream, const LayerNormArgs& a, View dy,
                                   View residual_grad) {
  const float* x = ptr(a.x, "layerNormBackward x");
  const float* stats = ptr(a.stats, "layerNormBackward stats");
  const float* g = ptr(a.gamma, "layerNormBackward gamma");
  const float* pdy = ptr(dy, "layerNormBackward dy");
  const float* rg = optional(residual_grad, "layerNormBackward residual");
  float* dx = ptr(a.out, "layerNormBackward dx");
  launch({}, [&] {
    kernels::layerNormBackward(cudaStream(stream), a.rows, a.cols, x, stats, g, pdy, rg, dx);
  });
}

void CudaDevice::layerNormGammaGrad(StreamId stream, const LayerNormArgs& a, View dy, View dgamma,
                                    Tags tags) {
  const float* x = ptr(a.x, "layerNormGammaGrad x");
  const float* stats = ptr(a.stats, "layerNormGammaGrad stats");
  const float* pdy = ptr(dy, "layerNormGammaGrad dy");
  float* dg = ptr(dgamma, "layerNormGammaGrad dgamma");
  launch(tags, [&] {
    kernels::layerNormGammaGrad(cudaStream(stream), a.rows, a.cols, x, stats, pdy, dg);
  });
}

void CudaDevice::attentionCore(StreamId stream, View qkv, View out, std::int64_t rows,
                               std::int64_t width) {
  const float* q = ptr(qkv, "attention qkv");
  float* o = ptr(out, "attention out");
  launch({}, [&] { kernels::attentionCore(cudaStream(stream), rows, width, q, o); });
}

void CudaDevice::attentionCoreBackward(StreamId stream, View qkv, View dout, View dqkv,
                                       std::int64_t rows, std::int64_t width) {
  const float* q = ptr(qkv, "attentionBackward qkv");
  const float* d = ptr(dout, "attentionBackward dout");
  float* dq = ptr(dqkv, "attentionBackward dqkv");
  launch({}, [&] { kernels::attentionCoreBackward(cudaStream(stream), rows, width, q, d, dq); });
}

void CudaDevice::embedding(StreamId stream, View tokens, View table, View out, std::int64_t width) {
  const float* t = ptr(tokens, "embedding tokens");
  const float* tab = ptr(table, "embedding table");
  float* o = ptr(out, "embedding out");
  launch({}, [&] { kernels::embedding(cudaStream(stream), tokens.count, width, t, tab, o); });
}

void CudaDevice::embeddingBackward(StreamId stream, View tokens, View dout, View dtable,
                                   std::int64_t width, Tags tags) {
  const float* t = ptr(tokens, "embeddingBackward tokens");
  const float* d = ptr(dout, "embeddingBackward dout");
  float* dt = ptr(dtable, "embeddingBackward dtable");
  launch(tags, [&] {
    kernels::embeddingBackward(cudaStream(stream), tokens.count, width,
                               width > 0 ? dtable.count / width : 0, t, d, dt);
  });
}

void CudaDevice::mseLoss(StreamId stream, View pred, View target, View dpred, View loss,
                         std::int64_t rows) {
  const float* p = ptr(pred, "mseLoss pred");
  const float* t = ptr(target, "mseLoss target");
  float* dp = ptr(dpred, "mseLoss dpred");
  float* l = ptr(loss, "mseLoss loss");
  launch({}, [&] { kernels::mseLoss(cudaStream(stream), rows, pred.count, p, t, dp, l); });
}

const kernels::CopySpan* CudaDevice::copyTable(StreamId stream, std::span<const CopyPair> copies,
                                               std::int64_t& total) {
  std::vector<kernels::CopySpan> spans;
  std::vector<std::int64_t> key;
  total = 0;
  for (const auto& c : copies) {
    if (c.src.count != c.dst.count)
      throw std::invalid_argument("CUDA device: pack/unpack size mismatch");
    spans.push_back({ptr(c.src, "pack src"), ptr(c.dst, "pack dst"), c.src.count, total});
    key.insert(key.end(), {c.src.buffer, c.src.offset, c.dst.buffer, c.dst.offset, c.src.count});
    total += c.src.count;
  }
  auto& table = tables_[key];
  if (!table) {
    DDPSCOPE_CUDA_CHECK(cudaMalloc(&table, spans.size() * sizeof(kernels::CopySpan)));
    copyToDevice(table, spans.data(), spans.size() * sizeof(kernels::CopySpan), stream);
  }
  return static_cast<const kernels::CopySpan*>(table);
}

const kernels::UpdateSpan* CudaDevice::updateTable(StreamId stream,
                                                   std::span<const UpdatePair> params,
                                                   std::int64_t& total) {
  std::vector<kernels::UpdateSpan> spans;
  std::vector<std::int64_t> key{-1};  // distinct from copy tables
  total = 0;
  for (const auto& p : params) {
    if (p.param.count != p.grad.count)
      throw std::invalid_argument("CUDA device: sgd size mismatch");
    spans.push_back({ptr(p.param, "sgd param"), ptr(p.grad, "sgd grad"), p.param.count, total});
    key.insert(key.end(),
               {p.param.buffer, p.param.offset, p.grad.buffer, p.grad.offset, p.param.count});
    total += p.param.count;
  }
  auto& table = tables_[key];
  if (!table) {
    DDPSCOPE_CUDA_CHECK(cudaMalloc(&table, spans.size() * sizeof(kernels::UpdateSpan)));
    copyToDevice(table, spans.data(), spans.size() * sizeof(kernels::UpdateSpan), stream);
  }
  return static_cast<const kernels::UpdateSpan*>(table);
}

void CudaDevice::packBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) {
  std::int64_t total = 0;
  const auto* table = copyTable(stream, copies, total);
  launch(tags, [&] {
    kernels::packBucket(cudaStream(stream), table, static_cast<int>(copies.size()), total);
  });
}

void CudaDevice::unpackBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) {
  std::int64_t total = 0;
  const auto* table = copyTable(stream, copies, total);
  launch(tags, [&] {
    kernels::unpackBucket(cudaStream(stream), table, static_cast<int>(copies.size()), total);
  });
}

void CudaDevice::sgdUpdate(StreamId stream, std::span<const UpdatePair> params, float lr,
                           float grad_scale, Tags tags) {
  std::int64_t total = 0;
  const auto* table = updateTable(stream, params, total);
  launch(tags, [&] {
    kernels::sgdUpdate(cudaStream(stream), table, static_cast<int>(params.size()), total, lr,
                       grad_scale);
  });
}

void CudaDevice::allreduceSum(StreamId stream, View buffer, DType dtype, Tags tags) {
  if (dtype != DType::F32)
    throw std::invalid_argument("CUDA device: allreduce supports f32 buckets");
  float* p = ptr(buffer, "allreduce");
  if (!options_.comm) throw std::logic_error("CUDA device: allreduce without an NCCL communicator");
  launch(tags, [&] {
    DDPSCOPE_NCCL_CHECK(ncclAllReduce(p, p, static_cast<std::size_t>(buffer.count), ncclFloat,
                                      ncclSum, options_.comm, cudaStream(stream)));
  });
}

}  // namespace ddpscope::agent::cuda
