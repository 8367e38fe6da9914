#pragma once
// The data-parallel training loop, shared line for line by the simulated and the CUDA device.
// One Trainer drives one rank. A step is launched without blocking the host (launchStep) and
// then completed (completeStep: synchronize, read the loss), so a driver that owns several ranks
// in one process launches every rank's step before completing any (collectives need all ranks).
//
// Per step: forward; backward layer by layer on the compute stream; when a bucket's last gradient
// is written, an event is recorded and (with overlap) the communication stream waits for it and
// allreduces the bucket, buckets strictly in order as PyTorch DDP does; the optimizer update of a
// bucket waits for that allreduce's event. Gradients are summed by the allreduce and averaged by
// the update (grad_scale = 1 / world size).

#include <cstdint>
#include <optional>
#include <vector>

#include "agent/bucket_planner.h"
#include "agent/device.h"
#include "agent/model.h"

namespace ddpscope::agent {

enum class Fusion : std::uint8_t {
  Copy,  // gradients in their own tensors; a pack kernel fills the bucket, unpack empties it
  View   // gradients are slices of the bucket buffer (gradient_as_bucket_view)
};

struct TrainerOptions {
  std::int64_t bucket_cap_bytes = 25ll << 20;
  std::int64_t first_bucket_cap_bytes = 1ll << 20;
  bool overlap = true;  // false: all allreduces are launched after backward
  Fusion fusion = Fusion::View;
  float lr = 0.05f;
  bool rebuild_buckets = false;  // rebuild once after step 0 in the observed gradient-ready order
  // Test-only switches that drop one of the two stream waits, to show the dependency check
  // catches a missing wait. Never set by the command line.
  bool skip_comm_wait = false;
  bool skip_update_wait = false;
};

struct StepResult {
  std::int32_t step = 0;
  std::optional<float> loss;  // empty when the device does not compute values
  std::int64_t step_ns = 0;   // host time from beginStep to the end of synchronize
};

class Trainer {
 public:
  Trainer(Device& dev, Model& model, TrainerOptions options);

  // Allocates parameters, gradients and buckets, uploads initial values, sets up the model.
  void setUp();
  void launchStep(std::int32_t step);
  StepResult completeStep();

  const BucketPlan& plan() const { return plan_; }
  const std::vector<ParamInfo>& parameters() const { return model_.parameters(); }
  // The current values of parameter i (synchronizes).
  std::vector<float> parameterValues(std::int32_t i);
  // The gradient of parameter i as the last update used it: the sum over ranks divided by the
  // world size (synchronizes).
  std::vector<float> averagedGradient(std::int32_t i);

 private:
  void allocateBuckets();
  void onGradientWritten(std::int32_t param);
  void bucketReady(std::int32_t bucket);
  void launchAllreduce(std::int32_t bucket);
  void launchOptimizer();
  std::vector<CopyPair> bucketCopies(std::int32_t bucket, bool into_bucket) const;

  Device& dev_;
  Model& model_;
  TrainerOptions options_;
  BucketPlanner planner_;
  BucketPlan plan_;
  ParamViews views_;
  std::vector<View> own_grad_;      // copy fusion: each gradient's own tensor
  std::vector<View> bucket_slice_;  // per parameter: its slice of the bucket buffer
  std::vector<View> bucket_buffer_;
  std::vector<EventId> grads_ready_, allreduce_done_;
  EventId backward_done_ = -1;
  std::vector<std::int32_t> remaining_;  // per bucket: gradients not yet written this step
  std::vector<bool> ready_;
  std::int32_t next_allreduce_ = 0;
  std::vector<std::int32_t> observed_order_;
  std::int32_t step_ = -1;
  std::int64_t step_start_ns_ = 0;
  bool rebuilt_ = false;
};

}  // namespace ddpscope::agent
