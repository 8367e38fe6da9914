#include "agent/sim/sim_device.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "agent/sim/cpu_kernels.h"

namespace ddpscope::agent::sim {

using trace::EventKind;
using trace::TimeNs;

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// SimDevice: host side (launches, ranges, memory)

SimDevice::SimDevice(SimCluster& cluster, std::int32_t rank) : cluster_(cluster), rank_(rank) {
  trace_.rank = rank;
  trace_.world_size = cluster.worldSize();
  const std::int64_t host_pid = kHostPidBase + rank;
  host_track_ = trace_.trackIndex(trace::TrackKind::Host, host_pid, host_pid);
  for (StreamId id : {kComputeStream, kCommStream}) {
    Stream s;
    s.id = id;
    s.track = trace_.trackIndex(trace::TrackKind::Gpu, rank, id);
    streams_.push_back(std::move(s));
  }
  trace_.process_names[rank] = "GPU " + std::to_string(rank) + " (simulated H200)";
  trace_.process_names[host_pid] = "ddpscope-agent rank " + std::to_string(rank) + " (sim)";
  trace_.thread_names[{rank, kComputeStream}] = "stream 7 (compute)";
  trace_.thread_names[{rank, kCommStream}] = "stream 13 (communication)";
  launch_name_ = trace_.names.intern("cudaLaunchKernel");
  rng_state_ = cluster.options().seed * 0x2545F4914F6CDD1Dull + static_cast<std::uint64_t>(rank);
}

SimDevice::~SimDevice() = default;

std::int32_t SimDevice::worldSize() const {
  return cluster_.worldSize();
}
bool SimDevice::computesValues() const {
  return cluster_.options().math;
}

SimDevice::Stream& SimDevice::stream(StreamId id) {
  for (auto& s : streams_)
    if (s.id == id) return s;
  throw std::invalid_argument("simulated device: no stream " + std::to_string(id));
}

BufferId SimDevice::allocate(std::int64_t count, DType /*dtype*/, std::string_view /*name*/) {
  if (count < 0) throw std::invalid_argument("simulated device: negative allocation");
  buffer_size_.push_back(count);
  storage_.emplace_back(computesValues() ? static_cast<std::size_t>(count) : 0u, 0.0f);
  return static_cast<BufferId>(buffer_size_.size() - 1);
}

void SimDevice::check(View v, std::string_view what) const {
  if (v.buffer < 0 || static_cast<std::size_t>(v.buffer) >= buffer_size_.size() || v.offset < 0 ||
      v.count < 0 || v.offset + v.count > buffer_size_[static_cast<std::size_t>(v.buffer)]) {
    throw std::out_of_range("simulated device: " + std::string(what) +
                            " reads or writes outside its buffer");
  }
}

float* SimDevice::data(View v) {
  if (!v.valid()) return nullptr;
  return storage_[static_cast<std::size_t>(v.buffer)].data() + v.offset;
}

void SimDevice::upload(View dst, std::span<const float> src) {
  check(dst, "upload");
  if (static_cast<std::int64_t>(src.size()) != dst.count)
    throw std::invalid_argument("simulated device: upload size mismatch");
  if (computesValues()) std::copy(src.begin(), src.end(), data(dst));
}

void SimDevice::uploadIndices(View dst, std::span<const std::int32_t> src) {
  check(dst, "upload");
  if (static_cast<std::int64_t>(src.size()) != dst.count)
    throw std::invalid_argument("simulated device: upload size mismatch");
  // Indices are stored as floats (exact below 2^24) so every buffer has one element type.
  if (computesValues())
    std::transform(src.begin(), src.end(), data(dst),
                   [](std::int32_t i) { return static_cast<float>(i); });
}

void SimDevice::download(View src, std::span<float> dst) {
  check(src, "download");
  synchronize();
  if (static_cast<std::int64_t>(dst.size()) != src.count)
    throw std::invalid_argument("simulated device: download size mismatch");
  if (computesValues())
    std::copy(data(src), data(src) + src.count, dst.begin());
  else
    std::fill(dst.begin(), dst.end(), 0.0f);
}

std::int64_t SimDevice::hostCall(std::string_view api, double cost_us, bool correlated) {
  const TimeNs start = host_ns_;
  host_ns_ += static_cast<TimeNs>(std::llround(cost_us * 1e3));
  const std::int64_t corr = correlated ? next_correlation_++ : trace::kNoCorrelation;
  const auto name = api == "cudaLaunchKernel" ? launch_name_ : trace_.names.intern(api);
  addHostEvent(EventKind::Runtime, name, start, host_ns_ - start, corr);
  return corr;
}

double SimDevice::computeFactor() {
  const auto& cost = cluster_.options().cost;
  double f = rank_ == cost.straggler_rank ? cost.straggler_slowdown : 1.0;
  if (cost.jitter > 0) {
    const double u = static_cast<double>(splitmix64(rng_state_) >> 11) * 0x1.0p-53;
    f *= 1.0 + cost.jitter * u;
  }
  return f;
}

void SimDevice::enqueue(StreamId s, Op op) {
  op.launch = host_ns_;
  op.step = step_;
  stream(s).queue.push_back(std::move(op));
}

bool SimDevice::halted() const {
  return stopped_ || cluster_.abort_.has_value();
}

void SimDevice::launchKernel(StreamId s, std::string_view name, double work_ns, Tags tags,
                             std::function<void()> math) {
  if (halted()) return;
  Op op;
  op.kind = OpKind::Kernel;
  op.correlation = hostCall("cudaLaunchKernel", cluster_.options().cost.launch_us, true);
  op.name = trace_.names.intern(name);
  op.work_ns = work_ns * computeFactor();
  op.bucket = tags.bucket;
  op.bytes = tags.bytes;
  if (computesValues()) op.math = std::move(math);
  enqueue(s, std::move(op));
}

EventId SimDevice::createEvent() {
  event_latest_.push_back(-1);
  return static_cast<EventId>(event_latest_.size() - 1);
}

void SimDevice::recordEvent(EventId event, StreamId s) {
  if (halted()) return;
  hostCall("cudaEventRecord", cluster_.options().cost.event_api_us, false);
  Op op;
  op.kind = OpKind::Record;
  op.ref = static_cast<std::int64_t>(instance_time_.size());
  instance_time_.push_back(-1);
  event_latest_.at(static_cast<std::size_t>(event)) = op.ref;
  enqueue(s, std::move(op));
}

void SimDevice::waitEvent(StreamId s, EventId event) {
  if (halted()) return;
  hostCall("cudaStreamWaitEvent", cluster_.options().cost.event_api_us, false);
  Op op;
  op.kind = OpKind::Wait;
  op.ref = event_latest_.at(static_cast<std::size_t>(event));  // -1: never recorded, no-op
  enqueue(s, std::move(op));
}

void SimDevice::synchronize() {
  cluster_.drain();
  if (cluster_.abort_) {
    throw SimAborted("rank " + std::to_string(rank_) +
                     ": the collective was aborted by the watchdog after a simulated fault");
  }
  if (stopped_) return;  // a stopped host launches nothing and waits for nothing
  const TimeNs start = host_ns_;
  for (const auto& s : streams_)
    host_ns_ = std::max(host_ns_, s.ready);
  host_ns_ += static_cast<TimeNs>(std::llround(cluster_.options().cost.event_api_us * 1e3));
  addHostEvent(EventKind::Runtime, trace_.names.intern("cudaDeviceSynchronize"), start,
               host_ns_ - start, trace::kNoCorrelation);
}

void SimDevice::beginStep(std::int32_t step) {
  if (halted()) return;
  step_ = step;
  step_start_ = host_ns_;
}

void SimDevice::endStep() {
  if (halted()) return;
  addHostEvent(EventKind::UserAnnotation,
               trace_.names.intern("ProfilerStep#" + std::to_string(step_)), step_start_,
               host_ns_ - step_start_, trace::kNoCorrelation);
  step_ = trace::kNoStep;
}

void SimDevice::pushRange(StreamId s, std::string_view name) {
  if (halted()) return;
  if (const auto& f = cluster_.options().fault;
      f && f->rank == rank_ && f->step == step_ && name == f->at_range) {
    // The simulated fault: from here on this rank launches nothing (it died or hangs).
    stopped_ = true;
    stop_ns_ = host_ns_;
    return;
  }
  host_ranges_.emplace_back(trace_.names.intern(name), host_ns_);
  Op op;
  op.kind = OpKind::RangeBegin;
  op.name = host_ranges_.back().first;
  enqueue(s, std::move(op));
}

void SimDevice::popRange(StreamId s) {
  if (halted()) return;
  if (host_ranges_.empty()) throw std::logic_error("simulated device: popRange without pushRange");
  const auto [name, start] = host_ranges_.back();
  host_ranges_.pop_back();
  addHostEvent(EventKind::UserAnnotation, name, start, host_ns_ - start, trace::kNoCorrelation);
  Op op;
  op.kind = OpKind::RangeEnd;
  enqueue(s, std::move(op));
}

void SimDevice::mark(StreamId s, std::string_view name, Tags tags) {
  if (halted()) return;
  Op op;
  op.kind = OpKind::Marker;
  op.name = trace_.names.intern(name);
  op.bucket = tags.bucket;
  enqueue(s, std::move(op));
}

// ---------------------------------------------------------------------------------------------
// SimDevice: trace recording and resolution (called by the cluster, in virtual-time order)

void SimDevice::addGpuEvent(Stream& s, EventKind kind, trace::NameId name, TimeNs start, TimeNs dur,
                            const Op& op) {
  trace_.tracks[static_cast<std::size_t>(s.track)].push(
      {start, dur, name, trace_.names.intern(trace::categoryName(kind)), kind, op.correlation,
       op.bucket, op.step, op.bytes});
}

void SimDevice::addHostEvent(EventKind kind, trace::NameId name, TimeNs start, TimeNs dur,
                             std::int64_t correlation) {
  trace_.tracks[static_cast<std::size_t>(host_track_)].push(
      {start, dur, name, trace_.names.intern(trace::categoryName(kind)), kind, correlation,
       trace::kNoBucket, kind == EventKind::Runtime ? step_ : trace::kNoStep, trace::kNoBytes});
}

// A compute kernel that starts while an NCCL kernel runs progresses 1/(1+slowdown) as fast
// until that NCCL kernel ends. (NCCL kernels that start later are not seen: an approximation.)
TimeNs SimDevice::stretchedForComm(TimeNs start, double work_ns) const {
  const double s = cluster_.options().cost.comm_slowdown;
  // A kernel starting while this rank spins in a collective whose peers have not all arrived is
  // slowed for all of its run: when the spin ends is not known yet (an approximation).
  if (s > 0 && spin_start_ >= 0 && start >= spin_start_)
    return static_cast<TimeNs>(std::llround(work_ns * (1 + s)));
  if (s <= 0 || start < comm_busy_start_ || start >= comm_busy_end_)
    return static_cast<TimeNs>(std::llround(work_ns));
  const auto shared = static_cast<double>(comm_busy_end_ - start);
  const double dur =
      work_ns * (1 + s) <= shared ? work_ns * (1 + s) : shared + (work_ns - shared / (1 + s));
  return static_cast<TimeNs>(std::llround(dur));
}

void SimDevice::resolveHead(Stream& s, TimeNs start) {
  Op op = std::move(s.queue.front());
  s.queue.pop_front();
  switch (op.kind) {
    case OpKind::Kernel: {
      const TimeNs dur = stretchedForComm(start, op.work_ns);
      if (op.math) op.math();
      addGpuEvent(s, EventKind::Kernel, op.name, start, dur, op);
      s.ready = start + dur;
      break;
    }
    case OpKind::Collective: {
      // As NCCL's kernels do: this rank's kernel started when its stream reached the collective
      // and spun until the last rank arrived (`start`), then transferred for work_ns.
      const TimeNs own = std::min(s.arrival, start);
      const auto transfer = static_cast<TimeNs>(std::llround(op.work_ns));
      addGpuEvent(s, EventKind::Kernel, op.name, own, start - own + transfer, op);
      s.ready = start + transfer;
      s.arrived = false;
      comm_busy_start_ = own;
      comm_busy_end_ = s.ready;
      spin_start_ = -1;
      break;
    }
    case OpKind::Record:
      instance_time_[static_cast<std::size_t>(op.ref)] = start;
      break;
    case OpKind::Wait:
      s.ready = start;
      break;
    case OpKind::RangeBegin:
      s.open_ranges.emplace_back(op.name, start);
      break;
    case OpKind::RangeEnd: {
      if (s.open_ranges.empty()) break;
      const auto [name, begin] = s.open_ranges.back();
      s.open_ranges.pop_back();
      addGpuEvent(s, EventKind::GpuAnnotation, name, begin, std::max<TimeNs>(0, s.ready - begin),
                  op);
      break;
    }
    case OpKind::Marker:
      addGpuEvent(s, EventKind::GpuAnnotation, op.name, start, 0, op);
      break;
  }
}

// The trace of a rank whose watchdog fired at `at`. A GPU event (kernel or range) still running
// then never completes, and CUPTI writes a kernel's record only when it ends, so it is dropped
// (as is everything that would start later). A host call or range in progress ends at `at`: the
// call returns with the abort's error. So no event ends after `at`.
void SimDevice::endTraceAt(TimeNs at) {
  for (auto& t : trace_.tracks) {
    const bool gpu = t.kind == trace::TrackKind::Gpu;
    std::size_t kept = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      TimeNs dur = t.dur[i];
      if (t.start[i] + dur > at) {
        if (gpu || t.start[i] >= at) continue;
        dur = at - t.start[i];
      }
      trace::EventRow row = t.row(i);
      row.dur = dur;
      t.setRow(kept++, row);
    }
    t.resize(kept);
  }
}

// ---------------------------------------------------------------------------------------------
// SimCluster

SimCluster::SimCluster(SimOptions options) : options_(std::move(options)) {
  if (options_.world_size < 1) throw std::invalid_argument("world size must be at least 1");
  for (std::int32_t r = 0; r < options_.world_size; ++r)
    devices_.push_back(std::make_unique<SimDevice>(*this, r));
}

SimCluster::~SimCluster() = default;

SimCluster::Collective& SimCluster::collective(std::int64_t index) {
  while (static_cast<std::int64_t>(collectives_.size()) <= index) {
    collectives_.emplace_back();
    collectives_.back().views.resize(static_cast<std::size_t>(options_.world_size));
  }
  return collectives_[static_cast<std::size_t>(index)];
}

void SimCluster::arrive(SimDevice::Stream& s) {
  auto& op = s.queue.front();
  auto& c = collective(op.ref);
  c.arrived++;
  s.arrival = std::max(op.launch, s.ready);
  c.start = std::max(c.start, s.arrival);
  s.arrived = true;
  if (c.arrived == options_.world_size && options_.math) sumCollective(c);
}

void SimCluster::sumCollective(Collective& c) {
  std::vector<double> sum(static_cast<std::size_t>(c.count), 0.0);
  for (std::int32_t r = 0; r < options_.world_size; ++r) {
    const float* p =
        devices_[static_cast<std::size_t>(r)]->data(c.views[static_cast<std::size_t>(r)]);
    for (std::int64_t i = 0; i < c.count; ++i)
      sum[static_cast<std::size_t>(i)] += p[i];
  }
  for (std::int32_t r = 0; r < options_.world_size; ++r) {
    float* p = devices_[static_cast<std::size_t>(r)]->data(c.views[static_cast<std::size_t>(r)]);
    for (std::int64_t i = 0; i < c.count; ++i)
      p[i] = static_cast<float>(sum[static_cast<std::size_t>(i)]);
  }
}

TimeNs SimCluster::headStart(SimDevice& dev, SimDevice::Stream& s) {
  const auto& op = s.queue.front();
  switch (op.kind) {
    case SimDevice::OpKind::Collective: {
      if (!s.arrived) {
        arrive(s);
        const auto& c = collectives_[static_cast<std::size_t>(op.ref)];
        if (c.arrived < options_.world_size) dev.spin_start_ = s.arrival;  // waits for peers
      }
      const auto& c = collectives_[static_cast<std::size_t>(op.ref)];
      return c.arrived == options_.world_size ? c.start : -1;
    }
    case SimDevice::OpKind::Wait: {
      if (op.ref < 0) return s.ready;
      const TimeNs t = dev.instance_time_[static_cast<std::size_t>(op.ref)];
      return t < 0 ? -1 : std::max(s.ready, t);
    }
    default:
      return std::max(op.launch, s.ready);
  }
}

void SimCluster::drain() {
  if (abort_) return;
  for (;;) {
    SimDevice* best_dev = nullptr;
    SimDevice::Stream* best_stream = nullptr;
    TimeNs best = -1;
    bool pending = false;
    for (auto& dev : devices_) {
      for (auto& s : dev->streams_) {
        if (s.queue.empty()) continue;
        pending = true;
        const TimeNs t = headStart(*dev, s);
        if (t >= 0 && (best < 0 || t < best)) {
          best = t;
          best_dev = dev.get();
          best_stream = &s;
        }
      }
    }
    if (!pending) return;
    if (best_stream == nullptr) {
      const auto& f = options_.fault;
      if (f && devices_[static_cast<std::size_t>(f->rank)]->stopped_) {
        abortAfterFault();
        return;
      }
      throw std::logic_error(
          "simulated device: a collective cannot start because not every rank has launched it "
          "(launch the step on all ranks before synchronizing)");
    }
    best_dev->resolveHead(*best_stream, best);
  }
}

// Every rank but the faulted one is blocked: its communication stream waits in the collective the
// faulted rank never launched, its compute stream (at the latest) in the optimizer's wait for
// it. Each waiting rank's watchdog fires timeout_ns after its communication stream reached the
// collective; a hung rank's fires timeout_ns after it stopped; a dead rank has no watchdog.
void SimCluster::abortAfterFault() {
  const SimFault& f = *options_.fault;
  const auto n = static_cast<std::size_t>(options_.world_size);
  SimAbort a;
  a.fault = f;
  a.stop_ns = devices_[static_cast<std::size_t>(f.rank)]->stop_ns_;
  a.wait_start_ns.assign(n, -1);
  a.abort_ns.assign(n, -1);
  std::vector<SimDevice::Stream*> waiting(n, nullptr);
  for (std::int32_t r = 0; r < options_.world_size; ++r) {
    if (r == f.rank) continue;
    auto& dev = *devices_[static_cast<std::size_t>(r)];
    for (auto& s : dev.streams_) {
      if (!s.queue.empty() && s.queue.front().kind == SimDevice::OpKind::Collective)
        waiting[static_cast<std::size_t>(r)] = &s;
    }
    auto* s = waiting[static_cast<std::size_t>(r)];
    if (s == nullptr) {
      throw std::logic_error("simulated fault: rank " + std::to_string(r) +
                             " is blocked outside a collective");
    }
    const auto& op = s->queue.front();
    if (a.collective < 0) {
      a.collective = op.ref;
      a.bucket = op.bucket;
      a.step = op.step;
    } else if (op.ref != a.collective) {
      throw std::logic_error("simulated fault: the ranks wait in different collectives");
    }
    // The stream reached the collective when it was launched and the stream's earlier work ended.
    const TimeNs wait_start = std::max(op.launch, s->ready);
    a.wait_start_ns[static_cast<std::size_t>(r)] = wait_start;
    a.abort_ns[static_cast<std::size_t>(r)] = wait_start + f.timeout_ns;
    a.waiting_ranks.push_back(r);
  }
  if (f.kind == FaultKind::Hang)
    a.abort_ns[static_cast<std::size_t>(f.rank)] = a.stop_ns + f.timeout_ns;

  const std::string waiting_name = "waiting for rank " + std::to_string(f.rank) +
                                   " in the allreduce of bucket " + std::to_string(a.bucket) +
                                   " (simulated fault; aborted after --timeout-s)";
  for (std::int32_t r = 0; r < options_.world_size; ++r) {
    const auto ri = static_cast<std::size_t>(r);
    auto& dev = *devices_[ri];
    const TimeNs at = a.abort_ns[ri];
    if (waiting[ri] != nullptr) {
      // The wait on the communication stream, as a GPU range (not activity: it counts as neither
      // communication nor computation), and the host blocked in its synchronize until the abort.
      SimDevice::Op op;
      op.step = a.step;
      dev.addGpuEvent(*waiting[ri], EventKind::GpuAnnotation, dev.trace_.names.intern(waiting_name),
                      a.wait_start_ns[ri], f.timeout_ns, op);
      if (dev.host_ns_ < at) {
        dev.addHostEvent(EventKind::Runtime, dev.trace_.names.intern("cudaDeviceSynchronize"),
                         dev.host_ns_, at - dev.host_ns_, trace::kNoCorrelation);
      }
    } else if (r == f.rank && f.kind == FaultKind::Hang) {
      dev.addHostEvent(EventKind::UserAnnotation,
                       dev.trace_.names.intern("simulated fault: rank " + std::to_string(r) +
                                               " hangs (launches nothing more)"),
                       a.stop_ns, f.timeout_ns, trace::kNoCorrelation);
    }
    if (at >= 0) dev.endTraceAt(at);
    for (auto& s : dev.streams_) {
      s.queue.clear();
      s.open_ranges.clear();
      s.arrived = false;
    }
  }
  abort_ = std::move(a);
}

}  // namespace ddpscope::agent::sim
