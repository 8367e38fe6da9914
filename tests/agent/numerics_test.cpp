// --sim-math: the training loop's arithmetic. Identical parameters on every rank, averaged
// gradients equal the gradient of the concatenated batch, fusion does not change the numbers,
// backward matches finite differences, and the loss goes down.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "agent/model.h"
#include "agent/sim/sim_device.h"
#include "agent/trainer.h"

namespace ddpscope::agent {
namespace {

ModelConfig smallMlp(std::int32_t batch) {
  return {"mlp", 3, 24, batch, 0, 7};
}
ModelConfig smallTransformer(std::int32_t batch) {
  return {"transformer", 2, 16, batch, 40, 7};
}

TrainerOptions trainerOptions(double bucket_kib, Fusion fusion) {
  TrainerOptions t;
  t.bucket_cap_bytes = static_cast<std::int64_t>(bucket_kib * 1024);
  t.first_bucket_cap_bytes = t.bucket_cap_bytes;
  t.fusion = fusion;
  t.lr = 0.05f;
  return t;
}

// N ranks on one simulated cluster, with the real arithmetic.
struct MathRun {
  MathRun(const ModelConfig& model, std::int32_t world, const TrainerOptions& t) {
    sim::SimOptions o;
    o.world_size = world;
    o.math = true;
    cluster = std::make_unique<sim::SimCluster>(o);
    for (std::int32_t r = 0; r < world; ++r) {
      models.push_back(makeModel(model));
      trainers.push_back(std::make_unique<Trainer>(cluster->device(r), *models.back(), t));
      trainers.back()->setUp();
    }
  }
  float step(std::int32_t s) {
    for (auto& t : trainers)
      t->launchStep(s);
    float loss = 0;
    for (auto& t : trainers)
      loss = t->completeStep().loss.value();
    return loss;
  }
  std::vector<std::vector<float>> parameters(std::int32_t rank) {
    std::vector<std::vector<float>> out;
    auto& t = *trainers[static_cast<std::size_t>(rank)];
    for (std::size_t i = 0; i < t.parameters().size(); ++i)
      out.push_back(t.parameterValues(static_cast<std::int32_t>(i)));
    return out;
  }

  std::unique_ptr<sim::SimCluster> cluster;
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::unique_ptr<Trainer>> trainers;
};

void expectNear(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b,
                float tol) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size());
    for (std::size_t j = 0; j < a[i].size(); ++j)
      ASSERT_NEAR(a[i][j], b[i][j], tol * (1 + std::fabs(b[i][j])))
          << "tensor " << i << " [" << j << "]";
  }
}

class BothModels : public ::testing::TestWithParam<bool> {
 protected:
  ModelConfig model(std::int32_t batch) const {
    return GetParam() ? smallTransformer(batch) : smallMlp(batch);
  }
};

TEST_P(BothModels, AllRanksHoldIdenticalParametersAfterEveryStep) {
  MathRun run(model(8), 4, trainerOptions(2, Fusion::View));
  for (std::int32_t s = 0; s < 3; ++s) {
    run.step(s);
    const auto p0 = run.parameters(0);
    for (std::int32_t r = 1; r < 4; ++r)
      EXPECT_EQ(run.parameters(r), p0) << "rank " << r << " after step " << s;
  }
}

TEST_P(BothModels, AveragedGradientIsTheGradientOfTheConcatenatedBatch) {
  MathRun four(model(8), 4, trainerOptions(2, Fusion::View));
  MathRun one(model(32), 1, trainerOptions(2, Fusion::View));
  four.step(0);
  one.step(0);
  auto& t4 = *four.trainers[2];
  auto& t1 = *one.trainers[0];
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(t1.parameters().size()); ++i) {
    const auto g4 = t4.averagedGradient(i), g1 = t1.averagedGradient(i);
    ASSERT_EQ(g4.size(), g1.size());
    for (std::size_t j = 0; j < g1.size(); ++j)
      ASSERT_NEAR(g4[j], g1[j], 1e-5f + 1e-4f * std::fabs(g1[j])) << t1.parameters()[i].name;
  }
  expectNear(four.parameters(0), one.parameters(0), 1e-5f);
}

TEST_P(BothModels, FusionModeAndBucketSizeDoNotChangeTheNumbers) {
  MathRun view(model(8), 2, trainerOptions(2, Fusion::View));
  MathRun copy(model(8), 2, trainerOptions(2, Fusion::Copy));
  MathRun per_tensor(model(8), 2, trainerOptions(0, Fusion::Copy));
  MathRun one_bucket(model(8), 2, trainerOptions(1 << 20, Fusion::View));
  for (std::int32_t s = 0; s < 3; ++s) {
    view.step(s);
    copy.step(s);
    per_tensor.step(s);
    one_bucket.step(s);
  }
  const auto reference = view.parameters(1);
  expectNear(copy.parameters(1), reference, 1e-6f);
  expectNear(per_tensor.parameters(1), reference, 1e-6f);
  expectNear(one_bucket.parameters(1), reference, 1e-6f);
}

TEST_P(BothModels, LossDecreases) {
  MathRun run(model(32), 2, trainerOptions(4, Fusion::View));
  std::vector<float> loss;
  for (std::int32_t s = 0; s < 40; ++s)
    loss.push_back(run.step(s));
  const float first = std::accumulate(loss.begin(), loss.begin() + 4, 0.0f);
  const float last = std::accumulate(loss.end() - 4, loss.end(), 0.0f);
  EXPECT_LT(last, 0.8f * first) << "first " << first / 4 << " last " << last / 4;
}

// Backward against central differences of the loss, on one rank without an optimizer step.
TEST_P(BothModels, BackwardMatchesFiniteDifferences) {
  sim::SimOptions o;
  o.math = true;
  sim::SimCluster cluster(o);
  auto& dev = cluster.device(0);
  auto m = makeModel(model(6));
  ParamViews p;
  for (std::size_t i = 0; i < m->parameters().size(); ++i) {
    const auto n = m->parameters()[i].elements;
    p.value.push_back({dev.allocate(n, DType::F32, "p"), 0, n});
    p.grad.push_back({dev.allocate(n, DType::F32, "g"), 0, n});
    p.grad_tags.push_back({});
    dev.upload(p.value.back(), m->initialValue(static_cast<std::int32_t>(i)));
  }
  m->setUp(dev);
  const auto loss = [&] {
    m->forward(dev, p, 0);
    float l = 0;
    dev.download(m->lossView(), std::span<float>(&l, 1));
    return static_cast<double>(l);
  };
  loss();
  m->backward(dev, p, [](std::int32_t) {});
  for (std::size_t i = 0; i < m->parameters().size(); ++i) {
    std::vector<float> grad(static_cast<std::size_t>(p.grad[i].count));
    dev.download(p.grad[i], grad);
    auto values = m->initialValue(static_cast<std::int32_t>(i));
    for (std::size_t j : {std::size_t{0}, values.size() / 2, values.size() - 1}) {
      const float eps = 1e-2f, saved = values[j];
      values[j] = saved + eps;
      dev.upload(p.value[i], values);
      const double up = loss();
      values[j] = saved - eps;
      dev.upload(p.value[i], values);
      const double down = loss();
      values[j] = saved;
      dev.upload(p.value[i], values);
      const double numeric = (up - down) / (2 * eps);
      EXPECT_NEAR(grad[j], numeric, 2e-3 + 0.03 * std::fabs(numeric))
          << m->parameters()[i].name << "[" << j << "]";
    }
  }
}

TEST_P(BothModels, RebuiltBucketsFollowTheReadyOrderAndKeepTheNumbers) {
  auto options = trainerOptions(1, Fusion::View);
  MathRun plain(model(8), 2, options);
  options.rebuild_buckets = true;
  MathRun rebuilt(model(8), 2, options);
  const auto before = rebuilt.trainers[0]->plan();
  for (std::int32_t s = 0; s < 3; ++s) {
    plain.step(s);
    rebuilt.step(s);
  }
  expectNear(rebuilt.parameters(0), plain.parameters(0), 1e-6f);
  // Backward writes each weight gradient before its bias gradient: the rebuilt plan's first
  // bucket starts with the last layer's weight, the initial plan's with its bias.
  const auto& params = rebuilt.trainers[0]->parameters();
  const auto& after = rebuilt.trainers[0]->plan();
  const auto first_name = [&](const BucketPlan& p) {
    return params[static_cast<std::size_t>(p.buckets[0].slots[0].param)].name;
  };
  EXPECT_TRUE(first_name(before).ends_with(".bias")) << first_name(before);
  EXPECT_TRUE(first_name(after).ends_with(".weight")) << first_name(after);
}

INSTANTIATE_TEST_SUITE_P(Models, BothModels, ::testing::Values(false, true),
                         [](const auto& param_info) {
                           return param_info.param ? "transformer" : "mlp";
                         });

}  // namespace
}  // namespace ddpscope::agent
