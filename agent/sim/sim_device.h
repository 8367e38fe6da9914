#pragma once
// The simulated device (docs/DESIGN.md "What real means"): N virtual ranks in one process, in
// virtual time, deterministic for a seed. Streams are in-order queues; an event completes when the
// work recorded before it completes; a wait delays the waiting stream; an allreduce starts on all
// ranks when the last rank's communication stream reaches it. Work is resolved lazily, in global
// time order, when the host synchronizes (or downloads), so every rank must have launched a
// collective before any rank waits for it. With `math` on, kernels do their arithmetic on the CPU
// (fp32) when they run in virtual time, so a missing stream wait gives wrong numbers as on a GPU.

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "agent/device.h"
#include "agent/sim/cost_model.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::agent::sim {

inline constexpr StreamId kComputeStream = 7;
inline constexpr StreamId kCommStream = 13;
inline constexpr std::int64_t kHostPidBase = 1000;

// A simulated fault (--fault): one rank stops launching work when it opens the range `at_range`
// in step `step`. Die: its process is gone (it writes no trace). Hang: it is alive but launches
// nothing more; its own watchdog fires `timeout_ns` after it stopped. The other ranks block in
// the first collective it never launches; each one's watchdog aborts that collective `timeout_ns`
// (virtual time) after its communication stream reached it. Nothing here sleeps.
enum class FaultKind : std::uint8_t { Die, Hang };
struct SimFault {
  FaultKind kind = FaultKind::Die;
  std::int32_t rank = 0;
  std::int32_t step = 0;
  std::string at_range = "backward";
  std::int64_t timeout_ns = 300'000'000'000;
};

// What happened after a simulated fault, as the watchdogs saw it. Times are virtual ns.
struct SimAbort {
  SimFault fault;
  trace::TimeNs stop_ns = 0;                // host time at which the faulted rank stopped launching
  std::int64_t collective = -1;             // the collective the others waited in (launch index)
  std::int32_t bucket = -1;                 // its bucket tag
  std::int32_t step = -1;                   // its step
  std::vector<std::int32_t> waiting_ranks;  // the ranks that waited in it and aborted it
  std::vector<trace::TimeNs> wait_start_ns;  // per rank: when its comm stream reached it; -1 none
  std::vector<trace::TimeNs> abort_ns;       // per rank: where its trace ends; -1 for a dead rank
};

// Thrown by synchronize (and download) once the cluster has aborted after a simulated fault.
class SimAborted : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct SimOptions {
  std::int32_t world_size = 1;
  bool math = false;       // --sim-math: real fp32 arithmetic on the CPU
  std::uint64_t seed = 1;  // jitter
  CostModel cost;
  std::optional<SimFault> fault;
};

class SimCluster;

class SimDevice final : public Device {
 public:
  SimDevice(SimCluster& cluster, std::int32_t rank);
  ~SimDevice() override;

  std::int32_t rank() const override { return rank_; }
  std::int32_t worldSize() const override;
  bool computesValues() const override;

  BufferId allocate(std::int64_t count, DType dtype, std::string_view name) override;
  void upload(View dst, std::span<const float> src) override;
  void uploadIndices(View dst, std::span<const std::int32_t> src) override;
  void download(View src, std::span<float> dst) override;

  StreamId computeStream() const override { return kComputeStream; }
  StreamId commStream() const override { return kCommStream; }
  EventId createEvent() override;
  void recordEvent(EventId event, StreamId stream) override;
  void waitEvent(StreamId stream, EventId event) override;
  void synchronize() override;
  std::int64_t hostTimeNs() const override { return host_ns_; }

  void beginStep(std::int32_t step) override;
  void endStep() override;
  void pushRange(StreamId stream, std::string_view name) override;
  void popRange(StreamId stream) override;
  void mark(StreamId stream, std::string_view name, Tags tags) override;

  void gemm(StreamId stream, const GemmArgs& args, Tags tags) override;
  void epilogue(StreamId stream, const EpilogueArgs& args) override;
  void activationBackward(StreamId stream, View dy, View pre, View dx, Activation act) override;
  void columnSum(StreamId stream, View dy, View db, std::int64_t rows, std::int64_t cols,
                 Tags tags) override;
  void layerNorm(StreamId stream, const LayerNormArgs& args) override;
  void layerNormBackward(StreamId stream, const LayerNormArgs& args, View dy,
                         View residual_grad) override;
  void layerNormGammaGrad(StreamId stream, const LayerNormArgs& args, View dy, View dgamma,
                          Tags tags) override;
  void attentionCore(StreamId stream, View qkv, View out, std::int64_t rows,
                     std::int64_t width) override;
  void attentionCoreBackward(StreamId stream, View qkv, View dout, View dqkv, std::int64_t rows,
                             std::int64_t width) override;
  void embedding(StreamId stream, View tokens, View table, View out, std::int64_t width) override;
  void embeddingBackward(StreamId stream, View tokens, View dout, View dtable, std::int64_t width,
                         Tags tags) override;
  void mseLoss(StreamId stream, View pred, View target, View dpred, View loss,
               std::int64_t rows) override;
  void packBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) override;
  void unpackBucket(StreamId stream, std::span<const CopyPair> copies, Tags tags) override;
  void sgdUpdate(StreamId stream, std::span<const UpdatePair> params, float lr, float grad_scale,
                 Tags tags) override;
  void allreduceSum(StreamId stream, View buffer, DType dtype, Tags tags) override;

  // The trace recorded so far (GPU and host tracks, names); the caller adds the ddpscope block.
  trace::RankTrace& trace() { return trace_; }
  // True once this rank is the faulted one and has stopped launching work.
  bool stopped() const { return stopped_; }

 private:
  friend class SimCluster;
  enum class OpKind : std::uint8_t {
    Kernel,
    Collective,
    Record,
    Wait,
    RangeBegin,
    RangeEnd,
    Marker
  };
  struct Op {
    OpKind kind = OpKind::Kernel;
    trace::NameId name = 0;
    trace::TimeNs launch = 0;
    double work_ns = 0;  // duration before communication slowdown
    std::int32_t step = trace::kNoStep;
    std::int32_t bucket = trace::kNoBucket;
    std::int64_t bytes = trace::kNoBytes;
    std::int64_t correlation = trace::kNoCorrelation;
    std::int64_t ref = -1;  // event instance (Record, Wait) or collective index
    std::function<void()> math;
  };
  struct Stream {
    StreamId id = 0;
    std::int32_t track = -1;
    std::deque<Op> queue;
    trace::TimeNs ready = 0;  // when the last resolved work on it ends
    std::vector<std::pair<trace::NameId, trace::TimeNs>> open_ranges;
    bool arrived = false;       // head collective has registered its arrival
    trace::TimeNs arrival = 0;  // when this stream reached its head collective
  };

  Stream& stream(StreamId id);
  float* data(View v);
  void check(View v, std::string_view what) const;
  std::int64_t hostCall(std::string_view api, double cost_us, bool correlated);
  void launchKernel(StreamId s, std::string_view name, double work_ns, Tags tags,
                    std::function<void()> math);
  void enqueue(StreamId s, Op op);
  double computeFactor();
  void addGpuEvent(Stream& s, trace::EventKind kind, trace::NameId name, trace::TimeNs start,
                   trace::TimeNs dur, const Op& op);
  void addHostEvent(trace::EventKind kind, trace::NameId name, trace::TimeNs start,
                    trace::TimeNs dur, std::int64_t correlation);
  // Resolves the head op of a stream starting at `start` (the cluster decides when).
  void resolveHead(Stream& s, trace::TimeNs start);
  trace::TimeNs stretchedForComm(trace::TimeNs start, double work_ns) const;
  // After a simulated fault: the trace ends at `at` (see the definition for what is kept).
  void endTraceAt(trace::TimeNs at);
  // True when launches are ignored: this rank stopped (simulated fault) or the cluster aborted.
  bool halted() const;

  SimCluster& cluster_;
  std::int32_t rank_;
  trace::RankTrace trace_;
  std::int32_t host_track_ = -1;
  trace::TimeNs host_ns_ = 0;
  std::int64_t next_correlation_ = 1;
  std::int32_t step_ = trace::kNoStep;
  trace::TimeNs step_start_ = 0;
  std::vector<std::pair<trace::NameId, trace::TimeNs>> host_ranges_;
  std::vector<Stream> streams_;
  std::vector<std::vector<float>> storage_;  // per buffer, only with math
  std::vector<std::int64_t> buffer_size_;
  std::vector<std::int64_t> event_latest_;    // event -> latest record instance, -1 none
  std::vector<trace::TimeNs> instance_time_;  // record instance -> time, -1 unresolved
  std::int64_t collectives_launched_ = 0;
  trace::TimeNs comm_busy_start_ = 0, comm_busy_end_ = 0;  // the latest NCCL kernel on this rank
  // A collective this rank reached and spins in, waiting for its peers: from when (-1: none).
  trace::TimeNs spin_start_ = -1;
  std::uint64_t rng_state_ = 0;
  trace::NameId launch_name_ = 0;
  bool stopped_ = false;  // the simulated fault stopped this rank: every launch is ignored
  trace::TimeNs stop_ns_ = -1;
};

class SimCluster {
 public:
  explicit SimCluster(SimOptions options);
  ~SimCluster();
  SimCluster(const SimCluster&) = delete;
  SimCluster& operator=(const SimCluster&) = delete;

  std::int32_t worldSize() const { return options_.world_size; }
  const SimOptions& options() const { return options_; }
  SimDevice& device(std::int32_t rank) { return *devices_.at(static_cast<std::size_t>(rank)); }
  // Runs all launched work of all ranks to completion in virtual time. Throws std::logic_error
  // when a collective cannot start because some rank has not launched it yet, unless a simulated
  // fault explains it: then the watchdogs abort (see SimFault) and abortInfo() says how.
  void drain();
  // Set once a simulated fault has made the cluster abort.
  const std::optional<SimAbort>& abortInfo() const { return abort_; }

 private:
  friend class SimDevice;
  struct Collective {
    std::int32_t arrived = 0;
    trace::TimeNs start = 0;  // max arrival
    std::int64_t count = -1;  // elements, must agree on every rank
    std::vector<View> views;  // per rank
  };
  Collective& collective(std::int64_t index);
  void arrive(SimDevice::Stream& s);
  void sumCollective(Collective& c);
  // The watchdogs fire after a simulated fault deadlocked the cluster (see SimFault).
  void abortAfterFault();
  // The start time of a stream's head op, or -1 when it cannot run yet.
  trace::TimeNs headStart(SimDevice& dev, SimDevice::Stream& s);

  SimOptions options_;
  std::vector<std::unique_ptr<SimDevice>> devices_;
  std::deque<Collective> collectives_;
  std::optional<SimAbort> abort_;
};

}  // namespace ddpscope::agent::sim
