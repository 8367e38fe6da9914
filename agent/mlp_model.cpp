// `mlp`: L linear layers of width H with ReLU between them, regressing a fixed nonlinear function
// of the input: target_j = 0.8 tanh(x_j - 0.5 x_{j+1}).
#include <cmath>
#include <stdexcept>

#include "agent/model_common.h"

namespace ddpscope::agent {
namespace {

using detail::slice;
using detail::whole;

class MlpModel final : public Model {
 public:
  explicit MlpModel(const ModelConfig& c) : c_(c) {
    for (std::int32_t l = 0; l < c.layers; ++l) {
      const std::string p = "layers." + std::to_string(l);
      params_.push_back({p + ".weight", std::int64_t{c.hidden} * c.hidden, DType::F32});
      params_.push_back({p + ".bias", c.hidden, DType::F32});
    }
  }

  std::vector<float> initialValue(std::int32_t i) const override {
    const auto& info = params_[static_cast<std::size_t>(i)];
    if (i % 2 == 1) return std::vector<float>(static_cast<std::size_t>(info.elements), 0.0f);
    return detail::randomValues(c_.seed, info.name, info.elements,
                                1.0f / std::sqrt(static_cast<float>(c_.hidden)));
  }

  void setUp(Device& dev) override {
    const std::int64_t n = std::int64_t{c_.batch} * c_.hidden;
    inputs_ = dev.allocate(kDataBatches * n, DType::F32, "inputs");
    targets_ = dev.allocate(kDataBatches * n, DType::F32, "targets");
    for (std::int32_t l = 0; l < c_.layers; ++l) {
      pre_.push_back(whole(dev.allocate(n, DType::F32, "pre"), n));
      post_.push_back(whole(dev.allocate(n, DType::F32, "post"), n));
    }
    grad_a_ = whole(dev.allocate(n, DType::F32, "grad_a"), n);
    grad_b_ = whole(dev.allocate(n, DType::F32, "grad_b"), n);
    loss_ = whole(dev.allocate(1, DType::F32, "loss"), 1);
    if (dev.computesValues()) uploadData(dev, n);
  }

  void forward(Device& dev, const ParamViews& p, std::int32_t step) override {
    const std::int64_t n = std::int64_t{c_.batch} * c_.hidden;
    input_ = View{inputs_, (step % kDataBatches) * n, n};
    const View target{targets_, (step % kDataBatches) * n, n};
    View x = input_;
    for (std::int32_t l = 0; l < c_.layers; ++l) {
      const bool last = l + 1 == c_.layers;
      const auto w = static_cast<std::size_t>(2 * l);
      const View out = last ? pre_[l] : post_[l];
      detail::linearForward(dev, x, p.value[w], p.value[w + 1], pre_[l], out, {}, c_.batch,
                            c_.hidden, c_.hidden, last ? Activation::None : Activation::Relu);
      x = out;
    }
    dev.mseLoss(dev.computeStream(), x, target, grad_a_, loss_, c_.batch);
  }

  void backward(Device& dev, const ParamViews& p, const GradientWritten& written) override {
    View dy = grad_a_, other = grad_b_;
    for (std::int32_t l = c_.layers - 1; l >= 0; --l) {
      if (l + 1 < c_.layers)
        dev.activationBackward(dev.computeStream(), dy, pre_[l], dy, Activation::Relu);
      const View x = l == 0 ? input_ : post_[l - 1];
      detail::linearBackward(dev, p, 2 * l, x, dy, l == 0 ? View{} : other, c_.batch, c_.hidden,
                             c_.hidden, written);
      std::swap(dy, other);
    }
  }

  View lossView() const override { return loss_; }

 private:
  void uploadData(Device& dev, std::int64_t n) {
    std::vector<float> x(static_cast<std::size_t>(kDataBatches * n)), t(x.size());
    const std::int64_t h = c_.hidden;
    for (std::int32_t k = 0; k < kDataBatches; ++k) {
      for (std::int64_t i = 0; i < c_.batch; ++i) {
        // The global row: the same sample whatever the world size (see Trainer).
        const auto g = static_cast<std::uint64_t>(
            (std::int64_t{k} * dev.worldSize() + dev.rank()) * c_.batch + i);
        float* xr = x.data() + (k * c_.batch + i) * h;
        for (std::int64_t j = 0; j < h; ++j)
          xr[j] = syntheticValue(c_.seed, g, static_cast<std::uint64_t>(j));
        for (std::int64_t j = 0; j < h; ++j)
          t[static_cast<std::size_t>((k * c_.batch + i) * h + j)] =
              0.8f * std::tanh(xr[j] - 0.5f * xr[(j + 1) % h]);
      }
    }
    dev.upload(whole(inputs_, x.size()), x);
    dev.upload(whole(targets_, t.size()), t);
  }

  ModelConfig c_;
  BufferId inputs_ = -1, targets_ = -1;
  std::vector<View> pre_, post_;
  View grad_a_, grad_b_, loss_, input_;
};

}  // namespace

std::unique_ptr<Model> makeMlpModel(const ModelConfig& c) {
  return std::make_unique<MlpModel>(c);
}

}  // namespace ddpscope::agent
