// BucketPlanner: PyTorch DDP's bucket assignment rules on hand-written parameter lists.
#include <gtest/gtest.h>

#include "agent/bucket_planner.h"

namespace ddpscope::agent {
namespace {

constexpr std::int64_t kKiB = 1024;

// Elements of f32 tensors sized in KiB.
std::vector<ParamInfo> paramsKiB(std::initializer_list<std::int64_t> kib, DType d = DType::F32) {
  std::vector<ParamInfo> out;
  int i = 0;
  for (auto k : kib)
    out.push_back({"p" + std::to_string(i++), k * kKiB / dtypeBytes(d), d});
  return out;
}

std::vector<std::vector<std::int32_t>> members(const BucketPlan& plan) {
  std::vector<std::vector<std::int32_t>> out;
  for (const auto& b : plan.buckets) {
    out.emplace_back();
    for (const auto& s : b.slots)
      out.back().push_back(s.param);
  }
  return out;
}

TEST(BucketPlanner, ReverseRegistrationOrderAndCapClosesBucket) {
  // 4 tensors of 100 KiB, cap 150 KiB: a bucket closes once it holds at least the cap.
  const auto params = paramsKiB({100, 100, 100, 100});
  const auto plan = BucketPlanner(150 * kKiB, 150 * kKiB).plan(params);
  EXPECT_EQ(members(plan), (std::vector<std::vector<std::int32_t>>{{3, 2}, {1, 0}}));
  EXPECT_EQ(plan.buckets[0].bytes, 200 * kKiB);
  EXPECT_EQ(plan.bucket_of, (std::vector<std::int32_t>{1, 1, 0, 0}));
  // Offsets: in order of addition within each bucket.
  EXPECT_EQ(plan.offset_of[3], 0);
  EXPECT_EQ(plan.offset_of[2], 100 * kKiB / 4);
  EXPECT_EQ(plan.offset_of[1], 0);
}

TEST(BucketPlanner, FirstBucketHasItsOwnCap) {
  const auto params = paramsKiB({10, 10, 10, 10, 10, 10});
  // First bucket closes at 10 KiB (one tensor), the others at 25 KiB (three tensors).
  const auto plan = BucketPlanner(25 * kKiB, 10 * kKiB).plan(params);
  EXPECT_EQ(members(plan), (std::vector<std::vector<std::int32_t>>{{5}, {4, 3, 2}, {1, 0}}));
}

TEST(BucketPlanner, ZeroCapGivesOneBucketPerTensor) {
  const auto params = paramsKiB({1, 2, 3, 4, 5});
  const auto plan = BucketPlanner(0, 0).plan(params);
  ASSERT_EQ(plan.buckets.size(), 5u);
  for (std::int32_t b = 0; b < 5; ++b) {
    ASSERT_EQ(plan.buckets[b].slots.size(), 1u);
    EXPECT_EQ(plan.buckets[b].slots[0].param, 4 - b);
    EXPECT_EQ(plan.buckets[b].bytes, (5 - b) * kKiB);
  }
}

TEST(BucketPlanner, TensorLargerThanCapGetsItsOwnBucket) {
  const auto params = paramsKiB({4, 4000, 4});
  const auto plan = BucketPlanner(100 * kKiB, 100 * kKiB).plan(params);
  EXPECT_EQ(members(plan), (std::vector<std::vector<std::int32_t>>{{2, 1}, {0}}));
}

TEST(BucketPlanner, OneDtypePerBucket) {
  // Registration order: f32, bf16, f32, bf16 (8 KiB each); cap 16 KiB.
  std::vector<ParamInfo> params = {{"a", 2048, DType::F32},
                                   {"b", 4096, DType::BF16},
                                   {"c", 2048, DType::F32},
                                   {"d", 4096, DType::BF16}};
  const auto plan = BucketPlanner(16 * kKiB, 16 * kKiB).plan(params);
  ASSERT_EQ(plan.buckets.size(), 2u);
  EXPECT_EQ(plan.buckets[0].dtype, DType::BF16);
  EXPECT_EQ(members(plan)[0], (std::vector<std::int32_t>{3, 1}));
  EXPECT_EQ(plan.buckets[1].dtype, DType::F32);
  EXPECT_EQ(members(plan)[1], (std::vector<std::int32_t>{2, 0}));
  EXPECT_EQ(plan.buckets[0].bytes, 16 * kKiB);
  EXPECT_EQ(plan.buckets[0].elements, 8192);
}

TEST(BucketPlanner, RebuildFollowsObservedReadyOrder) {
  const auto params = paramsKiB({10, 10, 10, 10});
  const BucketPlanner planner(20 * kKiB, 20 * kKiB);
  // Backward produced weight before bias: 2, 3, 0, 1.
  const auto plan = planner.planInOrder(params, {2, 3, 0, 1});
  EXPECT_EQ(members(plan), (std::vector<std::vector<std::int32_t>>{{2, 3}, {0, 1}}));
  EXPECT_THROW(planner.planInOrder(params, {2, 3, 0}), std::invalid_argument);
  EXPECT_THROW(planner.planInOrder(params, {2, 2, 0, 1}), std::invalid_argument);
  EXPECT_THROW(planner.planInOrder(params, {2, 3, 0, 9}), std::invalid_argument);
}

TEST(BucketPlanner, MebibytesAndNegativeCaps) {
  EXPECT_EQ(mebibytesToBytes(25), 25 * 1024 * 1024);
  EXPECT_EQ(mebibytesToBytes(0.5), 512 * 1024);
  EXPECT_THROW(BucketPlanner(-1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace ddpscope::agent
