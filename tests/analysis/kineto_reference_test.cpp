// The reference figures of tests/data/README.md, computed independently of this
// project, pinned here at full ns precision.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "tests/common/kineto_reference.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;

namespace {
std::string dataPath(const std::string& name) {
  return std::string(DDPSCOPE_TEST_DATA) + "/" + name;
}
const trace::RankTrace& resnet() {
  static const trace::RankTrace t = trace::readTraceFile(dataPath("resnet50_ddp_rank0.json.gz"));
  return t;
}
}  // namespace

TEST(KinetoReference, Resnet50WholeFile) {
  const auto r = analysis::analyzeRank(resnet());
  EXPECT_EQ(r.counts[0], 21);
  EXPECT_EQ(r.counts[1], 2679);
  EXPECT_EQ(r.counts[2], 1074);
  // README figures: 46876.492 / 115655.843 / 7317.026 µs. Exact decimal arithmetic on the file's
  // text (ts and dur summed as decimals, not floats) gives 46876.493 / 115655.847 / 7317.025 µs;
  // the reference differs by a few ns, the rounding of a float computation.
  EXPECT_NEAR(r.whole.comm_ns, 46876492, 5);
  EXPECT_NEAR(r.whole.compute_ns, 115655843, 5);
  EXPECT_NEAR(r.whole.overlap_ns, 7317026, 5);
  EXPECT_EQ(r.whole.comm_ns, 46876493);
  EXPECT_EQ(r.whole.compute_ns, 115655847);
  EXPECT_EQ(r.whole.overlap_ns, 7317025);
  ASSERT_TRUE(r.whole.overlap_pct.has_value());
  EXPECT_NEAR(*r.whole.overlap_pct, 15.61, 0.005);
  EXPECT_EQ(r.whole.exposed_ns, r.whole.comm_ns - r.whole.overlap_ns);
}

TEST(KinetoReference, Resnet50HtaCompatWindow) {
  analysis::AnalysisOptions o;
  o.hta_compat = true;
  const auto r = analysis::analyzeRank(resnet(), o);
  EXPECT_EQ(r.counts[0], 14);
  EXPECT_EQ(r.counts[1], 1786);
  EXPECT_EQ(r.counts[2], 716);
  EXPECT_NEAR(r.whole.comm_ns, 24289050, 5);
  EXPECT_NEAR(r.whole.overlap_ns, 3585678, 5);
  EXPECT_NEAR(*r.whole.overlap_pct, 14.76, 0.005);
  EXPECT_NEAR(r.whole.idle_pct.value(), 77.23, 0.005);
  EXPECT_NEAR(r.whole.compute_pct.value(), 17.66, 0.005);
  // The window drops the last step.
  ASSERT_EQ(r.steps.size(), 2u);
  EXPECT_EQ(r.steps[0].step, 4);
  EXPECT_EQ(r.steps[1].step, 5);
}

TEST(KinetoReference, World1OverlapIsUndefined) {
  const auto t = trace::readTraceFile(dataPath("resnet50_world1_rank0.json.gz"));
  const auto r = analysis::analyzeRank(t);
  EXPECT_FALSE(r.whole.overlap_pct.has_value());
  EXPECT_EQ(r.counts[0], 0);
  EXPECT_EQ(r.steps.size(), 5u);
  EXPECT_TRUE(r.buckets.empty());
}

TEST(KinetoReference, Resnet50InferredBuckets) {
  const auto r = analysis::analyzeRank(resnet());
  EXPECT_TRUE(r.buckets_inferred);
  // The trace does not list an inferred bucket's tensors: null in JSON, not 0.
  analysis::RunReport run;
  run.ranks.push_back(r);
  const auto json = analysis::reportToJson(run);
  EXPECT_NE(json.find("\"tensors\": null"), std::string::npos);
  EXPECT_EQ(json.find("\"tensors\": 0"), std::string::npos);
  // Per step, DDP allreduces the gradients in five buckets (broadcasts are not buckets).
  ASSERT_EQ(r.steps.size(), 3u);
  std::map<std::int32_t, std::vector<const analysis::BucketReport*>> by_step;
  for (const auto& b : r.buckets)
    by_step[b.step].push_back(&b);
  ASSERT_EQ(by_step.size(), 3u);
  for (const auto& [step, buckets] : by_step) {
    SCOPED_TRACE(step);
    ASSERT_EQ(buckets.size(), 5u);
    std::int64_t total = 0;
    for (std::size_t k = 0; k < buckets.size(); ++k) {
      EXPECT_EQ(buckets[k]->id, static_cast<std::int32_t>(k));
      EXPECT_GT(buckets[k]->bytes, 0);
      EXPECT_EQ(buckets[k]->bytes % 4, 0);  // float32 gradients
      EXPECT_GE(buckets[k]->wait_ns, 0);
      EXPECT_LE(buckets[k]->exposed_ns, buckets[k]->end_ns - buckets[k]->start_ns);
      ASSERT_TRUE(buckets[k]->busbw_gbps.has_value());
      // world 2: busbw = algbw * 2(p-1)/p = algbw
      EXPECT_DOUBLE_EQ(*buckets[k]->busbw_gbps, *buckets[k]->algbw_gbps);
      total += buckets[k]->bytes;
    }
    // ResNet-50 has 25,557,032 parameters: all of them are allreduced once per step.
    EXPECT_EQ(total, 25557032LL * 4);
    EXPECT_EQ(r.steps[static_cast<std::size_t>(step - 4)].allreduces, 5);
  }
  // The first bucket of the first step holds the last layer: fc, 2048 x 1000 + 1000 floats.
  EXPECT_EQ(by_step.begin()->second[0]->bytes, 2049000LL * 4);  // the fc layer, ready first
}

using namespace ddpscope::testing::kineto_reference;

TEST(KinetoReference, Resnet50PerStepFiguresExactly) {
  const auto r = analysis::analyzeRank(resnet());
  ASSERT_EQ(r.steps.size(), std::size(kSteps));
  for (std::size_t i = 0; i < std::size(kSteps); ++i) {
    const auto& want = kSteps[i];
    const auto& got = r.steps[i];
    SCOPED_TRACE("step " + std::to_string(want.step));
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.dur_ns, want.dur_ns);
    EXPECT_EQ(got.metrics.comm_ns, want.comm_ns);
    EXPECT_EQ(got.metrics.overlap_ns, want.overlap_ns);
    EXPECT_EQ(got.metrics.exposed_ns, want.exposed_ns);
    ASSERT_TRUE(got.metrics.overlap_pct.has_value());
    EXPECT_EQ(std::llround(*got.metrics.overlap_pct * 1e4), want.overlap_pct_e4)
        << *got.metrics.overlap_pct;
  }
}

TEST(KinetoReference, Resnet50AllFifteenBucketsExactly) {
  const auto r = analysis::analyzeRank(resnet());
  ASSERT_EQ(r.buckets.size(), std::size(kBuckets));
  std::int32_t previous_step = -1, next_id = 0;
  for (std::size_t i = 0; i < std::size(kBuckets); ++i) {
    const auto& want = kBuckets[i];
    const auto& got = r.buckets[i];
    SCOPED_TRACE("bucket " + std::to_string(i) + " (step " + std::to_string(want.step) + ")");
    next_id = want.step == previous_step ? next_id + 1 : 0;
    previous_step = want.step;
    EXPECT_EQ(got.step, want.step);
    EXPECT_EQ(got.id, next_id);
    EXPECT_EQ(got.bytes, want.bytes);
    EXPECT_EQ(got.end_ns - got.start_ns, want.allreduce_ns);
    EXPECT_EQ(got.wait_ns, want.wait_ns);
    EXPECT_EQ(got.start_ns - got.ready_ns, want.wait_ns);  // wait = start − ready
    EXPECT_TRUE(got.inferred);
  }
}
