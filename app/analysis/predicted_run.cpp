#include "app/analysis/predicted_run.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "app/analysis/run_summary.h"
#include "app/analysis/whatif_summary.h"
#include "tracer/format/json_text.h"

namespace ddpscope::analysis {

namespace {

using trace::EventKind;
using trace::TimeNs;
using trace::TrackKind;

// Where the events go: one device, a host thread for the step ranges.
constexpr std::int64_t kDevice = 0;
constexpr std::int64_t kComputeStream = 7;
constexpr std::int64_t kBucketStream = 20;  // the allreduces of the buckets
constexpr std::int64_t kOtherCommStream = 21;
constexpr std::int64_t kHostPid = 1, kHostTid = 1;

TimeNs ns(double us) {
  return static_cast<TimeNs>(std::llround(us * 1e3));
}

std::string number(double v) {
  std::string s;
  trace::appendDouble(s, v, 6);
  return s;
}

void setConfig(trace::DdpscopeBlock& b, const std::string& key, std::string raw) {
  for (auto& [k, v] : b.config)
    if (k == key) {
      v = std::move(raw);
      return;
    }
  b.config.emplace_back(key, std::move(raw));
}

class Writer {
 public:
  explicit Writer(trace::RankTrace& rt) : rt_(rt) {}
  void add(TrackKind kind, std::int64_t pid, std::int64_t tid, EventKind ek,
           const std::string& name, double start_us, double end_us, std::int32_t step,
           std::int32_t bucket = trace::kNoBucket, std::int64_t bytes = trace::kNoBytes,
           TimeNs shift = 0) {
    auto& t = rt_.tracks[static_cast<std::size_t>(rt_.trackIndex(kind, pid, tid))];
    trace::EventRow e;
    e.start = ns(start_us) + shift;
    e.dur = std::max<TimeNs>(0, ns(end_us) + shift - e.start);
    e.name = rt_.names.intern(name);
    e.cat = rt_.names.intern(std::string(trace::categoryName(ek)));
    e.kind = ek;
    e.bucket = bucket;
    e.step = step;
    e.bytes = bytes;
    t.push(e);
  }

 private:
  trace::RankTrace& rt_;
};

}  // namespace

std::string predictedRunName(const std::string& recorded_name, const WhatIfConfig& config) {
  std::string s = recorded_name + (config.bucket_mb == 0 ? " predicted with " : " predicted at ") +
                  bucketSizeText(config.bucket_mb);
  char b[64];
  if (config.first_bucket_mb && *config.first_bucket_mb != std::min(1.0, config.bucket_mb)) {
    s += " (first " + mibNumberText(*config.first_bucket_mb) + " MiB)";
  }
  if (!config.overlap) s += ", no overlap";
  if (config.world_size > 0) s += ", " + std::to_string(config.world_size) + " ranks";
  if (config.network_scale != 1) {
    std::snprintf(b, sizeof b, ", network \u00d7%g", config.network_scale);
    s += b;
  }
  if (config.compute_scale != 1) {
    std::snprintf(b, sizeof b, ", compute \u00d7%g", config.compute_scale);
    s += b;
  }
  return s;
}

trace::Run predictedRun(const trace::Run& recorded, const WhatIfModel& model,
                        const WhatIfConfig& config) {
  if (!model.usable)
    throw std::invalid_argument("this run cannot be predicted: " +
                                (model.notes.empty()
                                     ? std::string("the what-if model is not usable")
                                     : model.notes.back()));
  const auto schedule = replaySchedule(model, config);
  trace::Run run;
  run.name = predictedRunName(recorded.name, config);
  run.base_time_ns = recorded.base_time_ns;

  // The shift of each replayed step: none, unless the previous step (replayed) would run into
  // it on some rank; every rank moves by the same amount so that their skew is kept.
  std::vector<TimeNs> shift(schedule.size(), 0);
  for (std::size_t k = 1; k < schedule.size(); ++k) {
    shift[k] = shift[k - 1];
    for (const auto& prev : schedule[k - 1])
      for (const auto& cur : schedule[k])
        if (cur.model_rank == prev.model_rank)
          shift[k] = std::max(shift[k], ns(prev.end_us) + shift[k - 1] - ns(cur.start_us));
  }

  const std::int32_t world = config.world_size > 0 ? config.world_size : model.world_size;
  const auto recorded_rank = [&](std::int32_t rank) -> const trace::RankTrace* {
    for (const auto& r : recorded.ranks)
      if (r.rank == rank) return &r;
    return nullptr;
  };
  // The replayed ranks, in model order (the first step names them).
  std::vector<std::int32_t> ranks;
  for (const auto& steps : schedule)
    for (const auto& rs : steps)
      if (std::find(ranks.begin(), ranks.end(), rs.rank) == ranks.end()) ranks.push_back(rs.rank);
  std::sort(ranks.begin(), ranks.end());

  for (const auto rank : ranks) {
    trace::RankTrace rt;
    rt.rank = rank;
    rt.world_size = world;
    rt.world_size_declared = true;
    const auto* src = recorded_rank(rank);
    if (src != nullptr) {
      rt.base_time_ns = src->base_time_ns;
      rt.device_properties_json = src->device_properties_json;
      rt.distributed_backend = src->distributed_backend;
      rt.ddpscope.config = src->ddpscope.config;
    }
    auto& b = rt.ddpscope;
    b.present = true;
    b.source = kPredictedSource;
    std::string from;
    trace::appendJsonString(from, recorded.name);
    setConfig(b, "predicted_from", from);
    setConfig(b, "bucket_mb", number(config.bucket_mb));
    setConfig(
        b, "first_bucket_mb",
        number(config.first_bucket_mb ? *config.first_bucket_mb : std::min(1.0, config.bucket_mb)));
    setConfig(b, "overlap", config.overlap ? "true" : "false");
    setConfig(b, "world_size", std::to_string(world));
    if (config.network_scale != 1) setConfig(b, "network_scale", number(config.network_scale));
    if (config.compute_scale != 1) setConfig(b, "compute_scale", number(config.compute_scale));
    rt.process_names[kHostPid] = "predicted host";
    rt.thread_names[{kHostPid, kHostTid}] = "step ranges (predicted)";
    rt.process_names[kDevice] = "predicted GPU";
    rt.thread_names[{kDevice, kComputeStream}] = "compute (predicted)";
    rt.thread_names[{kDevice, kBucketStream}] = "bucket allreduces (predicted)";
    rt.thread_names[{kDevice, kOtherCommStream}] = "other collectives (predicted)";
    Writer w(rt);

    bool first_step = true;
    for (std::size_t k = 0; k < schedule.size(); ++k) {
      for (const auto& rs : schedule[k]) {
        if (rs.rank != rank) continue;
        const auto& st = model.steps[rs.model_step][rs.model_rank];
        const TimeNs d = shift[k];
        if (first_step && model.steps.size() >= 2 && !model.selection.warm_up.empty() &&
            src != nullptr) {
          // The warm-up step, not replayed: its recorded range, so that it is left out again.
          for (const auto& r : src->steps)
            if (r.number == model.selection.warm_up.front() && r.end <= ns(rs.start_us) + d) {
              auto& t = rt.tracks[static_cast<std::size_t>(
                  rt.trackIndex(TrackKind::Host, kHostPid, kHostTid))];
              trace::EventRow e;
              e.start = r.start;
              e.dur = r.end - r.start;
              e.name = rt.names.intern("ProfilerStep#" + std::to_string(r.number));
              e.cat = rt.names.intern(std::string(trace::categoryName(EventKind::UserAnnotation)));
              e.kind = EventKind::UserAnnotation;
              t.push(e);
              break;
            }
        }
        first_step = false;
        w.add(TrackKind::Host, kHostPid, kHostTid, EventKind::UserAnnotation,
              "ProfilerStep#" + std::to_string(rs.step), rs.start_us, rs.end_us, trace::kNoStep,
              trace::kNoBucket, trace::kNoBytes, d);
        double bw_start = 0, bw_end = 0;
        bool bw = false;
        for (const auto& wk : rs.work) {
          if (wk.item >= 0) {
            const auto& it = st.items[static_cast<std::size_t>(wk.item)];
            const EventKind ek = it.slowed ? EventKind::Kernel : it.kind;
            const std::string& name =
                it.name.empty() ? std::string(it.slowed ? "compute" : "Memcpy") : it.name;
            w.add(TrackKind::Gpu, kDevice, kComputeStream, ek, name, wk.start_us, wk.end_us,
                  rs.step, wk.bucket, trace::kNoBytes, d);
            if (wk.item <= st.backward_end_item) {
              bw_start = bw ? std::min(bw_start, wk.start_us) : wk.start_us;
              bw_end = bw ? std::max(bw_end, wk.end_us) : wk.end_us;
              bw = true;
            }
          } else {
            w.add(TrackKind::Gpu, kDevice, kComputeStream, EventKind::Kernel,
                  model.update_name.empty() ? std::string("optimizer update") : model.update_name,
                  wk.start_us, wk.end_us, rs.step, wk.bucket, trace::kNoBytes, d);
          }
        }
        if (bw)
          w.add(TrackKind::Gpu, kDevice, kComputeStream, EventKind::GpuAnnotation, "backward",
                bw_start, bw_end, rs.step, trace::kNoBucket, trace::kNoBytes, d);
        const std::string& ar = st.allreduce_name.empty()
                                    ? std::string("ncclDevKernel_AllReduce_Sum_f32_RING_LL")
                                    : st.allreduce_name;
        for (const auto& bk : rs.buckets)
          w.add(TrackKind::Gpu, kDevice, kBucketStream, EventKind::Kernel, ar, bk.arrival_us,
                bk.end_us, rs.step, model.per_tensor_known ? bk.id : trace::kNoBucket, bk.bytes, d);
        for (std::size_t i = 0; i < rs.fixed_comm.size(); ++i)
          w.add(TrackKind::Gpu, kDevice, kOtherCommStream, EventKind::Kernel,
                i < st.fixed_comm_names.size() ? st.fixed_comm_names[i]
                                               : std::string("ncclDevKernel_Broadcast_RING_LL"),
                rs.fixed_comm[i].first, rs.fixed_comm[i].second, rs.step, trace::kNoBucket,
                trace::kNoBytes, d);
        // The bucket plan, from the first replayed step.
        if (model.per_tensor_known && b.buckets.empty()) {
          for (const auto& bk : rs.buckets) {
            trace::BucketDef def;
            def.id = bk.id;
            def.bytes = bk.bytes;
            for (auto ti : bk.tensors) {
              const auto& t = st.tensors[static_cast<std::size_t>(ti)];
              if (def.dtype.empty()) def.dtype = t.dtype;
              def.params.push_back({t.name, t.bytes});
            }
            b.buckets.push_back(std::move(def));
          }
        }
      }
    }
    trace::canonicalize(rt);
    run.ranks.push_back(std::move(rt));
  }
  return run;
}

}  // namespace ddpscope::analysis
