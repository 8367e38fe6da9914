#include "analysis.h"

#include "app/analysis/collectives.h"
#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/step_breakdown.h"
#include "tracer/format/memory.h"
#include "tracer/format/parallel.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>

namespace ddpscope::analysis {

using trace::EventKind;
using trace::RankTrace;
using trace::Track;
using trace::TrackKind;

std::string_view violationKindName(Violation::Kind k) {
  switch (k) {
    case Violation::Kind::AllreduceBeforeReady:
      return "allreduce_before_ready";
    case Violation::Kind::UpdateBeforeAllreduce:
      return "update_before_allreduce";
    case Violation::Kind::OverwriteBeforeAllreduce:
      return "overwrite_before_allreduce";
  }
  return "";
}

namespace {

// Builds a union from several tracks, each visited in start order.
class UnionBuilder {
 public:
  // `track_events`: how many events the track has, the most its union can hold (reserved up
  // front: room never written stays virtual).
  void add(std::int32_t track, TimeNs start, TimeNs end, std::size_t track_events) {
    if (track != track_) {
      flush();
      track_ = track;
      trace::reserveAdvised(current_, track_events);
    }
    extendUnion(current_, start, end);
  }
  IntervalSet finish() {
    flush();
    return uniteAll(std::move(parts_));
  }

 private:
  void flush() {
    // Room reserved for a whole track and used for a few intervals (a class that runs there
    // rarely) is given back: the allocator may hand out reused, resident memory, and the parts
    // can be kept for the run's life.
    if (current_.capacity() > 2 * current_.size() + 64) current_.shrink_to_fit();
    if (!current_.empty()) parts_.push_back(std::move(current_));
    current_.clear();
  }
  std::int32_t track_ = -1;
  IntervalSet current_;
  std::vector<IntervalSet> parts_;
};

struct ClassUnions {
  UnionBuilder comm, compute, memory, other, all;
  void add(ActivityClass c, std::int32_t track, TimeNs s, TimeNs e, std::size_t track_events) {
    switch (c) {
      case ActivityClass::Communication:
        comm.add(track, s, e, track_events);
        break;
      case ActivityClass::Computation:
        compute.add(track, s, e, track_events);
        break;
      case ActivityClass::Memory:
        memory.add(track, s, e, track_events);
        break;
      case ActivityClass::Other:
        other.add(track, s, e, track_events);
        break;
      case ActivityClass::None:
        return;
    }
    all.add(track, s, e, track_events);
  }
};

double pct(TimeNs part, TimeNs whole) {
  return whole > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

class RankAnalyzer {
 public:
  RankAnalyzer(const RankTrace& r, const AnalysisOptions& o)
      : r_(r), options_(o), classes_(std::make_shared<ClassCache>(o.rules, r)) {}

  RankActivity activity();
  // What activity() returns before its unions are built: the classes and the included events,
  // all that hostActivity reads of it.
  RankActivity activityShell();
  void buildUnions(RankActivity& a);
  RankReport report(RankActivity* keep_activity = nullptr);

 private:
  void prepare();
  // Every GPU event's class into the cache, and each name's kernel role: the cache is only read
  // after prepare(), by the parts of report() that run side by side among others.
  void classifyGpuEvents();
  // a() then b(), or both at once on two threads when the options allow a second one. They must
  // not write what the other reads or writes.
  template <typename A, typename B>
  void sideBySide(A&& a, B&& b) const {
    if (trace::threadsFor(options_.threads, 2) < 2) {
      a();
      b();
      return;
    }
    trace::forEachIndex(2, 2, [&](std::size_t part) {
      if (part == 0) {
        a();
      } else {
        b();
      }
    });
  }
  bool included(std::size_t t, std::size_t i) const {
    return include_.empty() || include_[t][i] != 0;
  }
  ActivityClass classOf(const Track& t, std::size_t i) const {
    return classes_->get(static_cast<std::size_t>(&t - r_.tracks.data()), i).cls;
  }
  std::int32_t stepContaining(TimeNs t) const;
  // `hint`: where the previous lookup of the same track ended (LaunchTimes::find), or null.
  std::int32_t stepIndexOf(const Track& t, std::size_t i, std::size_t* hint = nullptr) const;
  void computeSteps(RankReport& out);
  void computeCollectives(RankReport& out, const IntervalSet& compute) const;
  void computeStreams(RankReport& out) const;
  void computeOurBuckets(RankReport& out, const IntervalSet& compute) const;
  void computeInferredBuckets(RankReport& out, const IntervalSet& compute) const;
  void finishBucket(BucketReport& b, const IntervalSet& compute) const;

  const RankTrace& r_;
  const AnalysisOptions& options_;
  bool prepared_ = false;
  std::shared_ptr<ClassCache> classes_;  // every event's class, by the options' rules
  std::vector<KernelRole> name_role_;    // role of a bucket-tagged event, by name (GPU events only)
  std::vector<std::vector<char>> include_;  // empty: everything included
  std::vector<trace::StepRange> steps_;     // steps in scope, sorted by start
  std::unordered_map<std::int32_t, std::int32_t> step_by_number_;
  LaunchTimes launch_ts_;                              // correlation -> host launch time
  HostActivity host_;                                  // for the steps' idle attribution
  std::vector<RankActivity::StepUnions> step_unions_;  // per step: its comm and compute
};

void RankAnalyzer::classifyGpuEvents() {
  name_role_.assign(r_.names.size(), KernelRole::Gradient);
  std::vector<char> known(r_.names.size(), 0);
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      (void)classes_->get(ti, i);  // filled here, only read from now on
      const auto n = t.name[i];
      if (known[n]) continue;
      known[n] = 1;
      const auto cls = classes_->get(ti, EventKind::Kernel, n).cls;
      name_role_[n] = kernelRole(EventKind::Kernel, cls, r_.names[n]);
    }
  }
}

void RankAnalyzer::prepare() {
  if (prepared_) return;
  prepared_ = true;
  steps_ = r_.steps;
  TimeNs cut = std::numeric_limits<TimeNs>::max();
  if (options_.hta_compat && !steps_.empty()) {
    cut = std::max_element(steps_.begin(), steps_.end(), [](const auto& a, const auto& b) {
            return a.start < b.start;
          })->start;
    std::erase_if(steps_, [cut](const trace::StepRange& s) { return s.start >= cut; });
  }
  bool need_launches = options_.hta_compat;
  if (!steps_.empty()) {
    for (std::size_t k = 0; k < steps_.size(); ++k) {
      step_by_number_.emplace(steps_[k].number, static_cast<std::int32_t>(k));
    }
    // Launch times place GPU work in steps, unless every GPU event says its step (our traces).
    for (const auto& t : r_.tracks) {
      if (t.kind != TrackKind::Gpu || need_launches) continue;
      need_launches = std::find(t.step.begin(), t.step.end(), trace::kNoStep) != t.step.end();
    }
  }
  if (need_launches) {
    sideBySide([&] { classifyGpuEvents(); }, [&] { launch_ts_ = LaunchTimes(r_, cut); });
  } else {
    classifyGpuEvents();  // no second thread started for nothing
  }
  if (options_.hta_compat) {
    include_.resize(r_.tracks.size());
    for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
      const auto& t = r_.tracks[ti];
      include_[ti].assign(t.size(), 0);
      if (t.kind != TrackKind::Gpu) continue;
      std::size_t hint = 0;
      for (std::size_t i = 0; i < t.size(); ++i) {
        include_[ti][i] = launch_ts_.find(t.correlation[i], &hint) ? 1 : 0;
      }
    }
  }
}

RankActivity RankAnalyzer::activity() {
  RankActivity a = activityShell();
  buildUnions(a);
  return a;
}

RankActivity RankAnalyzer::activityShell() {
  prepare();
  RankActivity a;
  a.classes = classes_;
  a.included = include_;
  return a;
}

void RankAnalyzer::buildUnions(RankActivity& a) {
  ClassUnions u;
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!included(ti, i)) continue;
      const auto c = classOf(t, i);
      if (c == ActivityClass::None) continue;
      a.counts[static_cast<std::size_t>(c)]++;
      // A synchronisation record is the host waiting: counted, but not GPU busy time.
      if (!trace::occupiesGpu(t.kind_of[i])) continue;
      u.add(c, static_cast<std::int32_t>(ti), t.start[i], t.end(i), t.size());
    }
  }
  a.comm = u.comm.finish();
  a.compute = u.compute.finish();
  a.memory = u.memory.finish();
  a.other = u.other.finish();
  a.all = u.all.finish();
}

std::int32_t RankAnalyzer::stepContaining(TimeNs t) const {
  auto it = std::upper_bound(steps_.begin(), steps_.end(), t,
                             [](TimeNs x, const trace::StepRange& s) { return x < s.start; });
  if (it == steps_.begin()) return -1;
  --it;
  return t < it->end ? static_cast<std::int32_t>(it - steps_.begin()) : -1;
}

std::int32_t RankAnalyzer::stepIndexOf(const Track& t, std::size_t i, std::size_t* hint) const {
  if (steps_.empty()) return -1;
  if (t.step[i] != trace::kNoStep) {
    auto it = step_by_number_.find(t.step[i]);
    return it == step_by_number_.end() ? -1 : it->second;
  }
  if (t.correlation[i] != trace::kNoCorrelation) {
    if (const TimeNs* launched = launch_ts_.find(t.correlation[i], hint))
      return stepContaining(*launched);
  }
  return stepContaining(t.start[i]);
}

}  // namespace

std::string skippedFilesWarning(const std::vector<std::string>& files, std::string_view verb) {
  std::string names;
  for (std::size_t i = 0; i < files.size() && i < 3; ++i)
    names += (i ? ", " : "") + std::filesystem::path(files[i]).filename().string();
  if (files.size() > 3) names += " and " + std::to_string(files.size() - 3) + " more";
  const bool one = files.size() == 1;
  return std::to_string(files.size()) + (one ? " trace file" : " trace files") +
         " beside the folder's rank-<r> files " + (one ? "was" : "were") + " not " +
         std::string(verb) + " (" + names + "); open such a file on its own to see it";
}

std::string unreadableFilesWarning(const std::vector<std::string>& whys) {
  std::string s = std::to_string(whys.size()) + " trace file" + (whys.size() == 1 ? "" : "s") +
                  " could not be read and " + (whys.size() == 1 ? "was" : "were") +
                  " left out, as asked: ";
  for (std::size_t i = 0; i < whys.size() && i < 3; ++i)
    s += (i ? "; " : "") + whys[i];
  if (whys.size() > 3) s += "; and " + std::to_string(whys.size() - 3) + " more";
  return s;
}

OverlapMetrics overlapMetrics(const IntervalSet& comm, const IntervalSet& compute,
                              const IntervalSet& all) {
  OverlapMetrics m;
  m.comm_ns = totalLength(comm);
  m.compute_ns = totalLength(compute);
  m.overlap_ns = intersectionLength(comm, compute);
  m.exposed_ns = m.comm_ns - m.overlap_ns;
  if (m.comm_ns > 0) m.overlap_pct = pct(m.overlap_ns, m.comm_ns);
  if (!all.empty()) {
    m.first_ns = all.front().start;
    m.last_ns = all.back().end;
    m.span_ns = m.last_ns - m.first_ns;
    m.busy_ns = totalLength(all);
    m.idle_ns = m.span_ns - m.busy_ns;
    if (m.span_ns > 0) {
      m.idle_pct = pct(m.idle_ns, m.span_ns);
      m.compute_pct = pct(m.compute_ns, m.span_ns);
      m.non_compute_pct = pct(m.span_ns - m.idle_ns - m.compute_ns, m.span_ns);
    }
  }
  return m;
}

namespace {

void RankAnalyzer::computeCollectives(RankReport& out, const IntervalSet& compute) const {
  struct Acc {
    CollectiveStats stats;
    BandwidthSum bw;
    std::vector<Interval> spans;
  };
  std::array<Acc, kCollectiveKindCount> by_kind;
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!included(ti, i)) continue;
      const auto& c = classes_->get(ti, i);
      if (c.cls != ActivityClass::Communication) continue;
      auto& acc = by_kind[static_cast<std::size_t>(c.kind)];
      acc.stats.kind = c.kind;
      ++acc.stats.count;
      if (t.bytes[i] >= 0) {
        acc.stats.bytes += t.bytes[i];
        ++acc.stats.sized;
        acc.stats.sized_dur_ns += t.dur[i];
        acc.bw.add(c.kind, t.bytes[i], t.dur[i],
                   collectiveRanks(r_.collectiveArgs(t.correlation[i]), r_.world_size));
      }
      acc.spans.push_back({t.start[i], t.end(i)});
    }
  }
  for (auto& acc : by_kind) {
    if (acc.stats.count == 0) continue;
    const IntervalSet u = unionOf(std::move(acc.spans));
    auto& st = acc.stats;
    st.comm_ns = totalLength(u);
    st.hidden_ns = intersectionLength(u, compute);
    st.exposed_ns = st.comm_ns - st.hidden_ns;
    if (st.comm_ns > 0) st.overlap_pct = pct(st.hidden_ns, st.comm_ns);
    if (st.sized > 0) {
      const Bandwidth bw = collectiveBandwidth(acc.bw);
      st.algbw_gbps = bw.algbw_gbps;
      st.busbw_gbps = bw.busbw_gbps;
      st.bw_ranks = acc.bw.ranks;
    }
    out.collectives.push_back(st);
  }
}

void RankAnalyzer::computeSteps(RankReport& out) {
  const std::size_t n = steps_.size();
  if (n == 0) return;
  std::vector<ClassUnions> per_step(n);
  std::vector<std::int32_t> allreduces(n, 0);
  std::vector<TimeNs> backward_end(n, std::numeric_limits<TimeNs>::min());
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    // A host range is projected onto every stream that ran a kernel it launched: backward
    // launches allreduces, so on a communication stream "backward" ends with the last of them.
    bool comm_track = false;
    for (std::size_t i = 0; i < t.size() && !comm_track; ++i) {
      comm_track = classOf(t, i) == ActivityClass::Communication;
    }
    std::size_t launch_hint = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.kind_of[i] == EventKind::GpuAnnotation) {
        // Our producers mark backward on the GPU exactly; Kineto's "## backward ##" is the
        // host range of the main thread and misses the autograd thread's kernels.
        if (!comm_track && r_.ddpscope.present && r_.names[t.name[i]] == "backward") {
          const auto s = stepIndexOf(t, i, &launch_hint);
          if (s >= 0) backward_end[s] = std::max(backward_end[s], t.end(i));
        }
        continue;
      }
      if (!included(ti, i)) continue;
      const auto c = classOf(t, i);
      if (c == ActivityClass::None) continue;
      const auto s = stepIndexOf(t, i, &launch_hint);
      if (s < 0 || !trace::occupiesGpu(t.kind_of[i])) continue;
      per_step[s].add(c, static_cast<std::int32_t>(ti), t.start[i], t.end(i), 0);
      if (c == ActivityClass::Communication && isAllreduceName(r_.names[t.name[i]])) {
        allreduces[s]++;
      }
    }
  }
  for (std::size_t s = 0; s < n; ++s) {
    StepReport st;
    st.step = steps_[s].number;
    st.start_ns = steps_[s].start;
    st.dur_ns = steps_[s].end - steps_[s].start;
    const auto comm = per_step[s].comm.finish();
    const auto compute = per_step[s].compute.finish();
    const auto all = per_step[s].all.finish();
    st.metrics = overlapMetrics(comm, compute, all);
    st.breakdown =
        stepBreakdown(st.start_ns, st.start_ns + st.dur_ns, comm, compute,
                      per_step[s].memory.finish(), per_step[s].other.finish(), all, host_);
    // Without communication the step would still take its compute, its copies and the host's
    // gaps; what it would not take is the communication nothing hid. (The GPU's busy time
    // would instead count a slow data loader or launch-bound code as a cost of data
    // parallelism: a one-rank run would not be 100 % efficient.)
    st.compute_critical_ns = std::max<TimeNs>(0, st.dur_ns - st.metrics.exposed_ns);
    // A step without GPU work has nothing data parallelism could cost: no figure (n/a).
    if (st.dur_ns > 0 && !all.empty()) {
      st.dp_efficiency = std::min(
          1.0, static_cast<double>(st.compute_critical_ns) / static_cast<double>(st.dur_ns));
    }
    st.allreduces = allreduces[s];
    if (!comm.empty()) {
      const TimeNs last_comm_end = comm.back().end;
      TimeNs bwd = backward_end[s];
      if (bwd == std::numeric_limits<TimeNs>::min()) {
        // Without a backward marker: the last bucket becomes ready when backward ends, so take
        // the end of the last compute that starts before the last allreduce starts.
        const TimeNs last_comm_start = comm.back().start;
        bwd = comm.back().start;
        for (auto it = compute.rbegin(); it != compute.rend(); ++it) {
          if (it->start < last_comm_start) {
            bwd = it->end;
            break;
          }
        }
      }
      st.exposed_tail_ns = std::max<TimeNs>(0, last_comm_end - bwd);
    }
    out.steps.push_back(st);
    step_unions_.push_back({comm, compute});
  }
}

void RankAnalyzer::finishBucket(BucketReport& b, const IntervalSet& compute) const {
  b.wait_ns = b.start_ns - b.ready_ns;
  b.exposed_ns = uncoveredLength(compute, b.start_ns, b.end_ns);
  const Bandwidth bw =
      collectiveBandwidth(CollectiveKind::AllReduce, b.bytes, b.end_ns - b.start_ns, b.bw_ranks);
  b.algbw_gbps = bw.algbw_gbps;
  b.busbw_gbps = bw.busbw_gbps;
}

void RankAnalyzer::computeOurBuckets(RankReport& out, const IntervalSet& compute) const {
  struct Acc {
    TimeNs ready = std::numeric_limits<TimeNs>::min();
    TimeNs ready_marker = std::numeric_limits<TimeNs>::min();
    TimeNs ar_start = std::numeric_limits<TimeNs>::max();
    TimeNs ar_end = std::numeric_limits<TimeNs>::min();
    TimeNs update_start = std::numeric_limits<TimeNs>::max();
    TimeNs write_start = std::numeric_limits<TimeNs>::max();  // first write into the bucket buffer
    std::int64_t ar_bytes = -1;
    std::int64_t device = 0, stream = 0;
  };
  const bool copy_fusion = r_.ddpscope.configValue("fusion") == "\"copy\"";
  std::map<std::pair<std::int32_t, std::int32_t>, Acc> acc;  // (step, bucket)
  // A bucket's events come one after another on a stream: the last (step, bucket) looked up is
  // usually the next one's too (a map's elements stay where they are).
  std::pair<std::int32_t, std::int32_t> last_key{};
  Acc* last = nullptr;
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.bucket[i] == trace::kNoBucket || !included(ti, i)) continue;
      const bool marker = t.kind_of[i] == EventKind::GpuAnnotation;
      const auto c = classOf(t, i);
      if (c == ActivityClass::None && !marker) continue;
      std::int32_t step = t.step[i];
      if (step == trace::kNoStep) {
        const auto s = stepIndexOf(t, i);
        step = s >= 0 ? steps_[static_cast<std::size_t>(s)].number : trace::kNoStep;
      }
      const std::pair<std::int32_t, std::int32_t> key{step, t.bucket[i]};
      if (last == nullptr || key != last_key) {
        last = &acc[key];
        last_key = key;
      }
      auto& a = *last;
      const KernelRole role = marker                              ? KernelRole::ReadyMarker
                              : c == ActivityClass::Communication ? KernelRole::Allreduce
                                                                  : name_role_[t.name[i]];
      switch (role) {
        case KernelRole::Allreduce:
          if (t.start[i] < a.ar_start) {
            a.device = t.pid;
            a.stream = t.tid;
          }
          a.ar_start = std::min(a.ar_start, t.start[i]);
          a.ar_end = std::max(a.ar_end, t.end(i));
          if (t.bytes[i] >= 0) a.ar_bytes = t.bytes[i];
          break;
        case KernelRole::Gradient:
          a.ready = std::max(a.ready, t.end(i));
          if (!copy_fusion) a.write_start = std::min(a.write_start, t.start[i]);
          break;
        case KernelRole::Pack:
          a.write_start = std::min(a.write_start, t.start[i]);
          break;
        case KernelRole::Optimizer:
          a.update_start = std::min(a.update_start, t.start[i]);
          break;
        case KernelRole::ReadyMarker:
          a.ready_marker = std::max(a.ready_marker, t.end(i));
          break;
        case KernelRole::Unpack:
          break;
      }
    }
  }
  std::unordered_map<std::int32_t, const trace::BucketDef*> defs;
  for (const auto& d : r_.ddpscope.buckets)
    defs.emplace(d.id, &d);
  for (const auto& [key, a] : acc) {
    if (a.ar_start == std::numeric_limits<TimeNs>::max()) continue;  // no allreduce seen
    BucketReport b;
    b.step = key.first;
    b.id = key.second;
    b.start_ns = a.ar_start;
    b.end_ns = a.ar_end;
    b.device = a.device;
    b.stream = a.stream;
    b.ready_ns = a.ready != std::numeric_limits<TimeNs>::min()          ? a.ready
                 : a.ready_marker != std::numeric_limits<TimeNs>::min() ? a.ready_marker
                                                                        : a.ar_start;
    if (auto it = defs.find(b.id); it != defs.end()) {
      b.bytes = it->second->bytes;
      b.tensors = static_cast<std::int32_t>(it->second->params.size());
    } else {
      b.bytes = a.ar_bytes;
    }
    b.bw_ranks = r_.world_size;
    finishBucket(b, compute);
    out.buckets.push_back(b);
    if (a.ready != std::numeric_limits<TimeNs>::min() && a.ar_start < a.ready) {
      out.violations.push_back(
          {Violation::Kind::AllreduceBeforeReady, b.step, b.id, a.ar_start, a.ready,
           "step " + std::to_string(b.step) + ", bucket " + std::to_string(b.id) +
               ": allreduce started before the bucket's gradients were "
               "written (missing wait of the communication stream)"});
    }
    if (a.update_start != std::numeric_limits<TimeNs>::max() && a.update_start < a.ar_end) {
      out.violations.push_back(
          {Violation::Kind::UpdateBeforeAllreduce, b.step, b.id, a.update_start, a.ar_end,
           "step " + std::to_string(b.step) + ", bucket " + std::to_string(b.id) +
               ": optimizer update started before the bucket's allreduce "
               "ended (missing wait of the compute stream)"});
    }
    // The next step must not write this bucket's buffer before this allreduce has read it.
    auto next = acc.find({key.first + 1, key.second});
    if (key.first != trace::kNoStep && next != acc.end() &&
        next->second.write_start != std::numeric_limits<TimeNs>::max() &&
        next->second.write_start < a.ar_end) {
      out.violations.push_back(
          {Violation::Kind::OverwriteBeforeAllreduce, key.first + 1, b.id, next->second.write_start,
           a.ar_end,
           "step " + std::to_string(key.first + 1) + ", bucket " + std::to_string(b.id) +
               ": backward wrote the bucket before the previous step's allreduce of it ended"});
    }
  }
}

void RankAnalyzer::computeInferredBuckets(RankReport& out, const IntervalSet& compute) const {
  // Launch order of compute work per device: (correlation, end), for "ready" inference.
  std::map<std::int64_t, std::vector<std::pair<std::int64_t, TimeNs>>> compute_by_device;
  struct Allreduce {
    std::int32_t step_index;
    TimeNs start, end;
    std::int64_t bytes, correlation, device, stream;
  };
  std::vector<Allreduce> ars;
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!included(ti, i)) continue;
      const auto c = classOf(t, i);
      if (c == ActivityClass::Computation && t.correlation[i] != trace::kNoCorrelation) {
        compute_by_device[t.pid].emplace_back(t.correlation[i], t.end(i));
      } else if (c == ActivityClass::Communication && isAllreduceName(r_.names[t.name[i]])) {
        ars.push_back(
            {stepIndexOf(t, i), t.start[i], t.end(i), t.bytes[i], t.correlation[i], t.pid, t.tid});
      }
    }
  }
  for (auto& [dev, v] : compute_by_device) {
    std::sort(v.begin(), v.end());
    for (std::size_t k = 1; k < v.size(); ++k)
      v[k].second = std::max(v[k].second, v[k - 1].second);
  }
  std::sort(ars.begin(), ars.end(), [](const Allreduce& a, const Allreduce& b) {
    return std::tie(a.step_index, a.start) < std::tie(b.step_index, b.start);
  });
  std::int32_t ordinal = 0;
  for (std::size_t k = 0; k < ars.size(); ++k) {
    const auto& ar = ars[k];
    if (k == 0 || ars[k - 1].step_index != ar.step_index) ordinal = 0;
    BucketReport b;
    b.inferred = true;
    b.step = ar.step_index >= 0 ? steps_[static_cast<std::size_t>(ar.step_index)].number
                                : trace::kNoStep;
    b.id = ordinal++;
    b.bytes = ar.bytes;
    b.start_ns = ar.start;
    b.end_ns = ar.end;
    b.device = ar.device;
    b.stream = ar.stream;
    b.ready_ns = ar.start;
    // Ready: the end of the last compute work launched before this allreduce (the
    // communication stream waits on an event recorded after it).
    auto it = compute_by_device.find(ar.device);
    if (ar.correlation != trace::kNoCorrelation && it != compute_by_device.end()) {
      const auto& v = it->second;
      auto pos = std::lower_bound(v.begin(), v.end(), std::make_pair(ar.correlation, TimeNs{0}),
                                  [](const auto& x, const auto& y) { return x.first < y.first; });
      if (pos != v.begin()) b.ready_ns = std::min(std::prev(pos)->second, ar.start);
    }
    b.bw_ranks = collectiveRanks(r_.collectiveArgs(ar.correlation), r_.world_size);
    finishBucket(b, compute);
    out.buckets.push_back(b);
  }
}

void RankAnalyzer::computeStreams(RankReport& out) const {
  for (std::size_t ti = 0; ti < r_.tracks.size(); ++ti) {
    const auto& t = r_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    StreamReport s;
    s.device = t.pid;
    s.stream = t.tid;
    std::array<TimeNs, kActivityClassCount> busy{};
    UnionLength u;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!included(ti, i)) continue;
      const auto c = classOf(t, i);
      if (c == ActivityClass::None) continue;
      s.counts[static_cast<std::size_t>(c)]++;
      if (!trace::occupiesGpu(t.kind_of[i])) continue;  // a sync: the host waiting
      busy[static_cast<std::size_t>(c)] += t.dur[i];
      u.add(t.start[i], t.end(i));
    }
    std::int64_t total = 0;
    for (auto n : s.counts)
      total += n;
    if (total == 0) continue;
    s.busy_ns = u.total();
    // Collectives make a communication stream, or a mixed one when computation runs there too
    // (one stream for both: not a communication stream alone). Otherwise what runs there most
    // often: a compute stream that also does one long copy stays "compute" (busy time said "copy").
    std::size_t top = 1;
    for (std::size_t c = 2; c < static_cast<std::size_t>(kActivityClassCount); ++c) {
      if (s.counts[c] > s.counts[top] || (s.counts[c] == s.counts[top] && busy[c] > busy[top]))
        top = c;
    }
    static constexpr StreamRole kRole[] = {StreamRole::Communication, StreamRole::Compute,
                                           StreamRole::Copy, StreamRole::Sync};
    s.role = s.counts[0] == 0  ? kRole[top]
             : s.counts[1] > 0 ? StreamRole::Mixed
                               : StreamRole::Communication;
    out.streams.push_back(s);
  }
}

RankReport RankAnalyzer::report(RankActivity* keep_activity) {
  prepare();
  RankReport out;
  out.rank = r_.rank;
  out.world_size = r_.world_size;
  out.world_size_declared = r_.world_size_declared;
  out.source = std::string(r_.source());
  out.bucket_setting = bucketSettingText(r_.ddpscope);
  out.overlap_setting = overlapSetting(r_.ddpscope);
  out.path = r_.path;
  out.incomplete = r_.ddpscope.incomplete;
  out.dropped_records = r_.ddpscope.dropped_records;
  out.warnings = r_.warnings;
  if (options_.hta_compat && r_.steps.empty()) {
    out.warnings.push_back(
        "--hta-compat: the trace has no ProfilerStep# ranges, so there is no last step to cut "
        "at; the figures cover all GPU work with a host launch");
  }

  // The host side (launch delays, data loading) reads only the events' classes (the cache, only
  // read since prepare()) and which are included (a.classes, a.included), not the unions that
  // buildUnions writes into the other members of `a`: worked out while they are built.
  RankActivity a = activityShell();
  const LaunchTimes* launches = launch_ts_.empty() ? nullptr : &launch_ts_;
  if (steps_.empty()) {
    buildUnions(a);
  } else {
    sideBySide([&] { buildUnions(a); }, [&] { host_ = hostActivity(r_, a, launches); });
  }
  out.counts = a.counts;
  out.whole = overlapMetrics(a.comm, a.compute, a.all);
  if (r_.eventCount() == 0) {
    out.warnings.push_back(
        "this trace holds no events at all: the profiler recorded nothing (was it stopped "
        "before its first step?), or this is not the file meant");
  } else if (std::all_of(a.counts.begin(), a.counts.end(), [](std::int64_t n) { return n == 0; })) {
    out.warnings.push_back(
        "no GPU activity (kernels, copies, syncs) in this trace, so there is nothing to measure: "
        "was the profiler run with CUDA activities (PyTorch: ProfilerActivity.CUDA)?");
  }

  // The steps (their unions and breakdowns) and the whole rank's collectives, streams and buckets
  // read the same columns and write different parts of `out`.
  sideBySide([&] { computeSteps(out); },
             [&] {
               computeCollectives(out, a.compute);
               computeStreams(out);
               if (r_.ddpscope.present && !r_.ddpscope.buckets.empty()) {
                 computeOurBuckets(out, a.compute);
               } else {
                 out.buckets_inferred = true;
                 computeInferredBuckets(out, a.compute);
               }
             });
  a.steps = std::move(step_unions_);
  if (keep_activity) *keep_activity = std::move(a);
  return out;
}

}  // namespace

RankActivity rankActivity(const RankTrace& rank, const AnalysisOptions& options) {
  RankAnalyzer analyzer(rank, options);
  return analyzer.activity();
}

RankReport analyzeRank(const RankTrace& rank, const AnalysisOptions& options,
                       RankActivity* activity) {
  RankAnalyzer analyzer(rank, options);
  return analyzer.report(activity);
}

ActivityClass RankActivity::classOf(std::size_t track, EventKind kind, trace::NameId name) const {
  return classes ? classes->get(track, kind, name).cls : ActivityClass::None;
}

std::optional<double> overlapPctWithin(const RankActivity& activity, TimeNs lo, TimeNs hi) {
  const auto comm = clip(activity.comm, lo, hi);
  const TimeNs c = totalLength(comm);
  if (c == 0) return std::nullopt;
  return pct(intersectionLength(comm, clip(activity.compute, lo, hi)), c);
}

std::int32_t collectiveRanks(const trace::CollectiveArgs* args, std::int32_t world_size) {
  return args != nullptr && args->group_size >= 1 ? args->group_size : world_size;
}

void BandwidthSum::add(CollectiveKind kind, std::int64_t b, TimeNs t, std::int32_t p) {
  bytes += b;
  time += t;
  if (const auto f = busBandwidthFactor(kind, p)) {
    bus_bytes += static_cast<double>(b) * *f;
    any_factor = true;
  }
  if (p >= 1) ranks = ranks == 0 || ranks == p ? p : -1;  // p 0: no world size said
}

Bandwidth collectiveBandwidth(const BandwidthSum& sum) {
  Bandwidth bw;
  if (sum.bytes < 0 || sum.time <= 0) return bw;
  const double t = static_cast<double>(sum.time);
  bw.algbw_gbps = static_cast<double>(sum.bytes) / t;  // B/ns = GB/s
  if (sum.any_factor) bw.busbw_gbps = sum.bus_bytes / t;
  return bw;
}

std::string busbwRanksNote(std::int32_t bw_ranks, std::int32_t world_size) {
  if (bw_ranks == 0 || bw_ranks == world_size) return "";
  if (bw_ranks < 0) return "process groups of different sizes";
  return "a process group of " + std::to_string(bw_ranks) + (bw_ranks == 1 ? " rank" : " ranks");
}

Bandwidth collectiveBandwidth(CollectiveKind kind, std::int64_t bytes, TimeNs time_ns,
                              std::int32_t ranks) {
  BandwidthSum sum;
  sum.add(kind, bytes, time_ns, ranks);
  return collectiveBandwidth(sum);
}

std::string_view bandwidthBasisText(BandwidthBasis basis) {
  return basis == BandwidthBasis::Transfer ? "transfer" : "kernel time, waits included";
}

std::string_view bandwidthBasisKey(BandwidthBasis basis) {
  return basis == BandwidthBasis::Transfer ? "transfer" : "kernel";
}

std::string streamText(std::int64_t stream) {
  return stream == -1 || stream == 0xFFFFFFFFll ? "none" : std::to_string(stream);
}

std::string rankWarning(std::int32_t rank, const std::string& warning) {
  const std::string prefix = "rank " + std::to_string(rank);
  if (warning.starts_with(prefix + " ")) return warning;
  return prefix + ": " + warning;
}

std::string rankRanges(const std::vector<std::int32_t>& sorted) {
  std::string s;
  for (std::size_t i = 0; i < sorted.size();) {
    std::size_t j = i;
    while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1)
      ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(sorted[i]);
    if (j > i) s += "-" + std::to_string(sorted[j]);
    i = j + 1;
  }
  return s;
}

bool recordedByDdpscope(const trace::RankTrace& rank) {
  // `convert` writes an imported trace with a ddpscope block whose source says "imported".
  return rank.ddpscope.present && rank.ddpscope.source != "imported";
}

std::string cutShortWarning(const std::vector<std::int32_t>& ranks) {
  const bool one = ranks.size() == 1;
  return std::string(one ? "the trace of rank " : "the traces of ranks ") + rankRanges(ranks) +
         (one ? " is cut short (its" : " are cut short (their") +
         " producer stopped before the run finished); the numbers cover only what was recorded";
}

void checkRunCompleteness(RunReport& out, bool written_by_ddpscope) {
  if (out.ranks.empty()) return;
  auto& c = out.completeness;
  std::set<std::int32_t> worlds, declared, present;
  for (std::size_t i = 0; i < out.ranks.size(); ++i) {
    const auto& r = out.ranks[i];
    worlds.insert(r.world_size);
    if (r.world_size_declared) declared.insert(r.world_size);
    present.insert(r.rank);
    if (r.incomplete) c.incomplete_ranks.push_back(r.rank);
  }
  std::sort(c.incomplete_ranks.begin(), c.incomplete_ranks.end());
  if (!c.incomplete_ranks.empty()) out.warnings.push_back(cutShortWarning(c.incomplete_ranks));
  c.missing_is_incomplete = written_by_ddpscope || out.ranks.size() > 1;
  if (declared.size() > 1) {  // a size the trace did not say is not a disagreement
    std::string list;
    for (auto w : declared)
      list += (list.empty() ? "" : ", ") + std::to_string(w);
    out.warnings.push_back("the traces disagree on the world size (" + list +
                           "): are they from one run? Open each run's files separately");
  }
  c.world_size = *worlds.rbegin();
  // A world of thousands with a few files loaded: list only what fits in a message.
  for (std::int32_t r = 0; r < c.world_size && c.missing_ranks.size() < 4096; ++r) {
    if (!present.contains(r)) c.missing_ranks.push_back(r);
  }
  if (!c.missing_ranks.empty()) {
    const auto n = static_cast<std::int32_t>(present.size());
    out.warnings.push_back(
        "only " + std::to_string(n) + " of " + std::to_string(c.world_size) +
        " ranks have a trace (missing: rank" + (c.missing_ranks.size() == 1 ? " " : "s ") +
        rankRanges(c.missing_ranks) + "); the numbers cover only the ranks loaded" +
        // Beside traces cut short, a rank that wrote none may be one that died first.
        (c.incomplete_ranks.empty()
             ? ""
             : std::string("; with the others' traces cut short, a rank without one may have "
                           "died before it could write it")));
  }
}

void firstQuietRank(RunReport& out, const std::vector<TimeNs>& base_time_ns) {
  auto& c = out.completeness;
  if (c.incomplete_ranks.empty() || base_time_ns.size() != out.ranks.size()) return;
  std::vector<std::pair<TimeNs, std::int32_t>> ends;  // (absolute end of GPU work, rank)
  for (std::size_t i = 0; i < out.ranks.size(); ++i) {
    const auto& r = out.ranks[i];
    if (r.whole.span_ns > 0 || r.whole.busy_ns > 0)
      ends.emplace_back(base_time_ns[i] + r.whole.last_ns, r.rank);
  }
  if (ends.size() < 2) return;
  std::sort(ends.begin(), ends.end());
  const TimeNs ahead = ends[1].first - ends[0].first;
  if (ahead < kFirstQuietMinNs) return;
  c.first_quiet_rank = ends[0].second;
  c.first_quiet_ahead_ns = ahead;
  out.warnings.push_back(
      "rank " + std::to_string(c.first_quiet_rank) + " went quiet first: its GPU work ends " +
      formatDuration(ahead) +
      " before any other rank's (by the traces' clocks: those of different hosts may differ by a "
      "millisecond or more); where a rank hangs or dies, the others run on until they wait for "
      "it in a collective, so look at what rank " +
      std::to_string(c.first_quiet_rank) + " did last");
}

RunReport analyzeRun(const trace::Run& run, const AnalysisOptions& options,
                     std::vector<RankActivity>* activities) {
  RunReport out;
  std::vector<RankActivity> local;  // what matching the collectives needs, when not asked for
  auto& acts = activities ? *activities : local;
  acts.assign(run.ranks.size(), {});
  // Each rank on its own (a thread each, as many at once as options.threads allows), written
  // to its own slot: the report does not depend on which finished first.
  out.ranks.resize(run.ranks.size());
  // The threads left over when there are fewer ranks than threads go to each rank's own parts.
  AnalysisOptions per_rank = options;
  per_rank.threads =
      std::max<unsigned>(1, trace::threadsFor(options.threads, ~std::size_t{0}) /
                                static_cast<unsigned>(std::max<std::size_t>(run.ranks.size(), 1)));
  trace::forEachIndex(run.ranks.size(), options.threads, [&](std::size_t i) {
    out.ranks[i] = analyzeRank(run.ranks[i], per_rank, &acts[i]);
    checkSerialization(run.ranks[i], acts[i], out.ranks[i]);
  });
  checkRunCompleteness(out, std::any_of(run.ranks.begin(), run.ranks.end(), recordedByDdpscope));
  {
    // Not in HTA's window, which drops each rank's work from its last step on: the ends it
    // leaves are those of the step before, alike on every rank.
    std::vector<TimeNs> bases;
    for (const auto& r : run.ranks)
      bases.push_back(r.base_time_ns);
    if (!options.hta_compat) firstQuietRank(out, bases);
  }
  if (options.rules) out.rules = options.rules->description();
  // In HTA's window when it cut a trace somewhere (a trace without ProfilerStep# is kept whole,
  // with a warning saying so).
  out.hta_window =
      options.hta_compat && std::any_of(acts.begin(), acts.end(),
                                        [](const RankActivity& a) { return !a.included.empty(); });
  matchCollectives(run, acts, out);
  splitStepExposed(out, acts);
  // The steps' unions served only that split: freed rather than kept for the run's life.
  for (auto& a : acts) {
    a.steps.clear();
    a.steps.shrink_to_fit();
  }
  if (!run.skipped_files.empty())
    out.warnings.push_back(skippedFilesWarning(run.skipped_files, "loaded"));
  if (!run.unreadable_files.empty())
    out.warnings.push_back(unreadableFilesWarning(run.unreadable_files));
  if (out.ranks.size() < 2) return out;
  // Stragglers: per (step, bucket), the rank whose bucket was ready last.
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::pair<TimeNs, std::int32_t>>>
      arrivals;
  for (const auto& r : out.ranks) {
    for (const auto& b : r.buckets)
      arrivals[{b.step, b.id}].emplace_back(b.ready_ns, r.rank);
  }
  for (auto& [key, v] : arrivals) {
    if (v.size() < 2) continue;
    std::sort(v.begin(), v.end());
    if (v.back().first == v.front().first) continue;  // all ranks ready together: no straggler
    StragglerReport s;
    s.step = key.first;
    s.bucket = key.second;
    s.last_rank = v.back().second;
    s.spread_ns = v.back().first - v.front().first;
    s.margin_ns = v.back().first - v[v.size() - 2].first;
    out.stragglers.push_back(s);
  }
  std::map<std::int32_t, std::vector<std::pair<TimeNs, std::int32_t>>> durations;
  for (const auto& r : out.ranks) {
    for (const auto& s : r.steps)
      durations[s.step].emplace_back(s.dur_ns, r.rank);
  }
  for (auto& [step, v] : durations) {
    StepSpread sp;
    sp.step = step;
    TimeNs sum = 0;
    sp.min_ns = v.front().first;
    sp.max_ns = v.front().first;
    sp.slowest_rank = v.front().second;  // the first rank may be the slowest
    for (const auto& [d, rank] : v) {
      sum += d;
      sp.min_ns = std::min(sp.min_ns, d);
      if (d > sp.max_ns) {
        sp.max_ns = d;
        sp.slowest_rank = rank;
      }
    }
    // Ranks that wait for each other in every allreduce take the same step time: then no
    // rank is the slowest here (the stragglers above say who made the others wait).
    if (sp.max_ns == sp.min_ns) sp.slowest_rank = -1;
    sp.mean_ns = sum / static_cast<TimeNs>(v.size());
    out.step_spread.push_back(sp);
  }
  return out;
}

}  // namespace ddpscope::analysis
