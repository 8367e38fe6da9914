// Brute-force oracles against the analysis, on real simulated runs of the agent.
//
// Every expected figure here is computed from the raw events of the traces by the simplest code
// that could be right: the class of an event from its kind and name, the covered time by a sweep
// over sorted interval endpoints (no interval sets), a bucket's allreduce and gradients from the
// events that carry its tag, an inferred bucket's ready time by scanning every compute kernel.
// The run-level figures follow docs/METRICS.md "Run summary" word for word. Nothing here calls
// into app/analysis except analyzeRun and summarizeRun, whose results are checked, and
// reportToJson, whose `run`, `stragglers`, `step_spread` and bucket fields must carry them.
//
// The fixtures are chosen so that plausible wrong variants differ (tests assert that they do):
// ranks take different step times (mean != slowest), three or more ranks reach a bucket at
// distinct times (margin != spread), the straggler is rank 0 in one run (a "first rank cannot be
// the slowest" bug), a rank is missing and a step is on some ranks only, and a rank lost a record
// (the ranks' communication totals differ: a mean of percentages is not the pooled figure).
// scripts/mutate checks that these tests fail when such a bug is put into the code.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "agent/run_agent.h"
#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"

using namespace ddpscope;
using trace::EventKind;
using trace::TimeNs;

namespace {

// ---------------------------------------------------------------------------------------------
// Raw events

enum class Cls { None, Comm, Compute, Memory, Other };

std::string lower(std::string s) {
  for (auto& c : s)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
bool has(const std::string& hay, const char* needle) {
  return lower(hay).find(needle) != std::string::npos;
}

// docs/METRICS.md "Classification", for the names a simulated run has.
Cls classOf(EventKind kind, const std::string& name) {
  switch (kind) {
    case EventKind::Memcpy:
    case EventKind::Memset:
      return Cls::Memory;
    case EventKind::Sync:
      return Cls::Other;
    case EventKind::Kernel:
      break;
    default:
      return Cls::None;
  }
  if (name.rfind("nccl", 0) == 0) return Cls::Comm;
  if (name.rfind("Memcpy", 0) == 0 || name.rfind("Memset", 0) == 0) return Cls::Memory;
  if (name.find("Sync") != std::string::npos) return Cls::Other;
  return Cls::Compute;
}

struct Ev {
  TimeNs start = 0, end = 0;
  Cls cls = Cls::None;
  bool work = true;            // false for a cuda_sync record: the host waiting, never busy time
  std::int32_t step = -1;      // the step number it belongs to, -1: none
  std::int32_t tag_step = -1;  // args.step as written
  std::int32_t bucket = -1;
  std::int64_t correlation = -1, device = 0, bytes = -1;
  std::string name;
};

// Every GPU activity of a rank, each with its step: its own step tag when the rank has that
// step; untagged events by the step range containing their host launch, else their start.
std::vector<Ev> gpuEvents(const trace::RankTrace& r) {
  std::set<std::int32_t> numbers;
  for (const auto& s : r.steps)
    numbers.insert(s.number);
  auto containing = [&](TimeNs t) {
    for (const auto& s : r.steps)
      if (s.start <= t && t < s.end) return s.number;
    return -1;
  };
  std::map<std::int64_t, TimeNs> launch;
  for (const auto& t : r.tracks) {
    if (t.kind != trace::TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i)
      if ((t.kind_of[i] == EventKind::Runtime || t.kind_of[i] == EventKind::Driver) &&
          t.correlation[i] >= 0)
        launch.emplace(t.correlation[i], t.start[i]);
  }
  std::vector<Ev> out;
  for (const auto& t : r.tracks) {
    if (t.kind != trace::TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      Ev e;
      e.name = r.names[t.name[i]];
      e.cls = classOf(t.kind_of[i], e.name);
      if (e.cls == Cls::None) continue;
      e.work = t.kind_of[i] != EventKind::Sync;
      e.start = t.start[i];
      e.end = t.start[i] + t.dur[i];
      e.bucket = t.bucket[i];
      e.correlation = t.correlation[i];
      e.device = t.pid;
      e.bytes = t.bytes[i];
      e.tag_step = t.step[i];
      if (r.steps.empty()) {
        e.step = -1;
      } else if (t.step[i] != trace::kNoStep) {
        e.step = numbers.count(t.step[i]) ? t.step[i] : -1;
      } else if (launch.count(e.correlation)) {
        e.step = containing(launch[e.correlation]);
      } else {
        e.step = containing(e.start);
      }
      out.push_back(e);
    }
  }
  return out;
}

// Time covered, by a sweep over the events' endpoints: at every instant, which classes run.
struct Cover {
  TimeNs comm = 0, compute = 0, hidden = 0, exposed = 0, busy = 0;
};
Cover cover(const std::vector<const Ev*>& evs) {
  std::vector<std::tuple<TimeNs, int, Cls>> marks;
  for (const Ev* e : evs) {
    if (e->end <= e->start || !e->work) continue;
    marks.emplace_back(e->start, +1, e->cls);
    marks.emplace_back(e->end, -1, e->cls);
  }
  std::sort(marks.begin(), marks.end(),
            [](const auto& a, const auto& b) { return std::get<0>(a) < std::get<0>(b); });
  Cover c;
  int comm = 0, compute = 0, any = 0;
  for (std::size_t k = 0; k < marks.size(); ++k) {
    const auto [t, d, cls] = marks[k];
    if (cls == Cls::Comm) comm += d;
    if (cls == Cls::Compute) compute += d;
    any += d;
    if (k + 1 == marks.size()) break;
    const TimeNs len = std::get<0>(marks[k + 1]) - t;
    if (comm > 0) c.comm += len;
    if (compute > 0) c.compute += len;
    if (comm > 0 && compute > 0) c.hidden += len;
    if (comm > 0 && compute == 0) c.exposed += len;
    if (any > 0) c.busy += len;
  }
  return c;
}

// Length of [lo, hi) during which no compute event runs: unit by unit between endpoints.
TimeNs uncovered(const std::vector<Ev>& evs, TimeNs lo, TimeNs hi) {
  std::vector<TimeNs> cuts = {lo, hi};
  for (const auto& e : evs)
    if (e.cls == Cls::Compute) {
      if (e.start > lo && e.start < hi) cuts.push_back(e.start);
      if (e.end > lo && e.end < hi) cuts.push_back(e.end);
    }
  std::sort(cuts.begin(), cuts.end());
  TimeNs gap = 0;
  for (std::size_t k = 0; k + 1 < cuts.size(); ++k) {
    const TimeNs a = cuts[k], b = cuts[k + 1];
    if (a == b) continue;
    bool covered = false;
    for (const auto& e : evs)
      covered = covered || (e.cls == Cls::Compute && e.start <= a && b <= e.end);
    if (!covered) gap += b - a;
  }
  return gap;
}

// ---------------------------------------------------------------------------------------------
// Per rank

struct StepFig {
  TimeNs dur = 0;
  Cover c;
  std::int32_t allreduces = 0;
};
struct BucketFig {
  TimeNs ready = 0, start = 0, end = 0, wait = 0, exposed = 0;
  std::int64_t bytes = -1;
  std::optional<double> algbw, busbw;
  bool over_transfer = false;  // the bandwidth is over the part after the last rank's arrival
};
struct RankFig {
  std::int32_t rank = 0;
  Cover whole;
  std::map<std::int32_t, StepFig> steps;                               // by step number
  std::map<std::pair<std::int32_t, std::int32_t>, BucketFig> buckets;  // (step, id)
};

std::optional<double> busbw(std::optional<double> algbw, std::int32_t p) {
  if (!algbw || p < 2) return std::nullopt;
  return *algbw * 2.0 * (p - 1) / p;
}

BucketFig finish(BucketFig b, const std::vector<Ev>& evs, std::int32_t world) {
  b.wait = b.start - b.ready;
  b.exposed = uncovered(evs, b.start, b.end);
  if (b.bytes >= 0 && b.end > b.start) b.algbw = double(b.bytes) / double(b.end - b.start);
  b.busbw = busbw(b.algbw, world);
  return b;
}

RankFig oracle(const trace::RankTrace& r) {
  RankFig f;
  f.rank = r.rank;
  const auto evs = gpuEvents(r);
  std::vector<const Ev*> all;
  for (const auto& e : evs)
    all.push_back(&e);
  f.whole = cover(all);
  for (const auto& s : r.steps) {
    std::vector<const Ev*> in;
    StepFig sf;
    sf.dur = s.end - s.start;
    for (const auto& e : evs) {
      if (e.step != s.number) continue;
      in.push_back(&e);
      if (e.cls == Cls::Comm && (has(e.name, "allreduce") || has(e.name, "all_reduce")))
        ++sf.allreduces;
    }
    sf.c = cover(in);
    f.steps[s.number] = sf;
  }
  if (!r.ddpscope.buckets.empty()) {
    // Our buckets: the allreduce and the gradient kernels are the events tagged with the bucket,
    // in the step their args.step names (even one the rank has no range for).
    std::map<std::pair<std::int32_t, std::int32_t>, BucketFig> acc;
    std::set<std::pair<std::int32_t, std::int32_t>> has_allreduce;
    for (const auto& e : evs) {
      if (e.bucket < 0) continue;
      const std::int32_t step = e.tag_step != trace::kNoStep ? e.tag_step : e.step;
      auto& b =
          acc.try_emplace({step, e.bucket}, BucketFig{-1, -1, -1, 0, 0, -1, {}, {}}).first->second;
      if (e.cls == Cls::Comm) {
        b.start = b.start < 0 ? e.start : std::min(b.start, e.start);
        b.end = std::max(b.end, e.end);
        has_allreduce.insert({step, e.bucket});
      } else if (e.cls == Cls::Compute && !has(e.name, "pack") && !has(e.name, "sgd") &&
                 !has(e.name, "update") && !has(e.name, "optim") && !has(e.name, "adam")) {
        b.ready = std::max(b.ready, e.end);
      }
    }
    for (auto [key, b] : acc) {
      if (!has_allreduce.count(key)) continue;
      for (const auto& d : r.ddpscope.buckets)
        if (d.id == key.second) b.bytes = d.bytes;
      EXPECT_GE(b.ready, 0) << "the fixture's buckets have gradient kernels";
      f.buckets[key] = finish(b, evs, r.world_size);
    }
  } else {
    // Inferred: each allreduce kernel is a bucket, numbered in start order within its step;
    // ready = the latest end of the device's compute kernels launched before it, at most its
    // start.
    std::map<std::int32_t, std::vector<const Ev*>> by_step;
    for (const auto& e : evs)
      if (e.cls == Cls::Comm && has(e.name, "allreduce")) by_step[e.step].push_back(&e);
    for (auto& [step, ars] : by_step) {
      std::sort(ars.begin(), ars.end(), [](auto* a, auto* b) { return a->start < b->start; });
      for (std::size_t k = 0; k < ars.size(); ++k) {
        const Ev& ar = *ars[k];
        BucketFig b;
        b.start = ar.start;
        b.end = ar.end;
        b.bytes = ar.bytes;
        b.ready = ar.start;
        std::optional<TimeNs> latest;
        for (const auto& e : evs)
          if (e.cls == Cls::Compute && e.device == ar.device && e.correlation >= 0 &&
              e.correlation < ar.correlation)
            latest = std::max(latest.value_or(e.end), e.end);
        if (latest && ar.correlation >= 0) b.ready = std::min(*latest, ar.start);
        f.buckets[{step, static_cast<std::int32_t>(k)}] = finish(b, evs, r.world_size);
      }
    }
  }
  return f;
}

void expectNear(const std::optional<double>& got, const std::optional<double>& want,
                const std::string& what) {
  ASSERT_EQ(got.has_value(), want.has_value()) << what;
  if (want) {
    EXPECT_NEAR(*got, *want, 1e-9 * std::max(1.0, std::abs(*want))) << what;
  }
}

void checkRank(const analysis::RankReport& rep, const trace::RankTrace& r, const RankFig& f) {
  const std::string who = "rank " + std::to_string(r.rank);
  EXPECT_EQ(rep.whole.comm_ns, f.whole.comm) << who;
  EXPECT_EQ(rep.whole.overlap_ns, f.whole.hidden) << who;
  EXPECT_EQ(rep.whole.exposed_ns, f.whole.exposed) << who;
  EXPECT_EQ(rep.whole.compute_ns, f.whole.compute) << who;
  EXPECT_EQ(rep.whole.busy_ns, f.whole.busy) << who;
  ASSERT_EQ(rep.steps.size(), f.steps.size()) << who;
  for (const auto& st : rep.steps) {
    const std::string at = who + ", step " + std::to_string(st.step);
    ASSERT_TRUE(f.steps.count(st.step)) << at;
    const StepFig& sf = f.steps.at(st.step);
    EXPECT_EQ(st.dur_ns, sf.dur) << at;
    EXPECT_EQ(st.metrics.comm_ns, sf.c.comm) << at;
    EXPECT_EQ(st.metrics.compute_ns, sf.c.compute) << at;
    EXPECT_EQ(st.metrics.overlap_ns, sf.c.hidden) << at;
    EXPECT_EQ(st.metrics.exposed_ns, sf.c.exposed) << at;
    EXPECT_EQ(st.metrics.busy_ns, sf.c.busy) << at;
    EXPECT_EQ(st.allreduces, sf.allreduces) << at;
    expectNear(st.metrics.overlap_pct,
               sf.c.comm > 0 ? std::optional(100.0 * double(sf.c.hidden) / double(sf.c.comm))
                             : std::nullopt,
               at + " overlap %");
    // DP efficiency: (step time - exposed communication) / step time.
    expectNear(st.dp_efficiency,
               std::optional(std::min(1.0, double(sf.dur - sf.c.exposed) / double(sf.dur))),
               at + " DP efficiency");
  }
  std::map<std::pair<std::int32_t, std::int32_t>, const analysis::BucketReport*> got;
  for (const auto& b : rep.buckets)
    got[{b.step, b.id}] = &b;
  ASSERT_EQ(got.size(), f.buckets.size()) << who;
  for (const auto& [key, want] : f.buckets) {
    const std::string at =
        who + ", step " + std::to_string(key.first) + ", bucket " + std::to_string(key.second);
    ASSERT_TRUE(got.count(key)) << at;
    const auto& b = *got[key];
    EXPECT_EQ(b.ready_ns, want.ready) << at;
    EXPECT_EQ(b.start_ns, want.start) << at;
    EXPECT_EQ(b.end_ns, want.end) << at;
    EXPECT_EQ(b.wait_ns, want.wait) << at;
    EXPECT_EQ(b.exposed_ns, want.exposed) << at;
    EXPECT_EQ(b.bytes, want.bytes) << at;
    expectNear(b.algbw_gbps, want.algbw, at + " algbw");
    expectNear(b.busbw_gbps, want.busbw, at + " busbw");
    EXPECT_EQ(b.bw_basis == analysis::BandwidthBasis::Transfer, want.over_transfer) << at;
  }
}

// ---------------------------------------------------------------------------------------------
// Across ranks and the run summary

struct RunFig {
  std::vector<RankFig> ranks;
  std::int32_t world = 0;
  std::vector<std::int32_t> missing, used, warm_up, partial;
  TimeNs step_ns = 0, exposed_per_step = 0, mean_wait = 0;
  std::optional<double> overlap_pct, dp_efficiency, gpu_idle_pct;
  double allreduces_per_step = 0;
  std::vector<analysis::StragglerReport> stragglers;
  std::vector<analysis::StepSpread> spread;
};

RunFig oracle(const trace::Run& run) {
  RunFig f;
  std::set<std::int32_t> present;
  for (const auto& r : run.ranks) {
    f.ranks.push_back(oracle(r));
    f.world = std::max(f.world, r.world_size);
    present.insert(r.rank);
  }
  for (std::int32_t r = 0; r < f.world; ++r)
    if (!present.count(r)) f.missing.push_back(r);
  // With every rank of the world loaded, a bucket that every rank has is one collective: its
  // bandwidth is over the part of each rank's allreduce after the last rank's start.
  if (f.missing.empty() && f.ranks.size() >= 2) {
    std::map<std::pair<std::int32_t, std::int32_t>, std::pair<std::size_t, TimeNs>> arrivals;
    for (const auto& rf : f.ranks) {
      for (const auto& [key, b] : rf.buckets) {
        auto& [count, last] = arrivals.try_emplace(key, 0, b.start).first->second;
        ++count;
        last = std::max(last, b.start);
      }
    }
    for (auto& rf : f.ranks) {
      for (auto& [key, b] : rf.buckets) {
        const auto& [count, last] = arrivals.at(key);
        if (count != f.ranks.size()) continue;
        const TimeNs transfer = b.end - std::clamp(last, b.start, b.end);
        b.algbw = b.bytes >= 0 && transfer > 0 ? std::optional(double(b.bytes) / double(transfer))
                                               : std::nullopt;
        b.busbw = busbw(b.algbw, f.world);
        b.over_transfer = true;
      }
    }
  }

  // Steps on every rank; the first of three or more is warm-up.
  std::map<std::int32_t, std::size_t> on;
  for (const auto& r : run.ranks)
    for (const auto& s : r.steps)
      on[s.number]++;
  for (const auto& [n, count] : on)
    (count == run.ranks.size() ? f.used : f.partial).push_back(n);
  if (f.used.size() >= 3) {
    f.warm_up = {f.used.front()};
    f.used.erase(f.used.begin());
  }

  // Σ over ranks × selected steps.
  TimeNs slowest_sum = 0, comm = 0, hidden = 0, exposed = 0, step_time = 0, idle = 0;
  std::int64_t allreduces = 0, samples = 0;
  for (std::int32_t n : f.used) {
    TimeNs slowest = 0;
    for (const auto& rf : f.ranks) {
      const StepFig& s = rf.steps.at(n);
      slowest = std::max(slowest, s.dur);
      comm += s.c.comm;
      hidden += s.c.hidden;
      exposed += s.c.exposed;
      step_time += s.dur;
      idle += std::max<TimeNs>(0, s.dur - s.c.busy);
      allreduces += s.allreduces;
      ++samples;
    }
    slowest_sum += slowest;
  }
  if (!f.used.empty()) {
    f.step_ns = slowest_sum / TimeNs(f.used.size());
    f.exposed_per_step = exposed / (TimeNs(run.ranks.size()) * TimeNs(f.used.size()));
    f.allreduces_per_step = double(allreduces) / double(samples);
    if (comm > 0) f.overlap_pct = 100.0 * double(hidden) / double(comm);
    if (step_time > 0) f.dp_efficiency = 1.0 - double(exposed) / double(step_time);
    if (step_time > 0) f.gpu_idle_pct = 100.0 * double(idle) / double(step_time);
    // Mean bucket wait: rank 0's (the first loaded rank's) buckets in the selected steps.
    TimeNs wait = 0, waits = 0;
    for (const auto& [key, b] : f.ranks.front().buckets)
      if (std::find(f.used.begin(), f.used.end(), key.first) != f.used.end()) {
        wait += b.wait;
        ++waits;
      }
    f.mean_wait = waits ? wait / waits : 0;
  }

  // Stragglers: per (step, bucket), the ready times across ranks.
  std::map<std::pair<std::int32_t, std::int32_t>, std::vector<std::pair<TimeNs, std::int32_t>>>
      ready;
  for (const auto& rf : f.ranks)
    for (const auto& [key, b] : rf.buckets)
      ready[key].push_back({b.ready, rf.rank});
  for (auto& [key, v] : ready) {
    if (v.size() < 2) continue;
    TimeNs first = v[0].first, last = v[0].first;
    std::int32_t last_rank = v[0].second;
    for (const auto& [t, rank] : v) {
      first = std::min(first, t);
      if (t > last) {
        last = t;
        last_rank = rank;
      }
    }
    if (first == last) continue;
    // Second-to-last: the latest arrival of the other ranks.
    TimeNs second = first;
    int at_last = 0;
    for (const auto& [t, rank] : v) {
      if (t == last) ++at_last;
      if (t < last) second = std::max(second, t);
    }
    EXPECT_EQ(at_last, 1) << "fixture: a tie for last would make last_rank ambiguous";
    f.stragglers.push_back({key.first, key.second, last_rank, last - first, last - second});
  }

  // Step spread: per step number, over the ranks that have it (in the run's rank order).
  std::map<std::int32_t, std::vector<std::pair<TimeNs, std::int32_t>>> durs;
  for (const auto& r : run.ranks)
    for (const auto& s : r.steps)
      durs[s.number].push_back({s.end - s.start, r.rank});
  for (const auto& [n, v] : durs) {
    analysis::StepSpread sp;
    sp.step = n;
    TimeNs sum = 0;
    sp.min_ns = sp.max_ns = v[0].first;
    for (const auto& [d, rank] : v) {
      sum += d;
      sp.min_ns = std::min(sp.min_ns, d);
      sp.max_ns = std::max(sp.max_ns, d);
    }
    for (const auto& [d, rank] : v)
      if (d == sp.max_ns) {
        sp.slowest_rank = rank;
        break;
      }
    if (sp.min_ns == sp.max_ns) sp.slowest_rank = -1;
    sp.mean_ns = sum / TimeNs(v.size());
    f.spread.push_back(sp);
  }
  return f;
}

// The JSON of `ddpscope-cli summary --json` (reportToJson) against the oracle: times are
// microseconds with three decimals (whole ns), ratios rounded to the documented decimals.
namespace dom = simdjson::dom;
double num(dom::element e, const char* key) {
  double v = 0;
  EXPECT_EQ(e[key].get_double().get(v), simdjson::SUCCESS) << key;
  return v;
}
std::int64_t integer(dom::element e, const char* key) {
  std::int64_t v = -999;
  EXPECT_EQ(e[key].get_int64().get(v), simdjson::SUCCESS) << key;
  return v;
}
TimeNs nanos(dom::element e, const char* key) {
  return static_cast<TimeNs>(std::llround(num(e, key) * 1000.0));
}
void expectJson(dom::element e, const char* key, const std::optional<double>& want, int decimals) {
  if (!want) {
    EXPECT_TRUE(e[key].is_null()) << key;
  } else {
    EXPECT_NEAR(num(e, key), *want, 0.5 * std::pow(10.0, -decimals) + 1e-9) << key;
  }
}

dom::array arr(dom::element e, const char* key) {
  dom::array a;
  EXPECT_EQ(e[key].get_array().get(a), simdjson::SUCCESS) << key;
  return a;
}
std::vector<std::int32_t> ints(dom::element e, const char* key) {
  std::vector<std::int32_t> out;
  const dom::array a = arr(e, key);
  for (dom::element v : a) {
    std::int64_t n = -999;
    EXPECT_EQ(v.get_int64().get(n), simdjson::SUCCESS) << key;
    out.push_back(static_cast<std::int32_t>(n));
  }
  return out;
}

void checkJson(const analysis::RunReport& rep, const RunFig& f) {
  dom::parser parser;
  const std::string text = analysis::reportToJson(rep);
  dom::element doc;
  ASSERT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS);
  const dom::element run = doc["run"];
  EXPECT_EQ(nanos(run, "step_us"), f.step_ns) << "run.step_us";
  expectJson(run, "overlap_pct", f.overlap_pct, 4);
  EXPECT_EQ(nanos(run, "exposed_comm_per_step_us"), f.exposed_per_step);
  expectJson(run, "dp_efficiency", f.dp_efficiency, 6);  // a fraction
  expectJson(run, "gpu_idle_pct", f.gpu_idle_pct, 4);
  EXPECT_EQ(integer(run, "ranks"), std::int64_t(f.ranks.size()));
  EXPECT_EQ(integer(run, "world_size"), f.world);
  EXPECT_EQ(ints(run, "missing_ranks"), f.missing) << "run.missing_ranks";
  EXPECT_EQ(ints(doc, "missing_ranks"), f.missing) << "missing_ranks";
  EXPECT_EQ(ints(run, "steps_used"), f.used) << "run.steps_used";

  std::size_t k = 0;
  const dom::array stragglers = arr(doc, "stragglers");
  for (dom::element st : stragglers) {
    ASSERT_LT(k, f.stragglers.size());
    const auto& want = f.stragglers[k++];
    EXPECT_EQ(integer(st, "last_rank"), want.last_rank);
    EXPECT_EQ(nanos(st, "spread_us"), want.spread_ns) << "stragglers[].spread_us";
    EXPECT_EQ(nanos(st, "margin_us"), want.margin_ns) << "stragglers[].margin_us";
  }
  EXPECT_EQ(k, f.stragglers.size());
  k = 0;
  const dom::array spread = arr(doc, "step_spread");
  for (dom::element sp : spread) {
    ASSERT_LT(k, f.spread.size());
    const auto& want = f.spread[k++];
    EXPECT_EQ(nanos(sp, "min_us"), want.min_ns);
    EXPECT_EQ(nanos(sp, "max_us"), want.max_ns);
    EXPECT_EQ(nanos(sp, "mean_us"), want.mean_ns);
    if (want.slowest_rank < 0) {
      EXPECT_TRUE(sp["slowest_rank"].is_null());
    } else {
      EXPECT_EQ(integer(sp, "slowest_rank"), want.slowest_rank);
    }
  }
  EXPECT_EQ(k, f.spread.size());
  // Each rank's buckets, in the writer's order (by step, then id, as the oracle's map).
  std::size_t r = 0;
  const dom::array ranks = arr(doc, "ranks");
  for (dom::element rank : ranks) {
    ASSERT_LT(r, f.ranks.size());
    auto want = f.ranks[r++].buckets.begin();
    const dom::array buckets = arr(rank, "buckets");
    for (dom::element b : buckets) {
      const auto& w = want++->second;
      EXPECT_EQ(nanos(b, "ready_us"), w.ready) << "buckets[].ready_us";
      EXPECT_EQ(nanos(b, "wait_us"), w.wait) << "buckets[].wait_us";
      EXPECT_EQ(nanos(b, "exposed_us"), w.exposed) << "buckets[].exposed_us";
      expectJson(b, "busbw_gbps", w.busbw, 4);
      if (w.algbw) {
        EXPECT_EQ(std::string_view(b["bw_basis"].get_string().value()),
                  w.over_transfer ? "transfer" : "kernel");
      }
    }
  }
}

// Analyses the run and checks every figure above; returns the oracle for fixture checks.
RunFig checkRun(const trace::Run& run) {
  const auto rep = analysis::analyzeRun(run);
  const auto s = analysis::summarizeRun(rep);
  const RunFig f = oracle(run);
  EXPECT_EQ(rep.ranks.size(), run.ranks.size());
  for (std::size_t i = 0; i < run.ranks.size() && i < rep.ranks.size(); ++i)
    checkRank(rep.ranks[i], run.ranks[i], f.ranks[i]);

  EXPECT_EQ(rep.completeness.world_size, f.world);
  EXPECT_EQ(rep.completeness.missing_ranks, f.missing);
  EXPECT_EQ(s.missing_ranks, f.missing);
  EXPECT_EQ(s.world_size, f.world);
  EXPECT_EQ(s.ranks, static_cast<std::int32_t>(run.ranks.size()));

  EXPECT_EQ(s.selection.used, f.used);
  EXPECT_EQ(s.selection.warm_up, f.warm_up);
  EXPECT_EQ(s.selection.partial, f.partial);
  EXPECT_EQ(s.steps_used, static_cast<std::int32_t>(f.used.size()));
  EXPECT_EQ(s.step_ns, f.step_ns) << "step time: mean over steps of the slowest rank's";
  expectNear(s.overlap_pct, f.overlap_pct, "run overlap % (Σ hidden / Σ comm)");
  EXPECT_EQ(s.exposed_ns_per_step, f.exposed_per_step) << "Σ exposed / (ranks × steps)";
  expectNear(s.dp_efficiency, f.dp_efficiency, "run DP efficiency");
  expectNear(s.gpu_idle_pct, f.gpu_idle_pct, "run GPU idle %");
  EXPECT_NEAR(s.allreduces_per_step, f.allreduces_per_step, 1e-9);
  EXPECT_EQ(s.mean_bucket_wait_ns, f.mean_wait);

  EXPECT_EQ(rep.stragglers.size(), f.stragglers.size());
  for (std::size_t k = 0; k < rep.stragglers.size() && k < f.stragglers.size(); ++k) {
    const auto &got = rep.stragglers[k], &want = f.stragglers[k];
    const std::string at = "straggler of step " + std::to_string(want.step) + ", bucket " +
                           std::to_string(want.bucket);
    EXPECT_EQ(got.step, want.step) << at;
    EXPECT_EQ(got.bucket, want.bucket) << at;
    EXPECT_EQ(got.last_rank, want.last_rank) << at;
    EXPECT_EQ(got.spread_ns, want.spread_ns) << at;
    EXPECT_EQ(got.margin_ns, want.margin_ns) << at;
  }
  EXPECT_EQ(rep.step_spread.size(), f.spread.size());
  for (std::size_t k = 0; k < rep.step_spread.size() && k < f.spread.size(); ++k) {
    const auto &got = rep.step_spread[k], &want = f.spread[k];
    const std::string at = "step spread of step " + std::to_string(want.step);
    EXPECT_EQ(got.step, want.step) << at;
    EXPECT_EQ(got.min_ns, want.min_ns) << at;
    EXPECT_EQ(got.max_ns, want.max_ns) << at;
    EXPECT_EQ(got.mean_ns, want.mean_ns) << at;
    EXPECT_EQ(got.slowest_rank, want.slowest_rank) << at;
  }
  checkJson(rep, f);
  return f;
}

// A small MLP whose gradients fill several buckets, on `world` simulated ranks.
trace::Run simulate(std::int32_t world, std::int32_t steps, std::int32_t straggler, double slowdown,
                    double jitter) {
  agent::AgentOptions o;
  o.world_size = world;
  o.steps = steps;
  o.model.kind = "mlp";
  o.model.layers = 6;
  o.model.hidden = 512;
  o.bucket_mb = 1;
  o.first_bucket_mb = 1;
  o.cost.straggler_rank = straggler;
  o.cost.straggler_slowdown = slowdown;
  o.cost.jitter = jitter;
  trace::Run run;
  run.ranks = agent::runSimulation(o).ranks;
  return run;
}

// The fixture separates the variants it is meant to: ranks differ in step time on a selected
// step, and some straggler's margin differs from its spread.
void expectDiscriminating(const RunFig& f) {
  bool unequal_steps = false;
  for (std::int32_t n : f.used) {
    TimeNs lo = f.ranks.front().steps.at(n).dur, hi = lo;
    for (const auto& r : f.ranks) {
      lo = std::min(lo, r.steps.at(n).dur);
      hi = std::max(hi, r.steps.at(n).dur);
    }
    unequal_steps = unequal_steps || lo != hi;
  }
  EXPECT_TRUE(unequal_steps) << "ranks should take different step times";
  ASSERT_FALSE(f.stragglers.empty());
  EXPECT_TRUE(std::any_of(f.stragglers.begin(), f.stragglers.end(), [](const auto& s) {
    return s.margin_ns != s.spread_ns;
  })) << "some straggler's margin should differ from its spread";
  EXPECT_GE(f.used.size(), 2u);
  EXPECT_FALSE(f.warm_up.empty());
  // Several buckets a step, and communication partly hidden.
  for (const auto& r : f.ranks) {
    std::map<std::int32_t, int> per_step;
    for (const auto& [key, b] : r.buckets)
      per_step[key.first]++;
    for (std::int32_t n : f.used)
      EXPECT_GE(per_step[n], 3) << "rank " << r.rank << ", step " << n;
  }
  ASSERT_TRUE(f.overlap_pct);
  EXPECT_GT(*f.overlap_pct, 1.0);
  EXPECT_LT(*f.overlap_pct, 99.0);
}

}  // namespace

TEST(Oracle, FourRanksWithASlowRankAndJitter) {
  const auto run = simulate(4, 5, 2, 1.5, 0.2);
  const auto f = checkRun(run);
  expectDiscriminating(f);
  // The slow rank is the one the others wait for.
  std::map<std::int32_t, int> last;
  for (const auto& s : f.stragglers)
    last[s.last_rank]++;
  EXPECT_EQ(std::max_element(last.begin(), last.end(),
                             [](auto& a, auto& b) { return a.second < b.second; })
                ->first,
            2);
}

TEST(Oracle, SyncRecordsOverWholeStepsAreNotBusyTime) {
  // The simulator records no cuda_sync; a host waiting on the GPU for each whole step (a
  // cudaStreamSynchronize record on a stream of its own) must leave every busy, idle and step
  // figure as the oracle computes it from the GPU work alone.
  auto run = simulate(3, 4, 1, 1.2, 0.2);
  for (auto& r : run.ranks) {
    trace::Track sync;
    sync.kind = trace::TrackKind::Gpu;
    sync.pid = 0;
    sync.tid = 9999;
    for (const auto& st : r.steps) {
      trace::EventRow e;
      e.start = st.start;
      e.dur = st.end - st.start;
      e.name = r.names.intern("Stream Sync");
      e.cat = r.names.intern("cuda_sync");
      e.kind = EventKind::Sync;
      sync.push(e);
    }
    ASSERT_GT(sync.size(), 0u);
    r.tracks.push_back(std::move(sync));
  }
  const auto f = checkRun(run);
  expectDiscriminating(f);
}

TEST(Oracle, ThreeRanksTheFirstOfThemSlow) {
  // Rank 0 the slowest: a step spread that cannot name the first rank would say "none".
  const auto run = simulate(3, 4, 0, 1.3, 0.3);
  const auto f = checkRun(run);
  expectDiscriminating(f);
  EXPECT_TRUE(std::any_of(f.spread.begin(), f.spread.end(),
                          [](const auto& sp) { return sp.slowest_rank == 0; }));
}

TEST(Oracle, ThreeRanksWithInferredBuckets) {
  // Without our bucket list the buckets are inferred from the allreduce kernels.
  auto run = simulate(3, 4, 1, 1.2, 0.3);
  for (auto& r : run.ranks)
    r.ddpscope.buckets.clear();
  const auto f = checkRun(run);
  expectDiscriminating(f);
  const auto rep = analysis::analyzeRun(run);
  for (const auto& r : rep.ranks) {
    EXPECT_TRUE(r.buckets_inferred);
    ASSERT_FALSE(r.buckets.empty());
  }
}

TEST(Oracle, ARankMissingAndAStepOnSomeRanksOnly) {
  // Four ranks ran; the last one's trace is missing, and rank 0's trace lost its last step.
  auto run = simulate(4, 5, 1, 1.4, 0.2);
  run.ranks.pop_back();
  run.ranks.front().steps.pop_back();
  const auto f = checkRun(run);
  EXPECT_EQ(f.missing, (std::vector<std::int32_t>{3}));
  EXPECT_EQ(f.partial, (std::vector<std::int32_t>{4}));
  expectDiscriminating(f);
  const auto rep = analysis::analyzeRun(run);
  EXPECT_TRUE(rep.completeness.incomplete());
  EXPECT_EQ(analysis::runFigureText(analysis::summarizeRun(rep)).ranks, "3 of 4 ranks");
}

TEST(Oracle, AConvertedImportMissingARankIsNotIncomplete) {
  // One rank of two: recorded by ddpscope, the run is incomplete; an imported trace converted to
  // our files (its ddpscope block says "imported") is one rank shared, as a PyTorch trace is.
  auto run = simulate(2, 3, 1, 1.2, 0.2);
  run.ranks.pop_back();
  ASSERT_TRUE(run.ranks.front().ddpscope.present);
  ASSERT_NE(run.ranks.front().ddpscope.source, "imported");
  EXPECT_TRUE(analysis::analyzeRun(run).completeness.incomplete());
  run.ranks.front().ddpscope.source = "imported";
  const auto rep = analysis::analyzeRun(run);
  EXPECT_FALSE(rep.completeness.incomplete());
  EXPECT_EQ(rep.completeness.missing_ranks, (std::vector<std::int32_t>{1}));
}

TEST(Oracle, ARankThatLostRecords) {
  // Rank 1's tracer dropped the record of one allreduce kernel in step 2 (CUPTI buffers full):
  // the ranks' communication totals differ, so pooling Σ hidden / Σ comm and averaging the
  // ranks' own percentages give different run figures.
  auto run = simulate(4, 4, 3, 1.3, 0.2);
  auto& r1 = run.ranks[1];
  bool dropped = false;
  for (auto& t : r1.tracks) {
    if (t.kind != trace::TrackKind::Gpu || dropped) continue;
    trace::Track kept = t;
    kept.resize(0);
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!dropped && t.step[i] == 2 && t.kind_of[i] == EventKind::Kernel &&
          r1.names[t.name[i]].rfind("nccl", 0) == 0) {
        dropped = true;
        continue;
      }
      kept.push(t.row(i));
    }
    t = std::move(kept);
  }
  ASSERT_TRUE(dropped);
  r1.ddpscope.dropped_records = 1;
  const auto f = checkRun(run);
  expectDiscriminating(f);
  double mean_of_ranks = 0;
  for (const auto& r : f.ranks) {
    TimeNs comm = 0, hidden = 0;
    for (std::int32_t n : f.used) {
      comm += r.steps.at(n).c.comm;
      hidden += r.steps.at(n).c.hidden;
    }
    mean_of_ranks += 100.0 * double(hidden) / double(comm) / double(f.ranks.size());
  }
  EXPECT_GT(std::abs(mean_of_ranks - *f.overlap_pct), 0.01)
      << "mean of the ranks' % " << mean_of_ranks << ", pooled " << *f.overlap_pct;
}

// The simulator waits as NCCL does: with a slow rank, the other ranks' allreduce kernels start
// when their own streams reach them, before the slow rank's, and spin; their exposed
// communication is then mostly waiting, and the slow rank is named last. Without one, nobody
// waits and the exposed communication is transfer.
TEST(Oracle, ALateRankMakesTheOthersWaitInsideTheirCollectives) {
  agent::AgentOptions o;
  o.world_size = 4;
  o.steps = 4;
  o.model.kind = "mlp";
  o.cost.straggler_rank = 2;
  o.cost.straggler_slowdown = 3;
  trace::Run late;
  late.ranks = agent::runSimulation(o).ranks;
  const auto report = analysis::analyzeRun(late);
  ASSERT_FALSE(report.matched.empty());
  for (const auto& m : report.matched) {
    EXPECT_EQ(m.last_rank, 2);
    EXPECT_GT(m.skew_ns, 0);
    for (std::size_t r = 0; r < 4; ++r)
      EXPECT_EQ(m.wait_ns[r] > 0, r != 2) << "rank " << r;
  }
  for (const auto& r : report.ranks) {
    ASSERT_TRUE(r.exposed_wait_ns && r.exposed_transfer_ns);
    if (r.rank == 2) {
      EXPECT_EQ(*r.exposed_wait_ns, 0);
    } else {
      EXPECT_GT(*r.exposed_wait_ns, *r.exposed_transfer_ns) << "rank " << r.rank;
    }
    // The bandwidth is over the transfer: for the late rank, which waited for nobody, that is
    // its whole kernel; for the others, whose kernels spun first, a shorter time.
    ASSERT_FALSE(r.buckets.empty());
    for (const auto& b : r.buckets) {
      ASSERT_TRUE(b.algbw_gbps && b.bytes > 0);
      EXPECT_EQ(b.bw_basis, analysis::BandwidthBasis::Transfer);
      const double whole = double(b.bytes) / double(b.end_ns - b.start_ns);
      if (r.rank == 2) {
        EXPECT_DOUBLE_EQ(*b.algbw_gbps, whole);
      } else {
        EXPECT_GT(*b.algbw_gbps, 1.5 * whole) << "rank " << r.rank << ", bucket " << b.id;
      }
      // On every rank, the bus bandwidth the simulator was given, less its latency term: the
      // ring allreduce's 2(p−1)/p · bytes over its time, 2(p−1)α + 2(p−1)/p · bytes / B.
      ASSERT_TRUE(b.busbw_gbps);
      const double network = 1.5 * double(b.bytes) / o.cost.allreduceNs(b.bytes, 4);
      EXPECT_NEAR(*b.busbw_gbps, network, 1e-3 * network)
          << "rank " << r.rank << ", bucket " << b.id;
    }
    for (const auto& c : r.collectives) {
      if (c.kind != analysis::CollectiveKind::AllReduce) continue;
      EXPECT_EQ(c.bw_basis, analysis::BandwidthBasis::Transfer);
    }
  }
  o.cost.straggler_rank = -1;
  trace::Run even;
  even.ranks = agent::runSimulation(o).ranks;
  const auto calm = analysis::analyzeRun(even);
  ASSERT_FALSE(calm.matched.empty());
  for (const auto& m : calm.matched) {
    EXPECT_EQ(m.skew_ns, 0);
    EXPECT_EQ(m.last_rank, -1);
  }
  for (const auto& r : calm.ranks) {
    ASSERT_TRUE(r.exposed_wait_ns && r.exposed_transfer_ns);
    EXPECT_EQ(*r.exposed_wait_ns, 0);
    EXPECT_EQ(*r.exposed_transfer_ns, r.whole.exposed_ns);
  }
}

TEST(Oracle, RanksAnalysedOnSeveralThreadsGiveTheSameReport) {
  // analyzeRun analyses ranks at once on several threads; each writes its own slot, so the
  // report (and every rank's activity) is the one a single thread gives, whichever finished
  // first. Six ranks of different speeds: the threads finish out of rank order.
  const auto run = simulate(6, 4, 4, 1.7, 0.3);
  analysis::AnalysisOptions one;
  one.threads = 1;
  std::vector<analysis::RankActivity> acts_one;
  const std::string serial = analysis::reportToJson(analysis::analyzeRun(run, one, &acts_one));
  for (unsigned threads : {2u, 3u, 16u}) {
    analysis::AnalysisOptions many;
    many.threads = threads;
    std::vector<analysis::RankActivity> acts;
    EXPECT_EQ(analysis::reportToJson(analysis::analyzeRun(run, many, &acts)), serial)
        << threads << " threads";
    ASSERT_EQ(acts.size(), acts_one.size());
    for (std::size_t r = 0; r < acts.size(); ++r) {
      EXPECT_EQ(acts[r].comm, acts_one[r].comm) << "rank " << r;
      EXPECT_EQ(acts[r].compute, acts_one[r].compute) << "rank " << r;
      EXPECT_EQ(acts[r].counts, acts_one[r].counts) << "rank " << r;
    }
  }
}
