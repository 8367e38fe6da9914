// The what-if predictor: the model of a recorded run and its replay (whatif.h, docs/WHATIF.md).
#include "app/analysis/whatif.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <unordered_map>

#include "app/analysis/collectives.h"
#include "app/analysis/stragglers.h"
#include "app/analysis/whatif_summary.h"

namespace ddpscope::analysis {

namespace {

using trace::EventKind;
using trace::TimeNs;
using trace::TrackKind;

constexpr double kUs = 1e-3;  // ns -> µs
constexpr TimeNs kNoLaunch = std::numeric_limits<TimeNs>::min();

std::string fmt(const char* f, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// A GPU event of one step on one rank.
struct StepEvent {
  TimeNs start = 0, end = 0;
  ActivityClass cls = ActivityClass::None;
  KernelRole role = KernelRole::Gradient;
  std::int32_t bucket = trace::kNoBucket;
  std::int64_t bytes = trace::kNoBytes;
  std::int64_t correlation = trace::kNoCorrelation;
  const std::string* name = nullptr;
  TimeNs launched = kNoLaunch;  // end of its launch call on the host
  EventKind kind = EventKind::Kernel;
};

struct HostCall {
  TimeNs start = 0, dur = 0;
  std::int64_t correlation = trace::kNoCorrelation;
  const std::string* name = nullptr;
};

// y at x on the broken line through points sorted by x, flat beyond the first and last.
double interpolate(const std::vector<std::pair<double, double>>& pts, double x) {
  if (pts.empty()) return 0;
  if (x <= pts.front().first) return pts.front().second;
  if (x >= pts.back().first) return pts.back().second;
  const auto hi = std::lower_bound(pts.begin(), pts.end(), x,
                                   [](const auto& p, double v) { return p.first < v; });
  const auto lo = hi - 1;
  const double w = hi->first > lo->first ? (x - lo->first) / (hi->first - lo->first) : 1;
  return lo->second + w * (hi->second - lo->second);
}

// The ranks not loaded, as one virtual peer: how long after this rank made each recorded bucket
// ready the last of them reached it. A bucket's allreduce could start its transfer only when
// they had all arrived, so they arrived at its end less its fitted cost; where that is later
// than the allreduce's own start it waited for them, and the lag is measured. Where it did not
// wait, they were there by its start: the lag is at most that, and is taken from the measured
// ones around it within that bound. `buckets`: (ready, allreduce start, allreduce end, fitted
// cost) per recorded bucket, relative µs. Returns the lag at each of `item_ends` (relative µs),
// or nothing when no allreduce waited.
std::vector<double> peerLags(const std::vector<std::array<double, 4>>& buckets,
                             const std::vector<double>& item_ends) {
  // A wait shorter than a tenth of the allreduce's cost (and 1 µs) is the envelope's noise: the
  // envelope keeps the fastest of each size, so most allreduces sit a little above it. Counted
  // as lag, it would turn this rank's own queueing (start - ready) into the peer's.
  constexpr double kWaitUs = 1.0, kWaitShare = 0.1;
  std::vector<std::pair<double, double>> known, bounded;
  for (const auto& [ready, start, end, cost] : buckets) {
    const double peer = end - cost;
    if (peer - start > std::max(kWaitUs, kWaitShare * cost))
      known.push_back({ready, peer - ready});
    else
      bounded.push_back({ready, std::max(0.0, start - ready)});
  }
  if (known.empty()) return {};
  // Points at one time (a recording without overlap: every bucket ready at backward's end) are
  // one point, the earliest arrival: the peer was ready for all of them then, and a later
  // bucket that seems to have waited longer waited for its own turn on the chain (or noise).
  // Sorted by time then lag, the first of each time is kept.
  const auto merged = [](std::vector<std::pair<double, double>> pts) {
    std::sort(pts.begin(), pts.end());
    std::vector<std::pair<double, double>> out;
    for (const auto& p : pts)
      if (out.empty() || out.back().first != p.first) out.push_back(p);
    return out;
  };
  known = merged(std::move(known));
  std::vector<std::pair<double, double>> all = known;
  for (const auto& [ready, bound] : bounded)
    all.push_back({ready, std::clamp(interpolate(known, ready), 0.0, bound)});
  all = merged(std::move(all));
  std::vector<double> out;
  out.reserve(item_ends.size());
  for (double t : item_ends)
    out.push_back(interpolate(all, t));
  return out;
}

// Every GPU event and host runtime call of one rank, binned by selected step.
struct RankSteps {
  std::vector<std::vector<StepEvent>> gpu;     // per selected step
  std::vector<std::vector<HostCall>> host;     // per selected step
  std::vector<const trace::StepRange*> range;  // per selected step
};

RankSteps binRank(const trace::RankTrace& rt, const RankActivity& act,
                  const std::vector<std::int32_t>& used) {
  RankSteps out;
  out.gpu.resize(used.size());
  out.host.resize(used.size());
  out.range.assign(used.size(), nullptr);
  std::vector<trace::StepRange> sorted;  // first range of each selected step
  std::vector<std::int32_t> sorted_index;
  for (std::size_t k = 0; k < used.size(); ++k) {
    for (const auto& s : rt.steps) {
      if (s.number == used[k]) {
        out.range[k] = &s;
        sorted.push_back(s);
        sorted_index.push_back(static_cast<std::int32_t>(k));
        break;
      }
    }
  }
  std::vector<std::size_t> order(sorted.size());
  for (std::size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return sorted[a].start < sorted[b].start; });
  std::vector<TimeNs> starts;
  for (auto i : order)
    starts.push_back(sorted[i].start);
  const auto containing = [&](TimeNs t) -> std::int32_t {
    // The selected step that starts last at or before t, when it still runs at t.
    auto pos = std::upper_bound(starts.begin(), starts.end(), t);
    if (pos == starts.begin()) return -1;
    const auto i = order[static_cast<std::size_t>(pos - starts.begin() - 1)];
    return t < sorted[i].end ? sorted_index[i] : -1;
  };
  std::unordered_map<std::int32_t, std::int32_t> by_number;
  for (std::size_t k = 0; k < used.size(); ++k)
    by_number[used[k]] = static_cast<std::int32_t>(k);
  std::unordered_map<std::int64_t, TimeNs> launch, launch_end;
  for (const auto& t : rt.tracks) {
    if (t.kind != TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto k = t.kind_of[i];
      if (k != EventKind::Runtime && k != EventKind::Driver) continue;
      if (t.correlation[i] != trace::kNoCorrelation) {
        launch.emplace(t.correlation[i], t.start[i]);
        launch_end.emplace(t.correlation[i], t.end(i));
      }
      const auto s = containing(t.start[i]);
      if (s >= 0)
        out.host[static_cast<std::size_t>(s)].push_back(
            {t.start[i], t.dur[i], t.correlation[i], &rt.names[t.name[i]]});
    }
  }
  // Roles by name, each name once (kernelRole reads the name).
  std::vector<std::int8_t> role_of(rt.names.size(), -1);
  for (std::size_t ti = 0; ti < rt.tracks.size(); ++ti) {
    const auto& t = rt.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    const bool filtered = ti < act.included.size() && !act.included[ti].empty();
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!trace::isGpuActivity(t.kind_of[i])) continue;
      if (filtered && act.included[ti][i] == 0) continue;
      const auto cls = act.classOf(ti, t.kind_of[i], t.name[i]);
      if (cls == ActivityClass::None || cls == ActivityClass::Other) continue;
      std::int32_t s = -1;
      if (t.step[i] != trace::kNoStep) {
        auto it = by_number.find(t.step[i]);
        s = it == by_number.end() ? -1 : it->second;
      } else if (auto it = launch.find(t.correlation[i]);
                 t.correlation[i] != trace::kNoCorrelation && it != launch.end()) {
        s = containing(it->second);
      } else {
        s = containing(t.start[i]);
      }
      if (s < 0) continue;
      const auto& name = rt.names[t.name[i]];
      TimeNs launched = kNoLaunch;
      if (t.correlation[i] != trace::kNoCorrelation) {
        if (auto it = launch_end.find(t.correlation[i]); it != launch_end.end())
          launched = it->second;
      }
      auto& role = role_of[t.name[i]];
      if (role < 0) role = static_cast<std::int8_t>(kernelRole(t.kind_of[i], cls, name));
      out.gpu[static_cast<std::size_t>(s)].push_back(
          {t.start[i], t.end(i), cls, static_cast<KernelRole>(role), t.bucket[i], t.bytes[i],
           t.correlation[i], &name, launched, t.kind_of[i]});
    }
  }
  for (auto& v : out.gpu)
    std::sort(v.begin(), v.end(), [](const StepEvent& a, const StepEvent& b) {
      return std::tie(a.start, a.end) < std::tie(b.start, b.end);
    });
  return out;
}

// Time of [start, end) covered by a sorted list of disjoint intervals.
TimeNs coveredBy(const IntervalSet& s, TimeNs start, TimeNs end) {
  return lengthWithin(s, start, end);
}

// The slowdown factor that best explains the durations of kernels that ran under communication
// by those of same-named kernels that did not (whatif.h, SlowdownFit).
struct SlowSample {
  double dur = 0, inside = 0;
  const std::vector<double>* unslowed = nullptr;
};

// Kernels are keyed by their rank's interned name (one table per rank): a kernel is set against
// the same kernel on its own rank, since a straggler's kernels are all slower and pooled with the
// others' they would pass for the others' slowed ones.
using KernelKey = const std::string*;
SlowdownFit fitSlowdown(std::map<KernelKey, std::vector<double>>& without,
                        const std::vector<std::pair<KernelKey, std::pair<double, double>>>& with) {
  SlowdownFit f;
  for (auto& [n, v] : without)
    std::sort(v.begin(), v.end());
  std::vector<SlowSample> samples;
  for (const auto& [name, p] : with) {
    auto it = without.find(name);
    if (it == without.end() || it->second.empty()) continue;
    samples.push_back({p.first, p.second, &it->second});
  }
  std::int64_t without_count = 0;
  for (const auto& [n, v] : without)
    without_count += static_cast<std::int64_t>(v.size());
  f.without_comm = static_cast<std::int32_t>(std::min<std::int64_t>(without_count, INT32_MAX));
  f.with_comm = static_cast<std::int32_t>(samples.size());
  if (samples.empty()) return f;
  constexpr int kSteps = 400;
  constexpr double kMax = 1.0;
  constexpr int kCoarse = 16;  // the coarse grid's stride
  constexpr double kUnknown = std::numeric_limits<double>::max();
  std::vector<double> cost(kSteps + 1, kUnknown);
  const auto evaluate = [&](int g) {
    if (cost[static_cast<std::size_t>(g)] != kUnknown) return;
    const double s = kMax * g / kSteps;
    double c = 0;
    for (const auto& x : samples) {
      const double base = (x.dur - x.inside) + x.inside / (1 + s);
      const auto& u = *x.unslowed;
      auto pos = std::lower_bound(u.begin(), u.end(), base);
      double best = std::numeric_limits<double>::max();
      if (pos != u.end()) best = std::abs(std::log(*pos / base));
      if (pos != u.begin()) best = std::min(best, std::abs(std::log(*std::prev(pos) / base)));
      c += std::min(best, 0.5);
    }
    cost[static_cast<std::size_t>(g)] = c;
  };
  // Coarse, then fine around the three best coarse points.
  std::vector<int> coarse;
  for (int g = 0; g <= kSteps; g += kCoarse) {
    evaluate(g);
    coarse.push_back(g);
  }
  std::sort(coarse.begin(), coarse.end(), [&](int a, int b) {
    return cost[static_cast<std::size_t>(a)] < cost[static_cast<std::size_t>(b)];
  });
  for (std::size_t k = 0; k < std::min<std::size_t>(3, coarse.size()); ++k)
    for (int g = std::max(0, coarse[k] - kCoarse); g <= std::min(kSteps, coarse[k] + kCoarse); ++g)
      evaluate(g);
  double lowest = kUnknown;
  for (double c : cost)
    lowest = std::min(lowest, c);
  const double tolerance = lowest * 0.01 + 1e-9 * static_cast<double>(samples.size());
  int lo = -1, hi = -1;
  for (int g = 0; g <= kSteps; ++g) {
    if (cost[static_cast<std::size_t>(g)] <= lowest + tolerance) {
      if (lo < 0) lo = g;
      hi = g;
    }
  }
  f.factor = kMax * 0.5 * (lo + hi) / kSteps;
  f.spread = kMax * 0.5 * (hi - lo) / kSteps;
  f.fitted = true;
  if (f.spread > 0.1) {
    // The durations do not single out a factor (e.g. only kernels of other shapes ran under
    // communication): no slowdown is assumed rather than a guess.
    f.fitted = false;
    f.factor = 0;
    f.spread = 0;
  }
  return f;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const auto n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

bool isSyncName(const std::string& n) {
  return n.find("Synchronize") != std::string::npos;
}
bool isEventApiName(const std::string& n) {
  return n.find("EventRecord") != std::string::npos ||
         n.find("StreamWaitEvent") != std::string::npos;
}

}  // namespace

bool recordedOverlap(const trace::Run& run) {
  return run.ranks.empty() || overlapSetting(run.ranks.front().ddpscope) != false;
}

WhatIfConfig whatIfBase(const trace::Run& run) {
  WhatIfConfig c;
  c.overlap = recordedOverlap(run);
  return c;
}

WhatIfModel buildWhatIfModel(const trace::Run& run, const RunReport& report,
                             const std::vector<RankActivity>& activities) {
  WhatIfModel m;
  m.selection = selectSteps(report);
  const RunSummary recorded = summarizeRun(report);
  m.recorded_step_us = static_cast<double>(recorded.step_ns) * kUs;
  m.recorded_overlap_pct = recorded.overlap_pct;
  m.recorded_exposed_us = static_cast<double>(recorded.exposed_ns_per_step) * kUs;
  if (run.ranks.empty() || report.ranks.size() != run.ranks.size() ||
      activities.size() != run.ranks.size()) {
    m.notes.push_back("no rank loaded: nothing to predict");
    return m;
  }
  const auto& first = run.ranks.front();
  if (run.source() == "predicted") {
    m.notes.push_back(
        "a predicted run is not predicted again: select the recorded run it was predicted from");
    return m;
  }
  m.world_size = std::max<std::int32_t>(1, report.completeness.world_size);
  if (m.world_size < 2) {
    m.notes.push_back(
        "the run has one rank: no communication to replay (predictions need a run of 2 or more "
        "ranks)");
    return m;
  }
  if (m.selection.whole_trace) {
    m.notes.push_back("no whole step on every rank: a step cannot be replayed (" +
                      m.selection.rule + ")");
    return m;
  }
  const bool metadata = first.ddpscope.present && !first.ddpscope.buckets.empty();
  m.per_tensor_known = metadata;
  m.optimizer_per_bucket = metadata;
  m.production_source = metadata ? "bucket metadata (parameters and sizes of each bucket)"
                                 : "inferred from allreduce kernels (bytes and ready times)";
  m.recorded_bucket_mb = configNumber(first.ddpscope, "bucket_mb");
  m.recorded_first_bucket_mb = configNumber(first.ddpscope, "first_bucket_mb");
  m.recorded_overlap = recordedOverlap(run);
  if (!metadata && !m.recorded_bucket_mb) {
    // PyTorch DDP's default, which an imported trace does not state.
    m.notes.push_back(
        "the trace does not say its bucket cap: the recorded configuration is replayed with its "
        "own buckets");
  }

  // ---- the communication cost ----
  std::map<CollectiveKind, std::pair<std::vector<double>, std::vector<double>>> pairs;
  bool matched = false;
  for (const auto& c : report.matched) {
    if (c.bytes < 0 || c.transfer_ns.empty()) continue;
    std::vector<double> t;
    for (std::size_t r = 0; r < c.transfer_ns.size(); ++r) {
      if (c.involves(r)) t.push_back(static_cast<double>(c.transfer_ns[r]) * kUs);  // its group
    }
    if (t.empty()) continue;
    pairs[c.kind].first.push_back(static_cast<double>(c.bytes) / 1048576.0);
    pairs[c.kind].second.push_back(median(t));
    matched = true;
  }
  if (!matched) {
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      const auto& rt = run.ranks[r];
      for (std::size_t ti = 0; ti < rt.tracks.size(); ++ti) {
        const auto& t = rt.tracks[ti];
        if (t.kind != TrackKind::Gpu) continue;
        for (std::size_t i = 0; i < t.size(); ++i) {
          if (t.bytes[i] < 0 || !trace::isGpuActivity(t.kind_of[i])) continue;
          if (activities[r].classOf(ti, t.kind_of[i], t.name[i]) != ActivityClass::Communication)
            continue;
          const auto kind = collectiveKindOfKernel(rt.names[t.name[i]]);
          pairs[kind].first.push_back(static_cast<double>(t.bytes[i]) / 1048576.0);
          pairs[kind].second.push_back(static_cast<double>(t.dur[i]) * kUs);
        }
      }
    }
  }
  for (const auto& [kind, xy] : pairs) {
    const LinearFit lf =
        matched ? fitLine(xy.first, xy.second) : fitLowerEnvelope(xy.first, xy.second);
    CommCostFit f;
    f.kind = kind;
    f.ranks = m.world_size;
    f.alpha_us = lf.intercept;
    f.beta_us_per_mib = lf.slope;
    f.samples = lf.samples;
    f.residual_rms_us = lf.residual_rms;
    f.residual_pct = 100.0 * lf.residual_rel;
    f.worst_residual_pct = 100.0 * lf.worst_rel;
    f.method = matched ? "matched transfer parts (last arrival to end)"
                       : "lower envelope of one rank's kernels (waits for ranks not loaded "
                         "cannot be separated)";
    f.includes_waits = !matched;
    if (kind == CollectiveKind::AllReduce) {
      std::vector<double> sizes = xy.first;
      std::sort(sizes.begin(), sizes.end());
      if (!sizes.empty() && std::unique(sizes.begin(), sizes.end()) == sizes.begin() + 1)
        m.notes.push_back("every allreduce of the run moved one message size (" +
                          fmt("%.3g", sizes.front()) +
                          " MiB): latency and bandwidth cannot be told apart, so the cost is "
                          "fitted through the origin (α 0) and other bucket sizes extrapolate it");
      // The allreduces of a job that shards its model too run in a group smaller than the world
      // (busbw_ranks in the summary): the replay's ring is the world's, and says so.
      std::set<std::int32_t> groups;
      for (const auto& rr : report.ranks)
        for (const auto& b : rr.buckets)
          if (b.bw_ranks > 0) groups.insert(b.bw_ranks);
      if (!groups.empty() && (groups.size() > 1 || *groups.begin() != m.world_size))
        m.notes.push_back(
            "the allreduces ran in process groups of " +
            (groups.size() == 1 ? std::to_string(*groups.begin()) + " ranks"
                                : std::string("different sizes")) +
            " within a world of " + std::to_string(m.world_size) +
            ": the replay's ring, its bus bandwidth and --world-size are over the world's ranks, "
            "while the summary's busbw is over each allreduce's group");
      const double p = m.world_size;
      f.ring_alpha_us = f.alpha_us / (2 * (p - 1));
      const auto factor = busBandwidthFactor(CollectiveKind::AllReduce, m.world_size);
      if (f.beta_us_per_mib > 0 && factor)
        f.busbw_gbps = *factor * 1048576.0 / (f.beta_us_per_mib * 1e3);
      m.comm.insert(m.comm.begin(), f);
    } else {
      m.comm.push_back(f);
    }
  }
  if (m.comm.empty() || m.comm.front().kind != CollectiveKind::AllReduce) {
    m.notes.push_back(
        "no allreduce with a known size: the communication cost cannot be fitted (the kernels "
        "need `In msg nelems` or ddpscope's byte counts)");
    return m;
  }
  if (const auto& f = m.comm.front(); f.includes_waits) {
    // Unmatched collectives (one rank's file of a larger run, or no cross-rank match): each
    // kernel's duration holds its wait for the last rank, which the data cannot tell apart from
    // the transfer; the lower envelope only takes the least-waiting sample of each size.
    std::string note = "the allreduce cost is fitted from whole kernel durations of " +
                       std::to_string(run.ranks.size()) + " loaded rank" +
                       (run.ranks.size() == 1 ? "" : "s") + " of " + std::to_string(m.world_size) +
                       " without matching them across ranks: each duration includes waiting for "
                       "the ranks that arrived later, which this trace cannot separate from the "
                       "transfer, so α (" +
                       fmt("%.1f", f.alpha_us) + " µs)";
    if (f.busbw_gbps)
      note += " and the bus bandwidth it implies (" + fmt("%.1f", *f.busbw_gbps) + " GB/s)";
    note += " describe this run's collectives, waiting included, not a measurement of the network";
    m.notes.push_back(std::move(note));
  }

  // ---- per rank and step: events, then the slowdown fit over all of them ----
  std::vector<RankSteps> binned;
  binned.reserve(run.ranks.size());
  for (std::size_t r = 0; r < run.ranks.size(); ++r)
    binned.push_back(binRank(run.ranks[r], activities[r], m.selection.used));
  {
    std::map<KernelKey, std::vector<double>> without;
    std::vector<std::pair<KernelKey, std::pair<double, double>>> with;
    constexpr std::size_t kMaxSamples = 5000;
    for (std::size_t r = 0; r < binned.size(); ++r) {
      for (const auto& evs : binned[r].gpu) {
        for (const auto& e : evs) {
          if (e.cls != ActivityClass::Computation || e.end <= e.start) continue;
          const auto inside = coveredBy(activities[r].comm, e.start, e.end);
          const auto dur = static_cast<double>(e.end - e.start) * kUs;
          if (inside == 0) {
            without[e.name].push_back(dur);
          } else if (inside * 2 >= e.end - e.start && with.size() < kMaxSamples) {
            with.push_back({e.name, {dur, static_cast<double>(inside) * kUs}});
          }
        }
      }
    }
    m.slowdown = fitSlowdown(without, with);
    if (!m.slowdown.fitted)
      m.notes.push_back(
          m.slowdown.with_comm == 0
              ? "no kernel ran both with and without communication: compute is assumed not to "
                "slow down under communication"
              : "the kernels that ran under communication do not determine a slowdown (too few "
                "of them, or of other sizes than those that ran without): compute is assumed not "
                "to slow down under communication");
  }
  const double s = m.slowdown.factor;

  // ---- the replay steps ----
  double shortest = std::numeric_limits<double>::max();
  std::vector<double> upd_x, upd_y;
  std::unordered_map<std::int32_t, const trace::BucketDef*> defs;
  for (const auto& d : first.ddpscope.buckets)
    defs.emplace(d.id, &d);
  m.steps.resize(m.selection.used.size());
  // One rank's file of a larger run, collectives unmatched: the other ranks are a virtual peer.
  const bool peers_not_loaded =
      m.comm.front().includes_waits && static_cast<std::int32_t>(run.ranks.size()) < m.world_size;
  for (std::size_t k = 0; k < m.selection.used.size(); ++k) {
    for (std::size_t r = 0; r < run.ranks.size(); ++r) {
      const auto* range = binned[r].range[k];
      if (range == nullptr) continue;
      const auto& evs = binned[r].gpu[k];
      ReplayStep st;
      st.step = m.selection.used[k];
      st.rank = run.ranks[r].rank;
      const TimeNs s0 = range->start;
      st.start_abs_us = static_cast<double>(s0) * kUs;
      st.recorded_us = static_cast<double>(range->end - range->start) * kUs;
      TimeNs last_gpu = s0;
      for (const auto& e : evs)
        last_gpu = std::max(last_gpu, e.end);
      st.tail_us = static_cast<double>(range->end - last_gpu) * kUs;
      st.recorded_gpu_end_us = static_cast<double>(last_gpu - s0) * kUs;
      const auto rel = [&](TimeNs t) { return static_cast<double>(t - s0) * kUs; };
      const auto base_of = [&](const StepEvent& e) {
        const double dur = static_cast<double>(e.end - e.start) * kUs;
        if (e.cls != ActivityClass::Computation || s <= 0) return dur;
        const double inside =
            static_cast<double>(coveredBy(activities[r].comm, e.start, e.end)) * kUs;
        return (dur - inside) + inside / (1 + s);
      };

      // Which communication kernels are buckets, which other collectives.
      std::vector<const StepEvent*> bucket_comm;
      std::vector<std::int32_t> recorded_ids;  // with the metadata: each recorded bucket's id
      const auto& rr = report.ranks[r];
      std::vector<const BucketReport*> inferred;
      if (!metadata) {
        for (const auto& b : rr.buckets)
          if (b.step == st.step) inferred.push_back(&b);
      }
      TimeNs last_bucket_comm_end = s0;
      for (const auto& e : evs) {
        if (e.cls != ActivityClass::Communication) continue;
        bool is_bucket = false;
        if (metadata) {
          is_bucket = e.bucket != trace::kNoBucket;
        } else {
          for (const auto* b : inferred)
            if (b->start_ns == e.start) is_bucket = true;
        }
        if (is_bucket) {
          bucket_comm.push_back(&e);
          last_bucket_comm_end = std::max(last_bucket_comm_end, e.end);
        } else {
          st.fixed_comm.push_back({rel(e.start), static_cast<double>(e.end - e.start) * kUs});
          st.fixed_comm_names.push_back(*e.name);
        }
      }
      if (bucket_comm.empty()) continue;
      st.allreduce_name = *bucket_comm.front()->name;

      // Segments: non-communication work merged where it runs concurrently; the optimizer's
      // per-bucket updates of the ddpscope loop are modelled by bucket instead.
      struct Seg {
        TimeNs start, end;
        double base;
        bool slowed;
        TimeNs launched;
        const StepEvent* named;  // its first computation event, else its first event
      };
      std::vector<Seg> segs;
      std::vector<std::int32_t> seg_of(evs.size(), -1);
      std::map<std::int32_t, double> update_us;  // recorded bucket -> its update work
      std::vector<TimeNs> update_launches;
      for (std::size_t i = 0; i < evs.size(); ++i) {
        const auto& e = evs[i];
        if (e.cls == ActivityClass::Communication) continue;
        if (e.cls == ActivityClass::Computation)
          shortest = std::min(shortest, static_cast<double>(e.end - e.start) * kUs);
        if (metadata && e.bucket != trace::kNoBucket &&
            (e.role == KernelRole::Optimizer || e.role == KernelRole::Unpack)) {
          update_us[e.bucket] += base_of(e);
          if (e.role == KernelRole::Optimizer && e.launched != kNoLaunch)
            update_launches.push_back(e.launched);
          if (e.role == KernelRole::Optimizer && m.update_name.empty()) m.update_name = *e.name;
          continue;
        }
        if (!segs.empty() && e.start < segs.back().end) {
          auto& g = segs.back();
          const double extra = static_cast<double>(std::max<TimeNs>(0, e.end - g.end)) * kUs;
          if (e.end > g.end) {
            const double frac = static_cast<double>(e.end - e.start) > 0
                                    ? extra / (static_cast<double>(e.end - e.start) * kUs)
                                    : 0;
            g.base += base_of(e) * frac;
            g.end = e.end;
          }
          if (!g.slowed && e.cls == ActivityClass::Computation) g.named = &e;
          g.slowed = g.slowed || e.cls == ActivityClass::Computation;
        } else {
          segs.push_back(
              {e.start, e.end, base_of(e), e.cls == ActivityClass::Computation, e.launched, &e});
        }
        seg_of[i] = static_cast<std::int32_t>(segs.size() - 1);
      }
      if (segs.empty()) continue;
      for (const auto& [b, us] : update_us) {
        if (auto it = defs.find(b); it != defs.end()) {
          upd_x.push_back(static_cast<double>(it->second->bytes) / 1048576.0);
          upd_y.push_back(us);
        }
      }

      // Gradient production.
      if (metadata) {
        std::map<std::int32_t, std::vector<std::int32_t>> grad_segs;  // bucket -> segs in order
        std::map<std::int32_t, std::int32_t> marker_seg;
        for (std::size_t i = 0; i < evs.size(); ++i) {
          const auto& e = evs[i];
          if (e.bucket == trace::kNoBucket || seg_of[i] < 0) continue;
          if (e.role == KernelRole::Gradient || e.role == KernelRole::Pack)
            grad_segs[e.bucket].push_back(seg_of[i]);
        }
        std::vector<const trace::BucketDef*> ordered;
        for (const auto& d : first.ddpscope.buckets)
          ordered.push_back(&d);
        std::sort(ordered.begin(), ordered.end(),
                  [](const auto* a, const auto* b) { return a->id < b->id; });
        for (const auto* d : ordered) {
          const auto& gs = grad_segs[d->id];
          std::vector<std::int32_t> grad_only;
          for (std::size_t i = 0; i < evs.size(); ++i)
            if (evs[i].bucket == d->id && evs[i].role == KernelRole::Gradient && seg_of[i] >= 0)
              grad_only.push_back(seg_of[i]);
          const std::int32_t last = gs.empty() ? -1 : *std::max_element(gs.begin(), gs.end());
          const bool one_each = grad_only.size() == d->params.size();
          for (std::size_t p = 0; p < d->params.size(); ++p) {
            ReplayTensor t;
            t.bytes = d->params[p].bytes;
            t.dtype = d->dtype.empty() ? "f32" : d->dtype;
            t.ready_item = one_each ? grad_only[p] : last;
            t.name = d->params[p].name;
            st.tensors.push_back(t);
          }
          st.recorded_bucket_tensors.push_back(static_cast<std::int32_t>(d->params.size()));
          recorded_ids.push_back(d->id);
        }
      } else {
        // Virtual tensors: each inferred bucket's bytes spread over the work since the previous
        // bucket became ready (the first bucket: all at its ready time).
        std::vector<const BucketReport*> bs = inferred;
        std::sort(bs.begin(), bs.end(),
                  [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
        std::int32_t prev = -1;
        bool sized = true;
        for (const auto* b : bs) {
          if (b->bytes < 0) sized = false;
          std::int32_t ready = -1;
          for (std::size_t g = 0; g < segs.size(); ++g)
            if (segs[g].end <= b->ready_ns) ready = static_cast<std::int32_t>(g);
          if (ready < 0) ready = 0;
          const std::int32_t from = (prev < 0 || ready <= prev) ? ready : prev + 1;
          double work = 0;
          for (std::int32_t g = from; g <= ready; ++g)
            work += segs[static_cast<std::size_t>(g)].base;
          std::int64_t left = std::max<std::int64_t>(0, b->bytes);
          std::int32_t n = 0;
          for (std::int32_t g = from; g <= ready; ++g) {
            ReplayTensor t;
            const double share =
                work > 0 ? segs[static_cast<std::size_t>(g)].base / work : (g == ready ? 1 : 0);
            t.bytes = g == ready ? left
                                 : std::min(left, static_cast<std::int64_t>(std::llround(
                                                      share * static_cast<double>(b->bytes))));
            left -= t.bytes;
            t.ready_item = g;
            if (t.bytes > 0 || g == ready) {
              st.tensors.push_back(t);
              ++n;
            }
          }
          st.recorded_bucket_tensors.push_back(n);
          prev = std::max(prev, ready);
        }
        if (!sized) {
          m.notes.push_back(
              "an allreduce without a size (no `In msg nelems`): its step is not "
              "replayed");
          continue;
        }
      }
      for (const auto& t : st.tensors)
        st.backward_end_item = std::max(st.backward_end_item, t.ready_item);
      if (st.backward_end_item < 0) continue;

      // Items, with the idle before each that no dependency explains.
      TimeNs prev_end = s0;
      for (std::size_t g = 0; g < segs.size(); ++g) {
        ReplayItem it;
        it.start_us = rel(segs[g].start);
        if (segs[g].launched != kNoLaunch) it.launch_us = rel(segs[g].launched);
        const TimeNs ready =
            segs[g].launched != kNoLaunch ? std::max(prev_end, segs[g].launched) : prev_end;
        it.base_us = segs[g].base;
        it.slowed = segs[g].slowed;
        it.name = *segs[g].named->name;
        it.kind = segs[g].named->kind;
        it.phase = static_cast<std::int32_t>(g) <= st.backward_end_item
                       ? ReplayItem::Phase::Backward
                       : ReplayItem::Phase::AfterBackward;
        it.gap_us = static_cast<double>(std::max<TimeNs>(0, segs[g].start - ready)) * kUs;
        if (it.phase == ReplayItem::Phase::AfterBackward && !metadata) {
          it.waits_all_comm = true;
          // It waited for the allreduces when it started as they ended.
          if (segs[g].start >= last_bucket_comm_end &&
              segs[g].start - last_bucket_comm_end < std::max<TimeNs>(2000, segs[g].start - ready))
            it.gap_us = 0;
        }
        prev_end = std::max(prev_end, segs[g].end);
        st.items.push_back(it);
      }

      // The host: its own time (the step less its waits for the GPU), and its cost per bucket.
      double bucket_host_us = 0;
      std::sort(update_launches.begin(), update_launches.end());
      const TimeNs first_update =
          update_launches.empty() ? std::numeric_limits<TimeNs>::max() : update_launches.front();
      const HostCall* last_sync = nullptr;
      std::unordered_map<std::int64_t, char> comm_corr;
      for (const auto* e : bucket_comm)
        if (e->correlation != trace::kNoCorrelation) comm_corr.emplace(e->correlation, 1);
      std::unordered_map<std::int64_t, char> upd_corr;
      for (const auto& e : evs)
        if (metadata && e.bucket != trace::kNoBucket &&
            (e.role == KernelRole::Optimizer || e.role == KernelRole::Unpack) &&
            e.correlation != trace::kNoCorrelation)
          upd_corr.emplace(e.correlation, 1);
      for (const auto& h : binned[r].host[k]) {
        if (isSyncName(*h.name)) {
          if (last_sync == nullptr || h.start > last_sync->start) last_sync = &h;
        } else if (comm_corr.contains(h.correlation) ||
                   (metadata && isEventApiName(*h.name) && h.start + h.dur <= first_update)) {
          bucket_host_us += static_cast<double>(h.dur) * kUs;
        }
      }
      const auto buckets_recorded = static_cast<double>(bucket_comm.size());
      st.host_per_bucket_us = bucket_host_us / buckets_recorded;
      if (!update_launches.empty()) {
        st.first_update_launch_us = rel(update_launches.front());
        if (update_launches.size() > 1) {
          st.host_per_update_us =
              static_cast<double>(update_launches.back() - update_launches.front()) * kUs /
              static_cast<double>(update_launches.size() - 1);
        }
      }
      if (last_sync != nullptr && last_sync->start + last_sync->dur >= last_gpu) {
        // The host waited for the GPU in its last synchronisation, which returned this long
        // after the GPU's last work (or after its own start, when there was nothing to wait for).
        const TimeNs ret = last_sync->start + last_sync->dur - std::max(last_sync->start, last_gpu);
        st.host_floor_us = rel(last_sync->start) + static_cast<double>(ret) * kUs;
        st.tail_us = static_cast<double>(ret) * kUs;
      } else {
        st.host_floor_us = st.recorded_us;
      }
      if (peers_not_loaded) {
        // Each recorded bucket with its one allreduce: by bucket id with the metadata (a bucket
        // with none or several in this step is left out), by start for inferred buckets (one
        // each, as inferred).
        std::vector<const StepEvent*> by_bucket;
        if (metadata) {
          for (const auto id : recorded_ids) {
            const StepEvent* only = nullptr;
            int n = 0;
            for (const auto* e : bucket_comm)
              if (e->bucket == id) {
                only = e;
                ++n;
              }
            by_bucket.push_back(n == 1 ? only : nullptr);
          }
        } else {
          by_bucket = bucket_comm;
          std::stable_sort(by_bucket.begin(), by_bucket.end(),
                           [](const auto* a, const auto* b) { return a->start < b->start; });
        }
        if (by_bucket.size() == st.recorded_bucket_tensors.size()) {
          const auto& fit = m.comm.front();
          std::vector<std::array<double, 4>> buckets;
          std::size_t at = 0;
          for (std::size_t b = 0; b < by_bucket.size(); ++b) {
            std::int32_t ready = -1;
            std::int64_t bytes = 0;
            for (std::int32_t i = 0; i < st.recorded_bucket_tensors[b]; ++i, ++at) {
              ready = std::max(ready, st.tensors[at].ready_item);
              bytes += st.tensors[at].bytes;
            }
            if (ready < 0 || by_bucket[b] == nullptr) continue;
            if (!m.recorded_overlap) ready = st.backward_end_item;
            buckets.push_back(
                {rel(segs[static_cast<std::size_t>(ready)].end), rel(by_bucket[b]->start),
                 rel(by_bucket[b]->end),
                 fit.alpha_us + fit.beta_us_per_mib * static_cast<double>(bytes) / 1048576.0});
          }
          std::vector<double> ends;
          ends.reserve(segs.size());
          for (const auto& g : segs)
            ends.push_back(rel(g.end));
          st.peer_lag_us = peerLags(buckets, ends);
          if (!st.peer_lag_us.empty())
            m.peer_lag_max_us =
                std::max(m.peer_lag_max_us.value_or(0),
                         *std::max_element(st.peer_lag_us.begin(), st.peer_lag_us.end()));
        }
      }
      m.steps[k].push_back(std::move(st));
    }
  }
  if (const double max_peer_lag_us = m.peer_lag_max_us.value_or(0); max_peer_lag_us > 0) {
    const std::int32_t others = m.world_size - static_cast<std::int32_t>(run.ranks.size());
    m.notes.push_back(
        (others == 1
             ? std::string("the rank not loaded is replayed as a peer")
             : "the " + std::to_string(others) + " ranks not loaded are replayed as one peer") +
        " that reaches each bucket as late as the recorded allreduces waited for it (up to " +
        fmt("%.1f", max_peer_lag_us / 1e3) + " ms after this rank made it ready, " +
        fmt("%.1f", (max_peer_lag_us + m.comm.front().alpha_us) / 1e3) +
        " ms with the fitted α read as lag), carried over to other bucket plans by when their "
        "buckets become ready; the fitted α may be lag as well (every allreduce may have waited), "
        "so the band spans α as fitted and α as lag");
  }
  std::erase_if(m.steps, [](const auto& v) { return v.empty(); });
  for (std::size_t i = 0; i < m.notes.size(); ++i)  // each note once
    if (std::find(m.notes.begin(), m.notes.begin() + static_cast<std::ptrdiff_t>(i), m.notes[i]) !=
        m.notes.begin() + static_cast<std::ptrdiff_t>(i))
      m.notes.erase(m.notes.begin() + static_cast<std::ptrdiff_t>(i--));
  m.shortest_kernel_us = shortest == std::numeric_limits<double>::max() ? 0 : shortest;
  if (metadata) m.update_cost = fitLine(upd_x, upd_y);
  if (m.steps.empty()) {
    m.notes.push_back("no selected step has bucket allreduces and compute: nothing to replay");
    return m;
  }
  m.usable = true;
  return m;
}

namespace {

// Progress at 1/(1 + s) while a communication interval (sorted, per rank) runs.
double stretchedEnd(const std::vector<std::pair<double, double>>& comm, double start, double work,
                    double s) {
  if (s <= 0 || comm.empty()) return start + work;
  double t = start, left = work;
  auto it = std::upper_bound(comm.begin(), comm.end(), start,
                             [](double x, const auto& iv) { return x < iv.second; });
  while (left > 0) {
    if (it == comm.end()) return t + left;
    if (t < it->first) {
      const double free = it->first - t;
      if (free >= left) return t + left;
      left -= free;
      t = it->first;
    }
    const double span = it->second - t;
    if (span > 0) {
      const double can = span / (1 + s);
      if (can >= left) return t + left * (1 + s);
      left -= can;
      t = it->second;
    }
    ++it;
  }
  return t;
}

struct RankRun {
  const ReplayStep* st = nullptr;
  double origin = 0;  // absolute start
  std::vector<double> item_end;
  std::size_t next = 0;
  double compute_t = 0;                         // absolute end of the last item
  std::vector<std::pair<double, double>> comm;  // absolute busy intervals, sorted
  double comm_free = 0;
  std::vector<std::pair<double, double>> compute;  // absolute compute intervals
  std::vector<double> shift;  // per item: its launch moved by the host's bucket calls
  double end_shift = 0;       // ... after backward
  std::map<std::int32_t, std::int32_t> calls_at;  // item -> bucket host calls after it so far
  ReplayedRankStep* out = nullptr;                // the schedule, when it is asked for
  void record(double start, double end, std::int32_t item, std::int32_t bucket) {
    if (out != nullptr) out->work.push_back({start, end, item, bucket});
  }
  // The earliest an item can start: after the previous one and its gap, and once launched.
  double earliest(std::size_t k) const {
    const auto& it = st->items[k];
    double t = compute_t + it.gap_us;
    if (it.launch_us != kNotLaunched) t = std::max(t, origin + it.launch_us + shift[k]);
    return t;
  }
};

struct StepOutcome {
  double step_us = 0;                                 // slowest rank
  double gpu_end_us = 0;                              // slowest rank
  double comm_us = 0, hidden_us = 0, exposed_us = 0;  // summed over ranks
  std::int32_t ranks = 0;
  std::int32_t buckets = 0;
  bool host_bound = false;
  std::vector<PredictedBucket> bucket_list;  // first rank
};

using Spans = std::vector<std::pair<double, double>>;

// The spans as a normalised union (sorted, disjoint): `in` itself when it already is one.
const Spans& normalised(const Spans& in, Spans& scratch) {
  bool normal = true;
  for (std::size_t i = 1; i < in.size() && normal; ++i)
    normal = in[i].first >= in[i - 1].second;
  if (normal) return in;
  scratch = in;
  std::sort(scratch.begin(), scratch.end());
  Spans out;
  out.reserve(scratch.size());
  for (const auto& x : scratch) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  scratch = std::move(out);
  return scratch;
}

double intersectLen(const Spans& a, const Spans& b) {
  Spans sa, sb;
  const auto& ua = normalised(a, sa);
  const auto& ub = normalised(b, sb);
  double len = 0;
  std::size_t i = 0, j = 0;
  while (i < ua.size() && j < ub.size()) {
    const double lo = std::max(ua[i].first, ub[j].first);
    const double hi = std::min(ua[i].second, ub[j].second);
    if (hi > lo) len += hi - lo;
    if (ua[i].second < ub[j].second)
      ++i;
    else
      ++j;
  }
  return len;
}
double unionLen(const Spans& a) {
  Spans scratch;
  double len = 0;
  for (const auto& x : normalised(a, scratch))
    len += std::max(0.0, x.second - x.first);
  return len;
}

StepOutcome replayStep(const WhatIfModel& m, const std::vector<ReplayStep>& ranks,
                       const WhatIfConfig& c, std::vector<ReplayedRankStep>* sched = nullptr) {
  StepOutcome out;
  const auto& fit = m.comm.front();
  const double p0 = m.world_size;
  const double p = c.world_size > 0 ? c.world_size : p0;
  const double lat = p0 > 1 ? (p - 1) / (p0 - 1) : 1;
  const double bw = p0 > 1 ? ((p - 1) / p) / ((p0 - 1) / p0) : 1;
  const double s = std::max(0.0, m.slowdown.factor + c.slowdown_delta);
  // One rank's file cannot tell the collective's latency from the other ranks' lag: the band's
  // other reading moves α into the lag.
  const bool alpha_as_lag =
      c.latency_as_lag && std::any_of(ranks.begin(), ranks.end(),
                                      [](const auto& st) { return !st.peer_lag_us.empty(); });
  const double alpha_us = alpha_as_lag ? 0.0 : fit.alpha_us;
  const double extra_lag_us = alpha_as_lag ? fit.alpha_us : 0.0;
  // The ranks not loaded lag by their compute: slower compute (compute_scale) stretches it.
  const double lag_scale = c.compute_scale;
  const auto comm_us = [&](std::int64_t bytes) {
    const double mib = static_cast<double>(bytes) / 1048576.0;
    return (alpha_us * lat + fit.beta_us_per_mib * mib * bw) * c.network_scale * (1 + c.comm_error);
  };
  // The ranks replayed: the first min(loaded, p) loaded ranks (a larger p adds no new ranks).
  std::size_t n = ranks.size();
  if (c.world_size > 0) n = std::min(n, static_cast<std::size_t>(c.world_size));
  std::vector<RankRun> rr(n);
  // The bucket plan (each rank's own tensors: the same list on every rank).
  std::vector<std::vector<std::vector<std::int32_t>>> plans(n);
  if (sched != nullptr) sched->assign(n, {});
  for (std::size_t r = 0; r < n; ++r) {
    auto& x = rr[r];
    x.st = &ranks[r];
    if (sched != nullptr) {
      x.out = &(*sched)[r];
      x.out->step = ranks[r].step;
      x.out->rank = ranks[r].rank;
      x.out->model_rank = r;
      x.out->start_us = ranks[r].start_abs_us;
    }
    x.origin = ranks[r].start_abs_us;
    x.item_end.assign(x.st->items.size(), 0);
    x.compute.reserve(x.st->items.size() + 64);
    x.compute_t = x.origin;
    for (const auto& [fs, fd] : x.st->fixed_comm) {
      const double a = x.origin + fs, b = a + fd * c.network_scale;
      x.comm.push_back({a, b});
      x.comm_free = std::max(x.comm_free, b);
      if (x.out != nullptr) x.out->fixed_comm.push_back({a, b});
    }
    std::sort(x.comm.begin(), x.comm.end());
    if (c.as_recorded) {
      std::int32_t at = 0;
      for (auto cnt : x.st->recorded_bucket_tensors) {
        std::vector<std::int32_t> b;
        for (std::int32_t i = 0; i < cnt; ++i)
          b.push_back(at++);
        plans[r].push_back(std::move(b));
      }
    } else {
      std::vector<GradTensor> gt;
      for (const auto& t : x.st->tensors)
        gt.push_back({t.bytes, t.dtype});
      const double first_mb = c.first_bucket_mb ? *c.first_bucket_mb : std::min(1.0, c.bucket_mb);
      plans[r] = planBuckets(gt, mibToBytes(c.bucket_mb), mibToBytes(first_mb));
    }
  }
  // Where the host spends its per-bucket calls: after the launch of the work that makes the
  // bucket ready (overlap), or after backward (no overlap); items launched later move.
  const auto ready_of = [](const ReplayStep& st, const std::vector<std::int32_t>& bucket) {
    std::int32_t k = -1;
    for (auto ti : bucket)
      k = std::max(k, st.tensors[static_cast<std::size_t>(ti)].ready_item);
    return k;
  };
  for (std::size_t r = 0; r < n; ++r) {
    auto& x = rr[r];
    const auto& st = *x.st;
    std::vector<std::int32_t> rec_pos, new_pos;
    std::int32_t at = 0;
    for (auto cnt : st.recorded_bucket_tensors) {
      std::vector<std::int32_t> b;
      for (std::int32_t i = 0; i < cnt; ++i)
        b.push_back(at++);
      rec_pos.push_back(m.recorded_overlap ? ready_of(st, b) : st.backward_end_item);
    }
    for (const auto& b : plans[r])
      new_pos.push_back(c.overlap ? ready_of(st, b) : st.backward_end_item);
    std::sort(rec_pos.begin(), rec_pos.end());
    std::sort(new_pos.begin(), new_pos.end());
    x.shift.assign(st.items.size(), 0);
    std::size_t i = 0, j = 0;
    for (std::size_t k = 0; k < st.items.size(); ++k) {
      while (i < rec_pos.size() && rec_pos[i] < static_cast<std::int32_t>(k))
        ++i;
      while (j < new_pos.size() && new_pos[j] < static_cast<std::int32_t>(k))
        ++j;
      x.shift[k] = st.host_per_bucket_us * (static_cast<double>(j) - static_cast<double>(i));
    }
    x.end_shift = st.host_per_bucket_us *
                  (static_cast<double>(new_pos.size()) - static_cast<double>(rec_pos.size()));
  }
  const auto advance = [&](RankRun& x, std::int32_t upto) {
    while (static_cast<std::int32_t>(x.next) <= upto && x.next < x.st->items.size()) {
      const auto& it = x.st->items[x.next];
      if (it.phase != ReplayItem::Phase::Backward) break;
      const double start = x.earliest(x.next);
      const double work = it.base_us * (it.slowed ? c.compute_scale : 1.0);
      const double end = it.slowed ? stretchedEnd(x.comm, start, work, s) : start + work;
      x.item_end[x.next] = end;
      if (it.slowed) x.compute.push_back({start, end});
      x.compute_t = end;
      x.record(start, end, static_cast<std::int32_t>(x.next), -1);
      ++x.next;
    }
  };
  const std::size_t buckets = plans.empty() ? 0 : plans.front().size();
  std::vector<std::vector<double>> ar_end(n, std::vector<double>(buckets, 0));
  double last_comm_end_all = 0;
  if (!c.overlap) {
    for (auto& x : rr)
      advance(x, x.st->backward_end_item);
  }
  for (std::size_t b = 0; b < buckets; ++b) {
    double start = 0;
    std::vector<double> arrival(n, 0);
    std::int64_t bytes = 0;
    for (std::size_t r = 0; r < n; ++r) {
      auto& x = rr[r];
      const auto& plan = plans[r];
      std::int32_t ready_item = -1;
      std::int64_t by = 0;
      if (b < plan.size()) {
        for (auto ti : plan[b]) {
          const auto& t = x.st->tensors[static_cast<std::size_t>(ti)];
          ready_item = std::max(ready_item, t.ready_item);
          by += t.bytes;
        }
      }
      if (r == 0) bytes = by;
      advance(x, c.overlap ? ready_item : x.st->backward_end_item);
      const double ready =
          c.overlap
              ? (ready_item >= 0 ? x.item_end[static_cast<std::size_t>(ready_item)] : x.origin)
              : x.item_end[static_cast<std::size_t>(std::max(0, x.st->backward_end_item))];
      arrival[r] = std::max(x.comm_free, ready);
      // The collective is launched at the end of its bucket's host calls, which follow the
      // launch of the work that made it ready (and those of earlier buckets there).
      const auto pos = c.overlap ? ready_item : x.st->backward_end_item;
      if (pos >= 0 && x.st->items[static_cast<std::size_t>(pos)].launch_us != kNotLaunched) {
        const auto at = static_cast<std::size_t>(pos);
        const double calls = ++x.calls_at[pos];
        arrival[r] = std::max(arrival[r], x.origin + x.st->items[at].launch_us + x.shift[at] +
                                              calls * x.st->host_per_bucket_us);
      }
      start = std::max(start, arrival[r]);
      // The ranks not loaded reach the bucket their recorded lag after this rank made it ready.
      if (const auto at = c.overlap ? ready_item : x.st->backward_end_item;
          at >= 0 && !x.st->peer_lag_us.empty())
        start = std::max(
            start,
            ready + (x.st->peer_lag_us[static_cast<std::size_t>(at)] + extra_lag_us) * lag_scale);
      if (r == 0) {
        PredictedBucket pb;
        pb.id = static_cast<std::int32_t>(b);
        pb.bytes = by;
        pb.tensors = b < plan.size() ? static_cast<std::int32_t>(plan[b].size()) : 0;
        pb.ready_us = ready - x.origin;
        out.bucket_list.push_back(pb);
      }
      if (x.out != nullptr) {
        ReplayedBucket rb;
        rb.id = static_cast<std::int32_t>(b);
        rb.bytes = by;
        if (b < plan.size()) rb.tensors = plan[b];
        rb.arrival_us = arrival[r];
        x.out->buckets.push_back(std::move(rb));
      }
    }
    const double end = start + comm_us(bytes);
    for (std::size_t r = 0; r < n; ++r) {
      auto& x = rr[r];
      x.comm.push_back({arrival[r], end});
      x.comm_free = end;
      ar_end[r][b] = end;
      if (x.out != nullptr) {
        x.out->buckets.back().start_us = start;
        x.out->buckets.back().end_us = end;
      }
    }
    out.bucket_list.back().start_us = start - rr[0].origin;
    out.bucket_list.back().end_us = end - rr[0].origin;
    last_comm_end_all = std::max(last_comm_end_all, end);
  }
  out.buckets = static_cast<std::int32_t>(buckets);
  for (std::size_t r = 0; r < n; ++r) {
    auto& x = rr[r];
    advance(x, std::numeric_limits<std::int32_t>::max());
    // The per-bucket optimizer of the ddpscope loop: each update waits for its allreduce.
    if (m.optimizer_per_bucket) {
      for (std::size_t b = 0; b < buckets; ++b) {
        std::int64_t by = 0;
        for (auto ti : plans[r][b])
          by += x.st->tensors[static_cast<std::size_t>(ti)].bytes;
        const double work =
            std::max(m.shortest_kernel_us, m.update_cost.intercept + m.update_cost.slope *
                                                                         static_cast<double>(by) /
                                                                         1048576.0) *
            c.compute_scale;
        double start = std::max(x.compute_t, ar_end[r][b]);
        if (x.st->first_update_launch_us != kNotLaunched)
          start = std::max(start, x.origin + x.st->first_update_launch_us + x.end_shift +
                                      static_cast<double>(b) * x.st->host_per_update_us);
        const double end = stretchedEnd(x.comm, start, work, s);
        x.compute.push_back({start, end});
        x.compute_t = end;
        x.record(start, end, -1, static_cast<std::int32_t>(b));
      }
    }
    double comm_end = x.comm_free;
    for (; x.next < x.st->items.size(); ++x.next) {
      const auto& it = x.st->items[x.next];
      double start = x.earliest(x.next);
      if (it.waits_all_comm) start = std::max(start, comm_end);
      const double work = it.base_us * (it.slowed ? c.compute_scale : 1.0);
      const double end = it.slowed ? stretchedEnd(x.comm, start, work, s) : start + work;
      x.item_end[x.next] = end;
      if (it.slowed) x.compute.push_back({start, end});
      x.compute_t = end;
      x.record(start, end, static_cast<std::int32_t>(x.next), -1);
    }
    const double gpu_end = std::max(x.compute_t, comm_end);
    out.gpu_end_us = std::max(out.gpu_end_us, gpu_end - x.origin);
    double step = gpu_end + x.st->tail_us - x.origin;
    const double floor =
        x.st->host_floor_us +
        (static_cast<double>(buckets) - static_cast<double>(x.st->recorded_bucket_tensors.size())) *
            (x.st->host_per_bucket_us + x.st->host_per_update_us);
    if (floor > step) {
      step = floor;
      out.host_bound = true;
      if (x.out != nullptr) x.out->host_bound = true;
    }
    if (x.out != nullptr) {
      x.out->end_us = x.origin + step;
      // Each item that completes a bucket names it (the last such bucket).
      std::vector<std::int32_t> completes(x.st->items.size(), -1);
      for (const auto& bk : x.out->buckets) {
        std::int32_t k = -1;
        for (auto ti : bk.tensors)
          k = std::max(k, x.st->tensors[static_cast<std::size_t>(ti)].ready_item);
        if (k >= 0) completes[static_cast<std::size_t>(k)] = bk.id;
      }
      for (auto& w : x.out->work)
        if (w.item >= 0) w.bucket = completes[static_cast<std::size_t>(w.item)];
    }
    out.step_us = std::max(out.step_us, step);
    const double cu = unionLen(x.comm);
    const double hid = intersectLen(x.comm, x.compute);
    out.comm_us += cu;
    out.hidden_us += hid;
    out.exposed_us += cu - hid;
    ++out.ranks;
  }
  return out;
}

}  // namespace

std::vector<std::vector<ReplayedRankStep>> replaySchedule(const WhatIfModel& model,
                                                          const WhatIfConfig& config) {
  std::vector<std::vector<ReplayedRankStep>> out;
  if (!model.usable) return out;
  out.resize(model.steps.size());
  for (std::size_t k = 0; k < model.steps.size(); ++k) {
    replayStep(model, model.steps[k], config, &out[k]);
    for (auto& r : out[k])
      r.model_step = k;
  }
  return out;
}

bool changesScenario(const WhatIfConfig& c, const WhatIfModel& m) {
  return c.first_bucket_mb || c.overlap != m.recorded_overlap ||
         (c.world_size != 0 && c.world_size != m.world_size) || c.network_scale != 1 ||
         c.compute_scale != 1;
}

std::optional<double> replayErrorPct(double predicted_us, double recorded_us) {
  if (!(recorded_us > 0)) return std::nullopt;
  return (predicted_us - recorded_us) / recorded_us * 100.0;
}

Prediction predictConfiguration(const WhatIfModel& model, const WhatIfConfig& config) {
  Prediction p;
  p.config = config;
  if (!model.usable) return p;
  // The mean over the first `limit` selected steps of the slowest rank's replayed step.
  const auto run = [&](const WhatIfConfig& c, bool keep, std::size_t limit) {
    double step = 0, comm = 0, hidden = 0, exposed = 0, gpu_end = 0;
    std::int32_t samples = 0;
    bool host = false;
    const std::size_t n = std::min(limit, model.steps.size());
    for (std::size_t k = 0; k < n; ++k) {
      auto o = replayStep(model, model.steps[k], c);
      step += o.step_us;
      gpu_end += o.gpu_end_us;
      comm += o.comm_us;
      hidden += o.hidden_us;
      exposed += o.exposed_us;
      samples += o.ranks;
      host = host || o.host_bound;
      if (keep && p.bucket_list.empty()) {
        p.bucket_list = std::move(o.bucket_list);
        p.buckets = o.buckets;
      }
    }
    if (keep) {
      if (comm > 0) p.overlap_pct = 100.0 * hidden / comm;
      p.exposed_comm_us = samples ? exposed / samples : 0;
      p.host_bound = host;
      p.gpu_end_us = gpu_end / static_cast<double>(n);
    }
    return step / static_cast<double>(n);
  };
  p.step_us = run(config, true, model.steps.size());
  // The band: the fit's relative residual on the communication cost and the spread of the
  // slowdown fit, replayed over a few steps and applied as a ratio to the prediction.
  constexpr std::size_t kBandSteps = 4;
  const double e = model.comm.front().residual_pct / 100.0;
  WhatIfConfig lo = config, hi = config;
  lo.comm_error = -e;
  hi.comm_error = e;
  lo.slowdown_delta = -model.slowdown.spread;
  hi.slowdown_delta = model.slowdown.spread;
  const double mid = model.steps.size() <= kBandSteps ? p.step_us : run(config, false, kBandSteps);
  const double a = run(lo, false, kBandSteps) / mid, b = run(hi, false, kBandSteps) / mid;
  // With ranks not loaded, their lag and the fitted α are one sum: the band spans both readings.
  double lag = 1.0;
  if (model.peer_lag_max_us) {
    WhatIfConfig as_lag = config;
    as_lag.latency_as_lag = true;
    lag = run(as_lag, false, kBandSteps) / mid;
  }
  p.step_us_low = p.step_us * std::min({a, b, lag, 1.0});
  p.step_us_high = p.step_us * std::max({a, b, lag, 1.0});
  return p;
}

std::string worldSizeExtrapolationNote(std::int32_t world_size, std::int32_t recorded) {
  if (world_size <= 0 || recorded <= 0 ||
      static_cast<std::int64_t>(world_size) <=
          static_cast<std::int64_t>(kWorldSizeExtrapolationFactor) * recorded)
    return {};
  return "world size " + std::to_string(world_size) + " is more than " +
         std::to_string(kWorldSizeExtrapolationFactor) + "× the recorded " +
         std::to_string(recorded) + " ranks: the α/β fit was measured at " +
         std::to_string(recorded) +
         " ranks and the prediction extrapolates it (the ring's latency and bandwidth terms), "
         "with no stragglers beyond the recorded ranks' skew; read it as an extrapolation, not "
         "a measurement";
}

WhatIfResult predictWhatIf(const trace::Run& run, const RunReport& report,
                           const std::vector<RankActivity>& activities,
                           const std::vector<WhatIfConfig>& configs) {
  WhatIfResult res;
  res.model = buildWhatIfModel(run, report, activities);
  const auto& m = res.model;
  res.base_step_us = m.recorded_step_us;
  res.base_bucket_mb = m.recorded_bucket_mb;
  res.notes = m.notes;
  if (!m.usable) return res;
  WhatIfConfig base;
  base.as_recorded = true;
  base.overlap = m.recorded_overlap;
  const auto replayed = predictConfiguration(m, base);
  res.base_predicted_step_us = replayed.step_us;
  res.base_predicted_overlap_pct = replayed.overlap_pct;
  res.base_predicted_exposed_us = replayed.exposed_comm_us;
  res.base_predicted_gpu_end_us = replayed.gpu_end_us;
  for (const auto& ranks : m.steps) {
    double slowest = 0;
    for (const auto& st : ranks)
      slowest = std::max(slowest, st.recorded_gpu_end_us);
    res.base_gpu_end_us += slowest / static_cast<double>(m.steps.size());
  }
  const auto err_pct = replayErrorPct(res.base_predicted_step_us, res.base_step_us);
  const double base_err = err_pct ? std::abs(*err_pct) / 100.0 : 0;
  for (const auto& c : configs) {
    if (c.bucket_mb == 0 && !m.per_tensor_known) {
      res.notes.push_back(
          "one allreduce per tensor (bucket size 0) left out: the trace has no parameter list, "
          "only the sizes of its buckets");
      continue;
    }
    auto p = predictConfiguration(m, c);
    p.step_us_low *= 1 - base_err;
    p.step_us_high *= 1 + base_err;
    res.predictions.push_back(std::move(p));
  }
  for (const auto& c : configs) {
    const auto note = worldSizeExtrapolationNote(c.world_size, m.world_size);
    if (!note.empty() && std::find(res.notes.begin(), res.notes.end(), note) == res.notes.end())
      res.notes.push_back(note);
  }
  // The best: the smallest predicted step; among equal ones (a nanosecond apart: every cap above
  // the model's size gives the same one bucket) the recorded size, else the first.
  for (std::size_t i = 0; i < res.predictions.size(); ++i)
    if (!res.best || res.predictions[i].step_us < res.predictions[*res.best].step_us - 1e-3)
      res.best = i;
  if (res.best && res.base_bucket_mb)
    for (std::size_t i = 0; i < res.predictions.size(); ++i)
      if (res.predictions[i].config.bucket_mb == *res.base_bucket_mb &&
          res.predictions[i].step_us <= res.predictions[*res.best].step_us + 1e-3 &&
          !changesScenario(res.predictions[i].config, m))
        res.best = i;
  // A straggler among the loaded ranks: every prediction replays its slower work, so the others
  // wait for it at every size; the bucket size does not remove that wait.
  // Only when every rank is loaded (else the late one may be missing) and its lateness matters:
  // the mean skew of the matched collectives above kWhatIfLatePeerPct of the step (a skew of a
  // few µs between clocks names no straggler worth the note).
  double skew_sum = 0;
  int skewed = 0;
  for (const auto& mc : report.matched)
    if (mc.skew_ns > 0) {
      skew_sum += static_cast<double>(mc.skew_ns) * 1e-3;
      ++skewed;
    }
  const bool late_matters = skewed > 0 && matchedSplitKnown(report) &&
                            skew_sum / skewed > kWhatIfLatePeerPct / 100.0 * res.base_step_us;
  if (const StragglerSummary st = summarizeStragglers(report); st.late_rank && late_matters)
    res.notes.push_back("rank " + std::to_string(*st.late_rank) + " started last at " +
                        std::to_string(st.late_count) + " of the " + std::to_string(st.skewed) +
                        " matched collectives with a skew: every prediction replays its slower "
                        "work, so the others wait for it at every bucket size; no size removes "
                        "that wait, only a faster rank " +
                        std::to_string(*st.late_rank) + " does");
  if (base_err > 0.03)
    res.notes.push_back("the replay of the recorded configuration is off by " +
                        fmt("%.1f", base_err * 100) +
                        " % of the recorded step time: read the predictions with that margin");
  return res;
}

}  // namespace ddpscope::analysis
