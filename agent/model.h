#pragma once
// The models the agent trains: `mlp` (L layers of width H) and `transformer` (GPT-style blocks:
// layer norms, qkv, attention projection, two MLP matrices, biases, plus a token embedding and a
// regression head). Both launch real forward and backward kernels on a Device and learn a fixed
// synthetic regression task, so the loss goes down.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "agent/bucket_planner.h"
#include "agent/device.h"

namespace ddpscope::agent {

struct ModelConfig {
  std::string kind = "transformer";  // "mlp" | "transformer"
  std::int32_t layers = 12;
  std::int32_t hidden = 768;
  std::int32_t batch = 4096;   // rows per rank per step (samples for mlp, tokens for transformer)
  std::int32_t vocab = 50304;  // transformer only
  std::uint64_t seed = 1;
};

// Where the trainer keeps each parameter (registration order) and its gradient.
struct ParamViews {
  std::vector<View> value;
  std::vector<View> grad;
  std::vector<Tags> grad_tags;  // bucket of each gradient, for the kernels that write it
};

// Called by backward right after launching the last kernel that writes a parameter's gradient.
using GradientWritten = std::function<void(std::int32_t param)>;

class Model {
 public:
  virtual ~Model() = default;
  // Parameters in registration order, e.g. "blocks.3.mlp.fc1.weight".
  const std::vector<ParamInfo>& parameters() const { return params_; }
  // Deterministic initial values of parameter i.
  virtual std::vector<float> initialValue(std::int32_t i) const = 0;
  // Allocates activations and the synthetic data set of this rank; uploads the data when the
  // device computes values.
  virtual void setUp(Device& dev) = 0;
  // Launches forward and the loss on the compute stream.
  virtual void forward(Device& dev, const ParamViews& p, std::int32_t step) = 0;
  virtual void backward(Device& dev, const ParamViews& p, const GradientWritten& written) = 0;
  virtual View lossView() const = 0;  // one float: the loss of the last forward

 protected:
  std::vector<ParamInfo> params_;
};

// Throws std::invalid_argument for an unknown kind or sizes out of range.
std::unique_ptr<Model> makeModel(const ModelConfig& config);

// Number of distinct batches in the synthetic data set; step s uses batch s % kDataBatches.
inline constexpr std::int32_t kDataBatches = 4;
// A deterministic value in [-1, 1) for (seed, a, b): the synthetic data.
float syntheticValue(std::uint64_t seed, std::uint64_t a, std::uint64_t b);

}  // namespace ddpscope::agent
