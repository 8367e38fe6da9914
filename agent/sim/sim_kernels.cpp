// The simulated device's kernel launches: a name as the real kernel has, a duration from the cost
// model, and (with --sim-math) the arithmetic, run when the kernel runs in virtual time.
#include <algorithm>
#include <stdexcept>
#include <string>

#include "agent/sim/cpu_kernels.h"
#include "agent/sim/sim_device.h"

namespace ddpscope::agent::sim {

namespace {

std::string gemmKernelName(const GemmArgs& g) {
  const std::string op = std::string(g.trans_a ? "t" : "n") + (g.trans_b ? "t" : "n");
  const char* tile = g.m * g.n >= (1 << 20) ? "128x128x32" : "64x64x32";
  return "sm90_xmma_gemm_f32f32_tf32f32_f32_" + op + "_n_tilesize" + tile +
         "_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
}

std::string epilogueKernelName(const EpilogueArgs& e) {
  std::string f = e.act == Activation::Gelu   ? "GeluCUDAKernelImpl"
                  : e.act == Activation::Relu ? "ReluCUDAKernelImpl"
                                              : "CUDAFunctor_add<float>";
  if (e.residual.valid()) f += "_residual_add";
  return "void at::native::vectorized_elementwise_kernel<4, at::native::" + f + ">";
}

constexpr std::int64_t kF = 4;  // bytes per fp32 element

}  // namespace

void SimDevice::gemm(StreamId s, const GemmArgs& g, Tags tags) {
  check(g.a, "gemm A");
  check(g.b, "gemm B");
  check(g.c, "gemm C");
  if (g.a.count != g.m * g.k || g.b.count != g.k * g.n || g.c.count != g.m * g.n)
    throw std::invalid_argument("simulated device: gemm shapes do not match the views");
  launchKernel(s, gemmKernelName(g), cluster_.options().cost.gemmNs(g.m, g.n, g.k), tags,
               [=, this] {
                 cpu::gemm(g.trans_a, g.trans_b, g.m, g.n, g.k, g.alpha, data(g.a), data(g.b),
                           g.beta, data(g.c));
               });
}

void SimDevice::epilogue(StreamId s, const EpilogueArgs& e) {
  check(e.x, "epilogue");
  check(e.out, "epilogue");
  const std::int64_t n = e.rows * e.cols;
  const std::int64_t bytes = n * kF * (e.residual.valid() ? 4 : 3);
  launchKernel(s, epilogueKernelName(e), cluster_.options().cost.memoryNs(bytes), {}, [=, this] {
    cpu::epilogue(e.rows, e.cols, data(e.x), data(e.bias), data(e.residual), data(e.out), e.act);
  });
}

void SimDevice::activationBackward(StreamId s, View dy, View pre, View dx, Activation act) {
  check(dy, "activation backward");
  check(dx, "activation backward");
  const char* name = act == Activation::Gelu ? "void at::native::vectorized_elementwise_kernel<4, "
                                               "at::native::GeluBackwardCUDAKernelImpl>"
                                             : "void at::native::vectorized_elementwise_kernel<4, "
                                               "at::native::threshold_kernel_impl<float>>";
  launchKernel(s, name, cluster_.options().cost.memoryNs(3 * dy.count * kF), {}, [=, this] {
    cpu::activationBackward(dy.count, data(dy), data(pre), data(dx), act);
  });
}

void SimDevice::columnSum(StreamId s, View dy, View db, std::int64_t rows, std::int64_t cols,
                          Tags tags) {
  check(dy, "column sum");
  check(db, "column sum");
  launchKernel(s,
               "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
               "at::native::func_wrapper_t<float, at::native::sum_functor>>>",
               cluster_.options().cost.memoryNs(rows * cols * kF), tags,
               [=, this] { cpu::columnSum(rows, cols, data(dy), data(db)); });
}

void SimDevice::layerNorm(StreamId s, const LayerNormArgs& a) {
  check(a.x, "layer norm");
  check(a.out, "layer norm");
  check(a.stats, "layer norm");
  launchKernel(s,
               "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>",
               cluster_.options().cost.memoryNs(2 * a.rows * a.cols * kF), {}, [=, this] {
                 cpu::layerNorm(a.rows, a.cols, data(a.x), data(a.gamma), data(a.beta), data(a.out),
                                data(a.stats));
               });
}

void SimDevice::layerNormBackward(StreamId s, const LayerNormArgs& a, View dy, View residual_grad) {
  check(dy, "layer norm backward");
  check(a.out, "layer norm backward");
  launchKernel(s,
               "void at::native::(anonymous namespace)::layer_norm_grad_input_kernel<float, float>",
               cluster_.options().cost.memoryNs(4 * a.rows * a.cols * kF), {}, [=, this] {
                 cpu::layerNormBackward(a.rows, a.cols, data(a.x), data(a.stats), data(a.gamma),
                                        data(dy), data(residual_grad), data(a.out));
               });
}

void SimDevice::layerNormGammaGrad(StreamId s, const LayerNormArgs& a, View dy, View dgamma,
                                   Tags tags) {
  check(dy, "layer norm gamma gradient");
  check(dgamma, "layer norm gamma gradient");
  launchKernel(
      s, "void at::native::(anonymous namespace)::GammaBetaBackwardCUDAKernel<float, float>",
      cluster_.options().cost.memoryNs(2 * a.rows * a.cols * kF), tags, [=, this] {
        cpu::layerNormGammaGrad(a.rows, a.cols, data(a.x), data(a.stats), data(dy), data(dgamma));
      });
}

void SimDevice::attentionCore(StreamId s, View qkv, View out, std::int64_t rows,
                              std::int64_t width) {
  check(qkv, "attention core");
  check(out, "attention core");
  launchKernel(s, "ddpscope_attention_core_fwd_kernel",
               cluster_.options().cost.memoryNs(4 * rows * width * kF), {},
               [=, this] { cpu::attentionCore(rows, width, data(qkv), data(out)); });
}

void SimDevice::attentionCoreBackward(StreamId s, View qkv, View dout, View dqkv, std::int64_t rows,
                                      std::int64_t width) {
  check(dqkv, "attention core backward");
  launchKernel(s, "ddpscope_attention_core_bwd_kernel",
               cluster_.options().cost.memoryNs(7 * rows * width * kF), {}, [=, this] {
                 cpu::attentionCoreBackward(rows, width, data(qkv), data(dout), data(dqkv));
               });
}

void SimDevice::embedding(StreamId s, View tokens, View table, View out, std::int64_t width) {
  check(tokens, "embedding");
  check(out, "embedding");
  launchKernel(s,
               "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, "
               "unsigned int, 2, 2, -2, true>",
               cluster_.options().cost.memoryNs(2 * out.count * kF), {}, [=, this] {
                 cpu::embedding(tokens.count, width, data(tokens), data(table), data(out));
               });
}

void SimDevice::embeddingBackward(StreamId s, View tokens, View dout, View dtable,
                                  std::int64_t width, Tags tags) {
  check(dtable, "embedding backward");
  // Zeroing the table gradient dominates: it is written whole.
  const std::int64_t bytes = (dtable.count + 2 * dout.count) * kF;
  launchKernel(s,
               "void at::native::(anonymous namespace)::embedding_backward_feature_kernel<float, "
               "float, long>",
               cluster_.options().cost.memoryNs(bytes), tags, [=, this] {
                 cpu::embeddingBackward(tokens.count, width, dtable.count / width, data(tokens),
                                        data(dout), data(dtable));
               });
}

void SimDevice::mseLoss(StreamId s, View pred, View target, View dpred, View loss,
                        std::int64_t rows) {
  check(pred, "mse loss");
  check(target, "mse loss");
  check(dpred, "mse loss");
  check(loss, "mse loss");
  launchKernel(s, "ddpscope_mse_loss_fwd_bwd_kernel",
               cluster_.options().cost.memoryNs(3 * pred.count * kF), {}, [=, this] {
                 cpu::mseLoss(rows, pred.count, data(pred), data(target), data(dpred), data(loss));
               });
}

void SimDevice::packBucket(StreamId s, std::span<const CopyPair> copies, Tags tags) {
  std::int64_t n = 0;
  for (const auto& c : copies) {
    check(c.src, "pack");
    check(c.dst, "pack");
    n += c.src.count;
  }
  std::vector<CopyPair> list(copies.begin(), copies.end());
  launchKernel(s, "ddpscope_pack_bucket_kernel", cluster_.options().cost.memoryNs(2 * n * kF), tags,
               [list = std::move(list), this] {
                 for (const auto& c : list)
                   std::copy(data(c.src), data(c.src) + c.src.count, data(c.dst));
               });
}

void SimDevice::unpackBucket(StreamId s, std::span<const CopyPair> copies, Tags tags) {
  std::int64_t n = 0;
  for (const auto& c : copies) {
    check(c.src, "unpack");
    check(c.dst, "unpack");
    n += c.src.count;
  }
  std::vector<CopyPair> list(copies.begin(), copies.end());
  launchKernel(s, "ddpscope_unpack_bucket_kernel", cluster_.options().cost.memoryNs(2 * n * kF),
               tags, [list = std::move(list), this] {
                 for (const auto& c : list)
                   std::copy(data(c.src), data(c.src) + c.src.count, data(c.dst));
               });
}

void SimDevice::sgdUpdate(StreamId s, std::span<const UpdatePair> params, float lr,
                          float grad_scale, Tags tags) {
  std::int64_t n = 0;
  for (const auto& p : params) {
    check(p.param, "sgd update");
    check(p.grad, "sgd update");
    n += p.param.count;
  }
  std::vector<UpdatePair> list(params.begin(), params.end());
  launchKernel(s, "ddpscope_sgd_update_kernel", cluster_.options().cost.memoryNs(3 * n * kF), tags,
               [list = std::move(list), lr, grad_scale, this] {
                 for (const auto& p : list) {
                   float* w = data(p.param);
                   const float* g = data(p.grad);
                   for (std::int64_t i = 0; i < p.param.count; ++i)
                     w[i] -= lr * grad_scale * g[i];
                 }
               });
}

void SimDevice::allreduceSum(StreamId s, View buffer, DType dtype, Tags tags) {
  check(buffer, "allreduce");
  if (halted()) return;
  const std::int64_t bytes = buffer.count * dtypeBytes(dtype);
  Op op;
  op.kind = OpKind::Collective;
  op.correlation = hostCall("cudaLaunchKernelExC", cluster_.options().cost.launch_us, true);
  op.name = trace_.names.intern(std::string("ncclDevKernel_AllReduce_Sum_") +
                                std::string(dtypeName(dtype)) + "_RING_LL");
  op.work_ns = cluster_.options().cost.allreduceNs(bytes, worldSize());
  op.bucket = tags.bucket;
  op.bytes = bytes;
  op.ref = collectives_launched_++;
  // What PyTorch's profiler writes on a collective's kernel: the group and the sequence number
  // let the analysis match it across ranks (correlation ids grow, so the list stays sorted).
  trace::CollectiveArgs args;
  args.correlation = op.correlation;
  args.name = "allreduce";
  args.group = "0";
  args.group_desc = "default_pg";
  args.seq = op.ref;
  args.in_nelems = args.out_nelems = buffer.count;
  args.group_size = worldSize();
  args.dtype = dtypeName(dtype);
  trace_.collective_args.push_back(std::move(args));
  auto& c = cluster_.collective(op.ref);
  if (c.count >= 0 && c.count != buffer.count)
    throw std::logic_error("simulated device: ranks launched allreduces of different sizes");
  c.count = buffer.count;
  c.views[static_cast<std::size_t>(rank_)] = buffer;
  enqueue(s, std::move(op));
}

}  // namespace ddpscope::agent::sim
