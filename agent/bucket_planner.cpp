#include "agent/bucket_planner.h"

#include <cmath>
#include <map>
#include <stdexcept>

namespace ddpscope::agent {

std::string_view dtypeName(DType d) {
  switch (d) {
    case DType::F32:
      return "f32";
    case DType::BF16:
      return "bf16";
    case DType::I32:
      return "i32";
  }
  return "f32";
}

std::int64_t dtypeBytes(DType d) {
  return d == DType::BF16 ? 2 : 4;
}

std::int64_t mebibytesToBytes(double mib) {
  return static_cast<std::int64_t>(std::llround(mib * 1024.0 * 1024.0));
}

BucketPlanner::BucketPlanner(std::int64_t cap_bytes, std::int64_t first_cap_bytes)
    : cap_bytes_(cap_bytes), first_cap_bytes_(first_cap_bytes) {
  if (cap_bytes < 0 || first_cap_bytes < 0)
    throw std::invalid_argument("bucket caps must not be negative");
}

BucketPlan BucketPlanner::plan(const std::vector<ParamInfo>& params) const {
  std::vector<std::int32_t> order;
  for (auto i = static_cast<std::int32_t>(params.size()) - 1; i >= 0; --i)
    order.push_back(i);
  return planInOrder(params, order);
}

BucketPlan BucketPlanner::planInOrder(const std::vector<ParamInfo>& params,
                                      const std::vector<std::int32_t>& ready_order) const {
  BucketPlan out;
  out.bucket_of.assign(params.size(), -1);
  out.offset_of.assign(params.size(), 0);
  if (ready_order.size() != params.size())
    throw std::invalid_argument("ready order must list every parameter once");
  // One open bucket per dtype, as DDP does; a bucket is sealed when it reaches its cap. As in
  // DDP, the first-bucket cap applies to the first bucket of each dtype.
  std::map<DType, std::size_t> open;
  std::map<DType, int> opened_per_dtype;
  for (auto p : ready_order) {
    if (p < 0 || static_cast<std::size_t>(p) >= params.size() || out.bucket_of[p] != -1)
      throw std::invalid_argument("ready order must list every parameter once");
    const auto& info = params[static_cast<std::size_t>(p)];
    auto it = open.find(info.dtype);
    if (it == open.end()) {
      Bucket b;
      b.id = static_cast<std::int32_t>(out.buckets.size());
      b.dtype = info.dtype;
      out.buckets.push_back(b);
      ++opened_per_dtype[info.dtype];
      it = open.emplace(info.dtype, out.buckets.size() - 1).first;
    }
    auto& bucket = out.buckets[it->second];
    bucket.slots.push_back({p, bucket.elements});
    out.bucket_of[p] = bucket.id;
    out.offset_of[p] = bucket.elements;
    bucket.elements += info.elements;
    bucket.bytes += info.bytes();
    const auto cap = opened_per_dtype[info.dtype] == 1 ? first_cap_bytes_ : cap_bytes_;
    if (bucket.bytes >= cap) open.erase(it);
  }
  return out;
}

}  // namespace ddpscope::agent
