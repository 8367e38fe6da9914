#include "agent/trainer.h"

#include <stdexcept>
#include <string>

namespace ddpscope::agent {

Trainer::Trainer(Device& dev, Model& model, TrainerOptions options)
    : dev_(dev),
      model_(model),
      options_(options),
      planner_(options.bucket_cap_bytes, options.first_bucket_cap_bytes) {}

void Trainer::setUp() {
  const auto& params = model_.parameters();
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    const View value{dev_.allocate(p.elements, p.dtype, p.name), 0, p.elements};
    views_.value.push_back(value);
    if (dev_.computesValues())
      dev_.upload(value, model_.initialValue(static_cast<std::int32_t>(i)));
    if (options_.fusion == Fusion::Copy)
      own_grad_.push_back({dev_.allocate(p.elements, p.dtype, p.name + ".grad"), 0, p.elements});
  }
  plan_ = planner_.plan(params);
  allocateBuckets();
  backward_done_ = dev_.createEvent();
  model_.setUp(dev_);
}

void Trainer::allocateBuckets() {
  const auto& params = model_.parameters();
  bucket_buffer_.clear();
  for (const auto& b : plan_.buckets) {
    bucket_buffer_.push_back(
        {dev_.allocate(b.elements, b.dtype, "bucket " + std::to_string(b.id)), 0, b.elements});
  }
  bucket_slice_.assign(params.size(), {});
  views_.grad.assign(params.size(), {});
  views_.grad_tags.assign(params.size(), {});
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto b = static_cast<std::size_t>(plan_.bucket_of[i]);
    bucket_slice_[i] = {bucket_buffer_[b].buffer, plan_.offset_of[i], params[i].elements};
    views_.grad[i] = options_.fusion == Fusion::View ? bucket_slice_[i] : own_grad_[i];
    views_.grad_tags[i] = {plan_.bucket_of[i], -1};
  }
  while (grads_ready_.size() < plan_.buckets.size()) {
    grads_ready_.push_back(dev_.createEvent());
    allreduce_done_.push_back(dev_.createEvent());
  }
}

void Trainer::launchStep(std::int32_t step) {
  step_ = step;
  dev_.beginStep(step);
  step_start_ns_ = dev_.hostTimeNs();
  const auto compute = dev_.computeStream();
  dev_.pushRange(compute, "forward");
  model_.forward(dev_, views_, step);
  dev_.popRange(compute);

  remaining_.assign(plan_.buckets.size(), 0);
  for (const auto& b : plan_.buckets)
    remaining_[static_cast<std::size_t>(b.id)] = static_cast<std::int32_t>(b.slots.size());
  ready_.assign(plan_.buckets.size(), false);
  next_allreduce_ = 0;
  observed_order_.clear();
  dev_.pushRange(compute, "backward");
  model_.backward(dev_, views_, [this](std::int32_t p) { onGradientWritten(p); });
  dev_.popRange(compute);
  if (!options_.overlap) {
    // The host runs ahead of the GPU, so launching late is not enough: the communication
    // stream waits for the end of backward on the GPU.
    dev_.recordEvent(backward_done_, compute);
    dev_.waitEvent(dev_.commStream(), backward_done_);
    for (const auto& b : plan_.buckets)
      launchAllreduce(b.id);
  }
  launchOptimizer();
}

void Trainer::onGradientWritten(std::int32_t param) {
  observed_order_.push_back(param);
  const auto b = plan_.bucket_of[static_cast<std::size_t>(param)];
  if (--remaining_[static_cast<std::size_t>(b)] == 0) bucketReady(b);
}

void Trainer::bucketReady(std::int32_t bucket) {
  const auto compute = dev_.computeStream();
  const auto b = static_cast<std::size_t>(bucket);
  if (options_.fusion == Fusion::Copy) {
    const auto copies = bucketCopies(bucket, true);
    dev_.packBucket(compute, copies, {bucket, plan_.buckets[b].bytes});
  }
  dev_.recordEvent(grads_ready_[b], compute);
  dev_.mark(compute, "bucket " + std::to_string(bucket) + " ready", {bucket, -1});
  ready_[b] = true;
  if (!options_.overlap) return;
  // As DDP: allreduces go out strictly in bucket order, so every rank launches the same sequence.
  while (next_allreduce_ < static_cast<std::int32_t>(ready_.size()) &&
         ready_[static_cast<std::size_t>(next_allreduce_)]) {
    launchAllreduce(next_allreduce_++);
  }
}

void Trainer::launchAllreduce(std::int32_t bucket) {
  const auto comm = dev_.commStream();
  const auto b = static_cast<std::size_t>(bucket);
  if (!options_.skip_comm_wait) dev_.waitEvent(comm, grads_ready_[b]);
  dev_.allreduceSum(comm, bucket_buffer_[b], plan_.buckets[b].dtype,
                    {bucket, plan_.buckets[b].bytes});
  dev_.recordEvent(allreduce_done_[b], comm);
}

void Trainer::launchOptimizer() {
  const auto compute = dev_.computeStream();
  const float scale = 1.0f / static_cast<float>(dev_.worldSize());
  dev_.pushRange(compute, "optimizer");
  for (const auto& bucket : plan_.buckets) {
    const auto b = static_cast<std::size_t>(bucket.id);
    if (!options_.skip_update_wait) dev_.waitEvent(compute, allreduce_done_[b]);
    const Tags tags{bucket.id, bucket.bytes};
    if (options_.fusion == Fusion::Copy)
      dev_.unpackBucket(compute, bucketCopies(bucket.id, false), tags);
    std::vector<UpdatePair> updates;
    for (const auto& slot : bucket.slots) {
      const auto p = static_cast<std::size_t>(slot.param);
      updates.push_back({views_.value[p], views_.grad[p]});
    }
    dev_.sgdUpdate(compute, updates, options_.lr, scale, tags);
  }
  dev_.popRange(compute);
}

std::vector<CopyPair> Trainer::bucketCopies(std::int32_t bucket, bool into_bucket) const {
  std::vector<CopyPair> copies;
  for (const auto& slot : plan_.buckets[static_cast<std::size_t>(bucket)].slots) {
    const auto p = static_cast<std::size_t>(slot.param);
    copies.push_back(into_bucket ? CopyPair{own_grad_[p], bucket_slice_[p]}
                                 : CopyPair{bucket_slice_[p], own_grad_[p]});
  }
  return copies;
}

StepResult Trainer::completeStep() {
  StepResult r;
  r.step = step_;
  dev_.synchronize();
  if (dev_.computesValues()) {
    float loss = 0;
    dev_.download(model_.lossView(), std::span<float>(&loss, 1));
    r.loss = loss;
  }
  r.step_ns = dev_.hostTimeNs() - step_start_ns_;
  dev_.endStep();
  if (options_.rebuild_buckets && !rebuilt_) {
    // DDP rebuilds once, after the first iteration, in the order gradients became ready.
    rebuilt_ = true;
    plan_ = planner_.planInOrder(model_.parameters(), observed_order_);
    allocateBuckets();
  }
  return r;
}

std::vector<float> Trainer::parameterValues(std::int32_t i) {
  const auto v = views_.value.at(static_cast<std::size_t>(i));
  std::vector<float> out(static_cast<std::size_t>(v.count));
  dev_.download(v, out);
  return out;
}

std::vector<float> Trainer::averagedGradient(std::int32_t i) {
  const auto v = views_.grad.at(static_cast<std::size_t>(i));
  std::vector<float> out(static_cast<std::size_t>(v.count));
  dev_.download(v, out);
  for (auto& x : out)
    x /= static_cast<float>(dev_.worldSize());
  return out;
}

}  // namespace ddpscope::agent
