#pragma once
// The CUDA device: the Device interface on one GPU with cuBLAS GEMMs, the kernels of kernels.cu,
// CUDA events for the two stream dependencies, NCCL allreduce on a (high-priority) communication
// stream and NVTX ranges. One process drives one GPU (one rank).

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

#include "agent/cuda/kernels.h"
#include "agent/cuda/launch_window.h"
#include "agent/device.h"

namespace ddpscope::agent::cuda {

struct CudaDeviceOptions {
  int device = 0;
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  ncclComm_t comm = nullptr;  // owned by the caller
  bool high_priority_comm = true;
  // When set, every launch records [clock() before, clock() after] with its step and tags, so the
  // trace's launches (runtime API records in that window) can be labelled (see launchWindows()).
  std::function<std::uint64_t()> launch_clock;
  // When set, synchronize() polls the streams instead of blocking and calls this between polls;
  // it throws to give up waiting (a watchdog: a dead peer's collective never completes).
  std::function<void()> while_waiting;
};

class CudaDevice final : public Device {
 public:
  explicit CudaDevice(const CudaDeviceOptions& options);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  std::int32_t rank() const override { return options_.rank; }
  std::int32_t worldSize() const override { return options_.world_size; }
  bool computesValues() const override { return true; }

  BufferId allocate(std::int64_t count, DType dtype, std::string_view name) override;
  void upload(View dst, std::span<const float> src) override;
  void uploadIndices(View dst, std::span<const std::int32_t> src) override;
  void download(View src, std::span<float> dst) override;

  StreamId computeStream() const override { return 0; }
  StreamId commStream() const override { return 1; }
  EventId createEvent() override;
  void recordEvent(EventId event, StreamId stream) override;
  void waitEvent(StreamId stream, EventId event) override;
  void synchronize() override;
  // Host-to-device copy ordered on `stream`: later work on that stream sees it (the streams do
  // not wait for the legacy default stream, where a plain cudaMemcpy would go). `src` may be
  // freed on return (pageable memory is staged before the call returns).
  void copyToDevice(void* dst, const void* src, std::size_t bytes, StreamId stream);
  std::int64_t hostTimeNs() const override;

  void beginStep(std::int32_t step) override;
  void endStep() override;
  void pushRange(StreamId stream, std::string_view name) override;
  void popRange(StreamId stream) override;
  void mark(StreamId stream, std::string_view name, Tags tags) override;

  void gemm(StreamId stream, const GemmArgs& args, Tags tags) override;
  void epilogue(StreamId stream, const EpilogueArgs& args) override;
  void activationBackward(StreamId stream, View dy, View pre, View dx, Activation act) override;
  void columnSum(StreamId stream, View dy, View db, std::int64_t rows, std::int64_t cols,
                 Tags tags) override;
  void layerNorm(StreamId stream, const LayerNormArgs& args) override;
  void layerNormBackward(StreamId stream, const LayerNormArgs& args, View dy,
                         View residual_grad) override;
  void layerNormGammaGrad(StreamId stream, const LayerNormArgs& args, View dy, View dgamma,
                          Tags tags) override;
  void attentionCore(StreamId stream, View qkv, View out, std::int64_t rows,
                     std::int64_t width) override;
  void attentionCoreBackward(StreamId stream, View qkv, View dout, View dqkv, std::int64_t rows,
                             std::int64_t width) override;
  void embedding(StreamId stream, View tokens, View table, View out, std::int64_t width) override;
  void embeddingBackward(StreamId stream, View tokens, View dout, View dtable, std::int64_t width,
                         Tags tags) override;
  void mseLoss(StreamId stream, View pred, View target, View dpred, View loss,
               std::int64_t rows) override;
  void packBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) override;
  void unpackBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) override;
  void sgdUpdate(StreamId stream, std::span<const UpdatePair> params, float lr, float grad_scale,
                 Tags tags) override;
  void allreduceSum(StreamId stream, View buffer, DType dtype, Tags tags) override;

  const std::vector<LaunchWindow>& launchWindows() const { return windows_; }
  cudaStream_t cudaStream(StreamId id) const;

 private:
  float* ptr(View v, const char* what) const;
  const float* optional(View v, const char* what) const {
    return v.valid() ? ptr(v, what) : nullptr;
  }
  // Runs `launch` and records its window (when a launch clock is set).
  template <typename F>
  void launch(Tags tags, F&& f) {
    const std::uint64_t begin = options_.launch_clock ? options_.launch_clock() : 0;
    f();
    if (options_.launch_clock) windows_.push_back({begin, options_.launch_clock(), step_, tags});
  }
  // Device tables of spans, made once per distinct list and copied on the stream that reads them.
  const kernels::CopySpan* copyTable(StreamId stream, std::span<const CopyPair> copies,
                                     std::int64_t& total);
  const kernels::UpdateSpan* updateTable(StreamId stream, std::span<const UpdatePair> params,
                                         std::int64_t& total);

  CudaDeviceOptions options_;
  cudaStream_t streams_[2] = {nullptr, nullptr};
  cublasHandle_t cublas_ = nullptr;
  std::vector<float*> buffers_;
  std::vector<std::int64_t> sizes_;
  std::vector<cudaEvent_t> events_;
  std::int32_t step_ = -1;
  std::vector<LaunchWindow> windows_;
  std::chrono::steady_clock::time_point created_ = std::chrono::steady_clock::now();
  // Span tables for multi-tensor kernels, uploaded once per distinct list (they repeat per step).
  std::map<std::vector<std::int64_t>, void*> tables_;
};

}  // namespace ddpscope::agent::cuda
