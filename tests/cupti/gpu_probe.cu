// A data-parallel training step in miniature, for scripts/gpu-check: "backward" kernels fill
// gradient buckets on a compute stream, each bucket is allreduced with NCCL on a communication
// stream once its gradients are ready (event wait), the update waits for the allreduce (event
// wait), with a host-to-device copy, a memset and NVTX "ProfilerStep#N" ranges. Run it under
// CUDA_INJECTION64_PATH=libddpscope_cupti.so to get a trace with every record kind the
// tracer converts. Prints one JSON line: {"event":"done","rank":R,"median_step_us":X,...}.
//
//   gpu_probe [--steps N] [--buckets B] [--bucket-mb M] [--work W] [--id-file PATH]
// RANK / WORLD_SIZE from the environment (default 0 / 1); with WORLD_SIZE > 1, rank 0 writes
// the NCCL unique id to --id-file and the other ranks wait for it. With one rank NCCL launches
// no kernel for the in-place allreduce: communication kernels need WORLD_SIZE >= 2 (two ranks
// on one GPU work with a distinct NCCL_HOSTID per process).

#include <cuda_runtime.h>
#include <nccl.h>
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#define CUDA_CHECK(call)                                                                 \
  do {                                                                                   \
    const cudaError_t e_ = (call);                                                       \
    if (e_ != cudaSuccess) {                                                             \
      std::fprintf(stderr, "gpu_probe: %s failed: %s\n", #call, cudaGetErrorString(e_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)
#define NCCL_CHECK(call)                                                                 \
  do {                                                                                   \
    const ncclResult_t r_ = (call);                                                      \
    if (r_ != ncclSuccess) {                                                             \
      std::fprintf(stderr, "gpu_probe: %s failed: %s\n", #call, ncclGetErrorString(r_)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// Stands in for a layer's backward pass: `work` dependent FMAs per element.
__global__ void backward_layer(float* grad, const float* act, int n, int work) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float g = act[i % 4096];
  for (int k = 0; k < work; ++k)
    g = g * 0.999f + 0.001f;
  grad[i] = g;
}

__global__ void sgd_update(float* param, const float* grad, int n, float lr) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) param[i] -= lr * grad[i];
}

namespace {

int envInt(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atoi(v) : fallback;
}

ncclUniqueId exchangeId(int rank, const std::string& path) {
  ncclUniqueId id;
  if (rank == 0) {
    NCCL_CHECK(ncclGetUniqueId(&id));
    const std::string tmp = path + ".tmp";
    std::ofstream(tmp, std::ios::binary).write(reinterpret_cast<const char*>(&id), sizeof id);
    std::rename(tmp.c_str(), path.c_str());
    return id;
  }
  for (int i = 0; i < 600; ++i) {
    std::ifstream in(path, std::ios::binary);
    if (in.read(reinterpret_cast<char*>(&id), sizeof id)) return id;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::fprintf(stderr, "gpu_probe: no NCCL id in %s after 60 s\n", path.c_str());
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  int steps = 20, buckets = 4, work = 2000;
  double bucket_mb = 16;
  std::string id_file = "/tmp/ddpscope-gpu-probe.id";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--steps")
      steps = std::atoi(argv[i + 1]);
    else if (a == "--buckets")
      buckets = std::atoi(argv[i + 1]);
    else if (a == "--bucket-mb")
      bucket_mb = std::atof(argv[i + 1]);
    else if (a == "--work")
      work = std::atoi(argv[i + 1]);
    else if (a == "--id-file")
      id_file = argv[i + 1];
    else {
      std::fprintf(stderr, "gpu_probe: unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  const int rank = envInt("RANK", 0), world = envInt("WORLD_SIZE", 1);
  const int n = static_cast<int>(bucket_mb * (1 << 20) / sizeof(float));
  CUDA_CHECK(cudaSetDevice(0));

  ncclComm_t comm;
  if (world == 1) {
    int dev = 0;
    NCCL_CHECK(ncclCommInitAll(&comm, 1, &dev));
  } else {
    NCCL_CHECK(ncclCommInitRank(&comm, world, exchangeId(rank, id_file), rank));
  }
  int lo = 0, hi = 0;
  CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo, &hi));
  cudaStream_t compute, comms;
  CUDA_CHECK(cudaStreamCreateWithFlags(&compute, cudaStreamNonBlocking));
  CUDA_CHECK(cudaStreamCreateWithPriority(&comms, cudaStreamNonBlocking, hi));

  std::vector<float*> grads(buckets), params(buckets);
  std::vector<cudaEvent_t> ready(buckets), reduced(buckets);
  for (int b = 0; b < buckets; ++b) {
    CUDA_CHECK(cudaMalloc(&grads[b], n * sizeof(float)));
    CUDA_CHECK(cudaMalloc(&params[b], n * sizeof(float)));
    CUDA_CHECK(cudaMemset(params[b], 0, n * sizeof(float)));
    CUDA_CHECK(cudaEventCreateWithFlags(&ready[b], cudaEventDisableTiming));
    CUDA_CHECK(cudaEventCreateWithFlags(&reduced[b], cudaEventDisableTiming));
  }
  float* act = nullptr;
  float* host_act = nullptr;
  CUDA_CHECK(cudaMalloc(&act, 4096 * sizeof(float)));
  CUDA_CHECK(cudaMallocHost(&host_act, 4096 * sizeof(float)));
  for (int i = 0; i < 4096; ++i)
    host_act[i] = 1.0f + static_cast<float>(i % 7);

  const int threads = 256, blocks = (n + threads - 1) / threads;
  std::vector<double> step_us;
  for (int s = 0; s < steps; ++s) {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string step_name = "ProfilerStep#" + std::to_string(s);
    nvtxRangePushA(step_name.c_str());
    CUDA_CHECK(
        cudaMemcpyAsync(act, host_act, 4096 * sizeof(float), cudaMemcpyHostToDevice, compute));
    nvtxRangePushA("backward");
    for (int b = buckets - 1; b >= 0; --b) {  // last layer's gradients are ready first
      backward_layer<<<blocks, threads, 0, compute>>>(grads[b], act, n, work);
      CUDA_CHECK(cudaGetLastError());
      CUDA_CHECK(cudaEventRecord(ready[b], compute));
      CUDA_CHECK(cudaStreamWaitEvent(comms, ready[b], 0));
      NCCL_CHECK(ncclAllReduce(grads[b], grads[b], n, ncclFloat, ncclSum, comm, comms));
      CUDA_CHECK(cudaEventRecord(reduced[b], comms));
    }
    nvtxRangePop();
    for (int b = 0; b < buckets; ++b) {
      CUDA_CHECK(cudaStreamWaitEvent(compute, reduced[b], 0));
      sgd_update<<<blocks, threads, 0, compute>>>(params[b], grads[b], n, 0.01f);
      CUDA_CHECK(cudaGetLastError());
    }
    CUDA_CHECK(cudaMemsetAsync(grads[0], 0, n * sizeof(float), compute));
    CUDA_CHECK(cudaStreamSynchronize(compute));
    nvtxRangePop();
    step_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  // Step 0 pays for NCCL's and the kernels' first use: leave it out of the median.
  std::vector<double> timed(step_us.begin() + (steps > 1 ? 1 : 0), step_us.end());
  std::sort(timed.begin(), timed.end());
  const double median = timed.empty() ? 0 : timed[timed.size() / 2];
  std::printf(
      "{\"event\":\"done\",\"rank\":%d,\"world_size\":%d,\"steps\":%d,\"buckets\":%d,"
      "\"bucket_mb\":%g,\"median_step_us\":%.1f}\n",
      rank, world, steps, buckets, bucket_mb, median);
  std::fflush(stdout);  // the line must be out even if teardown below hangs
  NCCL_CHECK(ncclCommDestroy(comm));
  for (int b = 0; b < buckets; ++b) {
    cudaFree(grads[b]);
    cudaFree(params[b]);
    cudaEventDestroy(ready[b]);
    cudaEventDestroy(reduced[b]);
  }
  cudaFree(act);
  cudaFreeHost(host_act);
  return 0;
}
