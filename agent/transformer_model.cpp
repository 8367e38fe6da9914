// `transformer`: a token embedding, L GPT-style blocks and a regression head. Each block has the
// parameter shapes of GPT-2's: ln1, attn.qkv (H x 3H), attn.proj (H x H), ln2, mlp.fc1 (H x 4H),
// mlp.fc2 (4H x H), with biases. The attention core is token-local (a = v * sigmoid(q * k)):
// the GEMMs, norms and parameter tensors are those of a transformer, sequence mixing is not
// modelled. The task: regress a fixed random vector per token id.
#include <cmath>
#include <stdexcept>

#include "agent/model_common.h"

namespace ddpscope::agent {
namespace {

using detail::whole;

// Parameter offsets within a block, in registration order.
enum BlockParam : std::int32_t {
  kLn1W,
  kLn1B,
  kQkvW,
  kQkvB,
  kProjW,
  kProjB,
  kLn2W,
  kLn2B,
  kFc1W,
  kFc1B,
  kFc2W,
  kFc2B,
  kPerBlock
};

struct BlockActivations {
  View h1, st1, qkv, a, x2, h2, st2, u, g;
};

class TransformerModel final : public Model {
 public:
  explicit TransformerModel(const ModelConfig& c) : c_(c), h_(c.hidden), t_(c.batch) {
    add("embed.weight", std::int64_t{c.vocab} * h_);
    const char* names[kPerBlock] = {"ln1.weight",    "ln1.bias",         "attn.qkv.weight",
                                    "attn.qkv.bias", "attn.proj.weight", "attn.proj.bias",
                                    "ln2.weight",    "ln2.bias",         "mlp.fc1.weight",
                                    "mlp.fc1.bias",  "mlp.fc2.weight",   "mlp.fc2.bias"};
    const std::int64_t sizes[kPerBlock] = {h_, h_, h_ * 3 * h_, 3 * h_, h_ * h_,     h_,
                                           h_, h_, h_ * 4 * h_, 4 * h_, 4 * h_ * h_, h_};
    for (std::int32_t l = 0; l < c.layers; ++l)
      for (std::int32_t k = 0; k < kPerBlock; ++k)
        add("blocks." + std::to_string(l) + "." + names[k], sizes[k]);
    add("ln_f.weight", h_);
    add("ln_f.bias", h_);
    add("head.weight", h_ * h_);
    add("head.bias", h_);
  }

  std::vector<float> initialValue(std::int32_t i) const override {
    const auto& info = params_[static_cast<std::size_t>(i)];
    const auto n = info.elements;
    const auto ends = [&](const char* s) { return info.name.ends_with(s); };
    if (ends("ln1.weight") || ends("ln2.weight") || ends("ln_f.weight"))
      return std::vector<float>(static_cast<std::size_t>(n), 1.0f);
    if (ends(".bias")) return std::vector<float>(static_cast<std::size_t>(n), 0.0f);
    if (i == 0) return detail::randomValues(c_.seed, info.name, n, 0.5f);
    const std::int64_t fan_in = ends("fc2.weight") ? 4 * h_ : h_;
    return detail::randomValues(c_.seed, info.name, n, 1.0f / std::sqrt(float(fan_in)));
  }

  void setUp(Device& dev) override {
    tokens_ = dev.allocate(kDataBatches * t_, DType::I32, "tokens");
    targets_ = dev.allocate(kDataBatches * t_ * h_, DType::F32, "targets");
    for (std::int32_t l = 0; l <= c_.layers; ++l)
      xs_.push_back(act(dev, h_));
    for (std::int32_t l = 0; l < c_.layers; ++l) {
      blocks_.push_back({act(dev, h_), act(dev, 2), act(dev, 3 * h_), act(dev, h_), act(dev, h_),
                         act(dev, h_), act(dev, 2), act(dev, 4 * h_), act(dev, 4 * h_)});
    }
    tmp_ = act(dev, h_);
    hf_ = act(dev, h_);
    stf_ = act(dev, 2);
    pred_ = act(dev, h_);
    r_ = act(dev, h_);
    r2_ = act(dev, h_);
    dh_ = act(dev, h_);
    da_ = act(dev, h_);
    dqkv_ = act(dev, 3 * h_);
    dg_ = act(dev, 4 * h_);
    loss_ = whole(dev.allocate(1, DType::F32, "loss"), 1);
    if (dev.computesValues()) uploadData(dev);
  }

  void forward(Device& dev, const ParamViews& p, std::int32_t step) override {
    const auto k = step % kDataBatches;
    tok_ = View{tokens_, k * t_, t_};
    dev.embedding(dev.computeStream(), tok_, p.value[0], xs_[0], h_);
    for (std::int32_t l = 0; l < c_.layers; ++l)
      blockForward(dev, p, l);
    const auto f = ln_f();
    dev.layerNorm(dev.computeStream(), {t_, h_, xs_.back(), p.value[f], p.value[f + 1], hf_, stf_});
    detail::linearForward(dev, hf_, p.value[f + 2], p.value[f + 3], pred_, pred_, {}, t_, h_, h_,
                          Activation::None);
    dev.mseLoss(dev.computeStream(), pred_, View{targets_, k * t_ * h_, t_ * h_}, r_, loss_, t_);
  }

  void backward(Device& dev, const ParamViews& p, const GradientWritten& written) override {
    const auto f = ln_f();
    detail::linearBackward(dev, p, static_cast<std::int32_t>(f + 2), hf_, r_, dh_, t_, h_, h_,
                           written);
    layerNormBackward(dev, p, f, xs_.back(), stf_, dh_, {}, r2_, written);
    View cur = r2_, other = r_;
    for (std::int32_t l = c_.layers - 1; l >= 0; --l)
      blockBackward(dev, p, l, cur, other, written);
    dev.embeddingBackward(dev.computeStream(), tok_, cur, p.grad[0], h_, p.grad_tags[0]);
    written(0);
  }

  View lossView() const override { return loss_; }

 private:
  void add(std::string name, std::int64_t elements) {
    params_.push_back({std::move(name), elements, DType::F32});
  }
  View act(Device& dev, std::int64_t width) {
    return whole(dev.allocate(t_ * width, DType::F32, "activation"), t_ * width);
  }
  std::size_t base(std::int32_t l) const { return 1 + static_cast<std::size_t>(l) * kPerBlock; }
  std::size_t ln_f() const { return base(c_.layers); }

  void blockForward(Device& dev, const ParamViews& p, std::int32_t l) {
    const auto s = dev.computeStream();
    const auto& a = blocks_[static_cast<std::size_t>(l)];
    const auto* w = p.value.data() + base(l);
    dev.layerNorm(s, {t_, h_, xs_[l], w[kLn1W], w[kLn1B], a.h1, a.st1});
    detail::linearForward(dev, a.h1, w[kQkvW], w[kQkvB], a.qkv, a.qkv, {}, t_, h_, 3 * h_,
                          Activation::None);
    dev.attentionCore(s, a.qkv, a.a, t_, h_);
    detail::linearForward(dev, a.a, w[kProjW], w[kProjB], tmp_, a.x2, xs_[l], t_, h_, h_,
                          Activation::None);
    dev.layerNorm(s, {t_, h_, a.x2, w[kLn2W], w[kLn2B], a.h2, a.st2});
    detail::linearForward(dev, a.h2, w[kFc1W], w[kFc1B], a.u, a.g, {}, t_, h_, 4 * h_,
                          Activation::Gelu);
    detail::linearForward(dev, a.g, w[kFc2W], w[kFc2B], tmp_, xs_[l + 1], a.x2, t_, 4 * h_, h_,
                          Activation::None);
  }

  // cur holds dL/d(block output) on entry and dL/d(block input) on return.
  void blockBackward(Device& dev, const ParamViews& p, std::int32_t l, View cur, View other,
                     const GradientWritten& w) {
    const auto s = dev.computeStream();
    const auto& a = blocks_[static_cast<std::size_t>(l)];
    const auto b = static_cast<std::int32_t>(base(l));
    detail::linearBackward(dev, p, b + kFc2W, a.g, cur, dg_, t_, 4 * h_, h_, w);
    dev.activationBackward(s, dg_, a.u, dg_, Activation::Gelu);
    detail::linearBackward(dev, p, b + kFc1W, a.h2, dg_, dh_, t_, h_, 4 * h_, w);
    layerNormBackward(dev, p, base(l) + kLn2W, a.x2, a.st2, dh_, cur, other, w);
    detail::linearBackward(dev, p, b + kProjW, a.a, other, da_, t_, h_, h_, w);
    dev.attentionCoreBackward(s, a.qkv, da_, dqkv_, t_, h_);
    detail::linearBackward(dev, p, b + kQkvW, a.h1, dqkv_, dh_, t_, h_, 3 * h_, w);
    layerNormBackward(dev, p, base(l) + kLn1W, xs_[l], a.st1, dh_, other, cur, w);
  }

  // dx = residual + LN'(dy); then the gamma and beta gradients.
  void layerNormBackward(Device& dev, const ParamViews& p, std::size_t gamma, View x, View stats,
                         View dy, View residual, View dx, const GradientWritten& written) {
    const auto s = dev.computeStream();
    const LayerNormArgs args{t_, h_, x, p.value[gamma], p.value[gamma + 1], dx, stats};
    dev.layerNormBackward(s, args, dy, residual);
    dev.layerNormGammaGrad(s, args, dy, p.grad[gamma], p.grad_tags[gamma]);
    written(static_cast<std::int32_t>(gamma));
    dev.columnSum(s, dy, p.grad[gamma + 1], t_, h_, p.grad_tags[gamma + 1]);
    written(static_cast<std::int32_t>(gamma + 1));
  }

  void uploadData(Device& dev) {
    std::vector<std::int32_t> tokens(static_cast<std::size_t>(kDataBatches * t_));
    std::vector<float> targets(static_cast<std::size_t>(kDataBatches * t_ * h_));
    for (std::int64_t k = 0; k < kDataBatches; ++k) {
      for (std::int64_t i = 0; i < t_; ++i) {
        const auto g = static_cast<std::uint64_t>((k * dev.worldSize() + dev.rank()) * t_ + i);
        const float u = 0.5f * (syntheticValue(c_.seed, g, 0) + 1.0f);
        const auto tok =
            std::min<std::int32_t>(c_.vocab - 1, static_cast<std::int32_t>(u * float(c_.vocab)));
        tokens[static_cast<std::size_t>(k * t_ + i)] = tok;
        for (std::int64_t j = 0; j < h_; ++j)
          targets[static_cast<std::size_t>((k * t_ + i) * h_ + j)] =
              0.5f * syntheticValue(c_.seed ^ 0x5EEDull, static_cast<std::uint64_t>(tok),
                                    static_cast<std::uint64_t>(j));
      }
    }
    dev.uploadIndices(whole(tokens_, tokens.size()), tokens);
    dev.upload(whole(targets_, targets.size()), targets);
  }

  ModelConfig c_;
  std::int64_t h_, t_;
  BufferId tokens_ = -1, targets_ = -1;
  std::vector<View> xs_;
  std::vector<BlockActivations> blocks_;
  View tmp_, hf_, stf_, pred_, r_, r2_, dh_, da_, dqkv_, dg_, loss_, tok_;
};

}  // namespace

std::unique_ptr<Model> makeTransformerModel(const ModelConfig& c) {
  return std::make_unique<TransformerModel>(c);
}

}  // namespace ddpscope::agent
