#pragma once
// Building blocks shared by the models: a linear layer's forward/backward launches and helpers.

#include <cmath>

#include "agent/model.h"

namespace ddpscope::agent::detail {

inline View whole(BufferId b, std::int64_t n) {
  return View{b, 0, n};
}
inline View slice(View v, std::int64_t offset, std::int64_t count) {
  return View{v.buffer, v.offset + offset, count};
}

// y[rows x out] = x[rows x in] * W[in x out]; then y := y + b, out = act(y) + residual.
void linearForward(Device& dev, View x, View w, View b, View y, View out, View residual,
                   std::int64_t rows, std::int64_t in, std::int64_t outw, Activation act);

// Given dy (rows x out): dW = x^T dy, db = colsum(dy), and dx = dy W^T when dx is valid.
// Reports the weight and bias gradients as written.
void linearBackward(Device& dev, const ParamViews& p, std::int32_t w_index, View x, View dy,
                    View dx, std::int64_t rows, std::int64_t in, std::int64_t outw,
                    const GradientWritten& written);

// Normal-ish initial values (sum of uniforms) with the given scale, deterministic per name.
std::vector<float> randomValues(std::uint64_t seed, const std::string& name, std::int64_t n,
                                float scale);

}  // namespace ddpscope::agent::detail
