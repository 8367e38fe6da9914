#pragma once
// Assigns gradient tensors to fused buckets with PyTorch DDP's rules (docs/DESIGN.md "Gradient
// fusion"): parameters are taken in reverse registration order (the order backward produces them),
// a bucket closes once it holds at least the cap, the first bucket of each dtype has its own
// (smaller) cap, each bucket holds a single dtype, and a cap of 0 gives one bucket per tensor.
// After the first step the plan can be rebuilt once in the gradient-ready order that was observed.

#include <cstdint>
#include <string>
#include <vector>

#include "agent/device.h"

namespace ddpscope::agent {

struct ParamInfo {
  std::string name;
  std::int64_t elements = 0;
  DType dtype = DType::F32;
  std::int64_t bytes() const { return elements * dtypeBytes(dtype); }
};

struct BucketSlot {
  std::int32_t param = 0;   // index into the registration-order parameter list
  std::int64_t offset = 0;  // elements from the start of the bucket buffer
};

struct Bucket {
  std::int32_t id = 0;
  DType dtype = DType::F32;
  std::int64_t elements = 0;
  std::int64_t bytes = 0;
  std::vector<BucketSlot> slots;  // in the order the tensors were added
};

struct BucketPlan {
  std::vector<Bucket> buckets;          // bucket 0 is the first to become ready
  std::vector<std::int32_t> bucket_of;  // per parameter
  std::vector<std::int64_t> offset_of;  // per parameter, elements into its bucket
};

class BucketPlanner {
 public:
  // cap_bytes 0: one bucket per tensor. first_cap_bytes applies to bucket 0 only.
  BucketPlanner(std::int64_t cap_bytes, std::int64_t first_cap_bytes);

  // The initial plan: reverse registration order.
  BucketPlan plan(const std::vector<ParamInfo>& params) const;
  // A plan following `ready_order` (parameter indices in the order their gradients became ready);
  // throws std::invalid_argument unless it is a permutation of all parameters.
  BucketPlan planInOrder(const std::vector<ParamInfo>& params,
                         const std::vector<std::int32_t>& ready_order) const;

 private:
  std::int64_t cap_bytes_;
  std::int64_t first_cap_bytes_;
};

// Bytes for a size in MiB as the CLI gives it (25 -> 25 * 2^20).
std::int64_t mebibytesToBytes(double mib);

}  // namespace ddpscope::agent
