// A predicted configuration as a run (app/analysis/predicted_run.h): the normal analysis of its
// events gives back the prediction's figures, on a hand-made model with known answers, on a
// simulated run with bucket metadata and on the ResNet-50 reference trace; the band of a
// host-bound prediction and the base replay's error.
#include "app/analysis/predicted_run.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "agent/run_agent.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/whatif_summary.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;
using analysis::WhatIfConfig;
using analysis::WhatIfModel;

namespace {

// Two ranks; backward is four 100 µs kernels, each making one 1 MiB gradient ready; allreduce
// costs 10 µs + 20 µs/MiB; nothing after backward, no host limits.
WhatIfModel handMadeModel() {
  WhatIfModel m;
  m.usable = true;
  m.world_size = 2;
  m.per_tensor_known = true;
  analysis::CommCostFit f;
  f.alpha_us = 10;
  f.beta_us_per_mib = 20;
  f.ranks = 2;
  m.comm.push_back(f);
  m.steps.emplace_back();
  for (int r = 0; r < 2; ++r) {
    analysis::ReplayStep st;
    st.step = 3;
    st.rank = r;
    st.start_abs_us = 1000;
    for (int i = 0; i < 4; ++i) {
      analysis::ReplayItem it;
      it.start_us = 100.0 * i;
      it.base_us = 100;
      it.name = "sm80_xmma_gemm_" + std::to_string(i);
      st.items.push_back(it);
      analysis::ReplayTensor t;
      t.bytes = 1 << 20;
      t.ready_item = i;
      t.name = "layer" + std::to_string(3 - i) + ".weight";
      st.tensors.push_back(t);
    }
    st.backward_end_item = 3;
    st.recorded_bucket_tensors = {4};
    st.allreduce_name = "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    m.steps.back().push_back(st);
  }
  return m;
}

WhatIfConfig sized(double mb) {
  WhatIfConfig c;
  c.bucket_mb = mb;
  c.first_bucket_mb = mb;
  return c;
}

struct Figures {
  analysis::RunReport report;
  analysis::RunSummary summary;
};
Figures analyse(const trace::Run& run) {
  Figures f;
  f.report = analysis::analyzeRun(run, {});
  f.summary = analysis::summarizeRun(f.report);
  return f;
}
double us(trace::TimeNs ns) {
  return static_cast<double>(ns) * 1e-3;
}

// The predicted run's figures equal the prediction's (events are whole nanoseconds: each
// interval's ends move by at most half a nanosecond).
void expectSameFigures(const analysis::Prediction& p, const analysis::RunSummary& s) {
  EXPECT_NEAR(us(s.step_ns), p.step_us, 0.002);
  ASSERT_EQ(s.overlap_pct.has_value(), p.overlap_pct.has_value());
  if (p.overlap_pct) {
    EXPECT_NEAR(*s.overlap_pct, *p.overlap_pct, 1e-3);
  }
  EXPECT_NEAR(us(s.exposed_ns_per_step), p.exposed_comm_us, 0.01);
}

TEST(PredictedRun, HandMadeModelGivesBackItsFiguresThroughTheAnalysis) {
  const auto m = handMadeModel();
  trace::Run recorded;
  recorded.name = "toy";
  // Per tensor: allreduce j (30 µs) starts when gradient j is ready; only the last is exposed.
  const auto run = analysis::predictedRun(recorded, m, sized(0));
  EXPECT_EQ(run.name, "toy predicted with one allreduce per tensor");
  EXPECT_EQ(run.source(), "predicted");
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[1].rank, 1);
  ASSERT_EQ(run.ranks[0].steps.size(), 1u);
  EXPECT_EQ(run.ranks[0].steps[0].number, 3);
  EXPECT_EQ(run.ranks[0].steps[0].start, 1'000'000);
  const auto f = analyse(run);
  EXPECT_EQ(f.summary.step_ns, 430'000);
  ASSERT_TRUE(f.summary.overlap_pct);
  EXPECT_NEAR(*f.summary.overlap_pct, 75, 1e-9);
  EXPECT_EQ(f.summary.exposed_ns_per_step, 30'000);
  EXPECT_DOUBLE_EQ(f.summary.allreduces_per_step, 4);
  expectSameFigures(analysis::predictConfiguration(m, sized(0)), f.summary);
  // The bucket plan is written as the run's metadata: four buckets of one parameter each.
  const auto& b = run.ranks[0].ddpscope.buckets;
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[2].bytes, 1 << 20);
  ASSERT_EQ(b[2].params.size(), 1u);
  EXPECT_EQ(b[2].params[0].name, "layer1.weight");
  EXPECT_EQ(run.ranks[0].ddpscope.configValue("bucket_mb"), "0");

  // One bucket of 2 MiB (the first holds two tensors): 400 + 10 + 40.
  const auto two = analyse(analysis::predictedRun(recorded, m, sized(2)));
  EXPECT_EQ(two.summary.step_ns, 450'000);
  EXPECT_DOUBLE_EQ(two.summary.allreduces_per_step, 2);
}

TEST(PredictedRun, NameSaysWhatChanged) {
  auto c = sized(100);
  c.first_bucket_mb.reset();
  EXPECT_EQ(analysis::predictedRunName("resnet", c), "resnet predicted at 100 MiB");
  c.overlap = false;
  c.world_size = 8;
  c.network_scale = 2;
  EXPECT_EQ(analysis::predictedRunName("resnet", c),
            "resnet predicted at 100 MiB, no overlap, 8 ranks, network \u00d72");
}

TEST(PredictedRun, UnusableModelIsAClearError) {
  WhatIfModel m;
  m.notes.push_back("the run has one rank: no communication to replay");
  try {
    analysis::predictedRun({}, m, sized(25));
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("one rank"), std::string::npos);
  }
}

struct Recorded {
  trace::Run run;
  analysis::RunReport report;
  std::vector<analysis::RankActivity> activities;
  WhatIfModel model;
};
Recorded record(trace::Run run) {
  Recorded r;
  r.run = std::move(run);
  r.report = analysis::analyzeRun(r.run, {}, &r.activities);
  r.model = analysis::buildWhatIfModel(r.run, r.report, r.activities);
  return r;
}

TEST(PredictedRun, SimulatedRunWithBucketMetadata) {
  agent::AgentOptions o;
  o.world_size = 4;
  o.steps = 4;
  o.model.kind = "transformer";
  o.model.layers = 4;
  o.bucket_mb = 25;
  o.first_bucket_mb = 1;
  o.cost.jitter = 0.05;
  o.cost.comm_slowdown = 0.2;
  trace::Run run;
  run.name = "sim";
  run.ranks = agent::runSimulation(o).ranks;
  const auto rec = record(std::move(run));
  ASSERT_TRUE(rec.model.usable);
  for (double mb : {0.0, 5.0, 100.0}) {
    WhatIfConfig c;
    c.bucket_mb = mb;
    const auto p = analysis::predictConfiguration(rec.model, c);
    const auto pr = analysis::predictedRun(rec.run, rec.model, c);
    EXPECT_EQ(pr.ranks.size(), 4u);
    const auto f = analyse(pr);
    SCOPED_TRACE(mb);
    // Steps 1–3 as recorded (step 0 left out as warm-up: its range is kept, empty).
    EXPECT_EQ(f.summary.selection.used, rec.model.selection.used);
    EXPECT_EQ(f.summary.selection.warm_up, rec.model.selection.warm_up);
    expectSameFigures(p, f.summary);
    EXPECT_EQ(static_cast<std::int32_t>(pr.ranks[0].ddpscope.buckets.size()), p.buckets);
    EXPECT_EQ(f.summary.buckets_per_step, p.buckets);
  }
}

TEST(PredictedRun, ResNetReferenceGivesBackThePrediction) {
  trace::Run run;
  run.name = "resnet50";
  run.ranks.push_back(
      trace::readTraceFile(std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz"));
  const auto rec = record(std::move(run));
  ASSERT_TRUE(rec.model.usable);
  for (double mb : {5.0, 25.0, 100.0}) {
    WhatIfConfig c;
    c.bucket_mb = mb;
    const auto p = analysis::predictConfiguration(rec.model, c);
    const auto pr = analysis::predictedRun(rec.run, rec.model, c);
    SCOPED_TRACE(mb);
    EXPECT_EQ(pr.source(), "predicted");
    ASSERT_EQ(pr.ranks.size(), 1u);
    EXPECT_EQ(pr.ranks[0].world_size, 2);
    EXPECT_TRUE(pr.ranks[0].ddpscope.buckets.empty());  // no parameter list in the trace
    const auto f = analyse(pr);
    EXPECT_EQ(f.summary.selection.used, (std::vector<std::int32_t>{5, 6}));
    expectSameFigures(p, f.summary);
  }
}

}  // namespace

namespace {

TEST(WhatIfBand, HostBoundZeroBandSaysSo) {
  auto m = handMadeModel();
  for (auto& st : m.steps.front())
    st.host_floor_us = 600;  // the host's own time: longer than the GPU's 490 µs
  m.comm.front().residual_pct = 10;
  const auto p = analysis::predictConfiguration(m, sized(400));
  EXPECT_TRUE(p.host_bound);
  EXPECT_DOUBLE_EQ(p.step_us_low, 600);
  EXPECT_DOUBLE_EQ(p.step_us_high, 600);
  const auto why = analysis::noBandReason(p);
  ASSERT_TRUE(why);
  EXPECT_EQ(why->rfind("host-bound: ", 0), 0u) << *why;
  // The same model without the host's floor: the fit's 10 % moves the one exposed allreduce.
  auto gpu = handMadeModel();
  gpu.comm.front().residual_pct = 10;
  const auto q = analysis::predictConfiguration(gpu, sized(400));
  EXPECT_NEAR(q.step_us_low, 400 + 90 * 0.9, 1e-6);
  EXPECT_NEAR(q.step_us_high, 400 + 90 * 1.1, 1e-6);
  EXPECT_FALSE(analysis::noBandReason(q));
}

TEST(WhatIfBand, ReplayErrorIsRelativeToTheRecordedStep) {
  EXPECT_DOUBLE_EQ(*analysis::replayErrorPct(110, 100), 10);
  EXPECT_DOUBLE_EQ(*analysis::replayErrorPct(95, 100), -5);
  EXPECT_FALSE(analysis::replayErrorPct(95, 0));  // no recorded step: none, never 0
}

}  // namespace
