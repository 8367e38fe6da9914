#include "agent/model_common.h"

#include <stdexcept>

namespace ddpscope::agent {

float syntheticValue(std::uint64_t seed, std::uint64_t a, std::uint64_t b) {
  std::uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (a * 0xD1B54A32D192ED03ull) ^
                    (b * 0xAEF17502108EF2D9ull + 0x632BE59BD9B4E019ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(static_cast<double>(z >> 11) * 0x1.0p-52 - 1.0);
}

namespace detail {

void linearForward(Device& dev, View x, View w, View b, View y, View out, View residual,
                   std::int64_t rows, std::int64_t in, std::int64_t outw, Activation act) {
  const auto s = dev.computeStream();
  dev.gemm(s, {false, false, rows, outw, in, 1.0f, 0.0f, x, w, y}, {});
  dev.epilogue(s, {rows, outw, y, b, residual, out, act});
}

void linearBackward(Device& dev, const ParamViews& p, std::int32_t w_index, View x, View dy,
                    View dx, std::int64_t rows, std::int64_t in, std::int64_t outw,
                    const GradientWritten& written) {
  const auto s = dev.computeStream();
  const auto wi = static_cast<std::size_t>(w_index);
  dev.gemm(s, {true, false, in, outw, rows, 1.0f, 0.0f, x, dy, p.grad[wi]}, p.grad_tags[wi]);
  written(w_index);
  dev.columnSum(s, dy, p.grad[wi + 1], rows, outw, p.grad_tags[wi + 1]);
  written(w_index + 1);
  if (dx.valid()) dev.gemm(s, {false, true, rows, in, outw, 1.0f, 0.0f, dy, p.value[wi], dx}, {});
}

std::vector<float> randomValues(std::uint64_t seed, const std::string& name, std::int64_t n,
                                float scale) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a of the name
  for (char c : name)
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) {
    const auto u = static_cast<std::uint64_t>(i);
    // Sum of three uniforms in [-1, 1): variance 1, close enough to a normal for initialisation.
    v[static_cast<std::size_t>(i)] =
        scale * (syntheticValue(seed, h, 3 * u) + syntheticValue(seed, h, 3 * u + 1) +
                 syntheticValue(seed, h, 3 * u + 2));
  }
  return v;
}

}  // namespace detail
}  // namespace ddpscope::agent

namespace ddpscope::agent {

std::unique_ptr<Model> makeMlpModel(const ModelConfig& c);
std::unique_ptr<Model> makeTransformerModel(const ModelConfig& c);

std::unique_ptr<Model> makeModel(const ModelConfig& c) {
  if (c.layers < 1 || c.layers > 4096) throw std::invalid_argument("--layers must be in 1..4096");
  if (c.hidden < 1 || c.hidden > 65536) throw std::invalid_argument("--hidden must be in 1..65536");
  if (c.batch < 1) throw std::invalid_argument("--batch must be at least 1");
  if (c.kind == "mlp") return makeMlpModel(c);
  if (c.kind == "transformer") {
    if (c.vocab < 1 || c.vocab > (1 << 24))
      throw std::invalid_argument("--vocab must be in 1..16777216");
    return makeTransformerModel(c);
  }
  throw std::invalid_argument("unknown model '" + c.kind + "' (expected mlp or transformer)");
}

}  // namespace ddpscope::agent
