#include "app/analysis/step_breakdown.h"

#include <algorithm>
#include <array>
#include <map>
#include <unordered_map>

#include "app/analysis/collectives.h"
#include "tracer/format/memory.h"

namespace ddpscope::analysis {

namespace {

bool included(const RankActivity& act, std::size_t track, std::size_t i) {
  return act.included.empty() || act.included[track][i] != 0;
}

// Adds b to an optional sum a; a stays none once one term is none.
void addOptional(std::optional<TimeNs>& a, const std::optional<TimeNs>& b, bool first) {
  if (first) {
    a = b;
  } else if (a && b) {
    *a += *b;
  } else {
    a.reset();
  }
}

// Adds each part of b to sum (`first`: sum is empty).
void accumulate(StepBreakdown& sum, const StepBreakdown& b, bool first) {
  sum.compute_ns += b.compute_ns;
  sum.hidden_comm_ns += b.hidden_comm_ns;
  sum.exposed_comm_ns += b.exposed_comm_ns;
  addOptional(sum.exposed_wait_ns, b.exposed_wait_ns, first);
  addOptional(sum.exposed_transfer_ns, b.exposed_transfer_ns, first);
  sum.memory_ns += b.memory_ns;
  sum.other_ns += b.other_ns;
  sum.idle_ns += b.idle_ns;
  addOptional(sum.idle_launch_pending_ns, b.idle_launch_pending_ns, first);
  addOptional(sum.idle_data_loader_ns, b.idle_data_loader_ns, first);
  addOptional(sum.idle_host_bound_ns, b.idle_host_bound_ns, first);
  sum.outside_ns += b.outside_ns;
}

// Each part of sum divided by n (integer ns).
StepBreakdown divided(StepBreakdown sum, TimeNs n) {
  for (TimeNs* v : {&sum.compute_ns, &sum.hidden_comm_ns, &sum.exposed_comm_ns, &sum.memory_ns,
                    &sum.other_ns, &sum.idle_ns, &sum.outside_ns})
    *v /= n;
  for (auto* o : {&sum.exposed_wait_ns, &sum.exposed_transfer_ns, &sum.idle_launch_pending_ns,
                  &sum.idle_data_loader_ns, &sum.idle_host_bound_ns})
    if (*o) **o /= n;
  return sum;
}

}  // namespace

HostActivity hostActivity(const trace::RankTrace& rank, const RankActivity& act,
                          const LaunchTimes* launches) {
  HostActivity h;
  std::vector<Interval> loader;
  // Which names are a data loader's, each name looked at once.
  std::vector<signed char> is_loader(rank.names.size(), -1);
  for (const auto& t : rank.tracks) {
    if (t.kind != trace::TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto k = t.kind_of[i];
      if (k == trace::EventKind::Runtime || k == trace::EventKind::Driver) continue;
      auto& known = is_loader[t.name[i]];
      if (known < 0) known = isDataLoaderRange(rank.names[t.name[i]]) ? 1 : 0;
      if (known) loader.push_back({t.start[i], t.end(i)});
    }
  }
  h.data_loader = unionOf(std::move(loader));
  LaunchTimes own;
  if (!launches) own = LaunchTimes(rank);
  const auto& launch = launches ? *launches : own;
  if (launch.empty()) return h;
  std::vector<Interval> pending;
  std::size_t gpu_events = 0;
  for (const auto& t : rank.tracks)
    gpu_events += t.kind == trace::TrackKind::Gpu ? t.size() : 0;
  trace::reserveAdvised(pending, gpu_events);
  for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
    const auto& t = rank.tracks[ti];
    if (t.kind != trace::TrackKind::Gpu) continue;
    std::size_t hint = 0;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (!trace::occupiesGpu(t.kind_of[i]) || !included(act, ti, i)) continue;
      if (act.classOf(ti, t.kind_of[i], t.name[i]) == ActivityClass::None) continue;
      const TimeNs* launched = launch.find(t.correlation[i], &hint);
      if (launched == nullptr) continue;
      h.has_launches = true;
      pending.push_back({*launched, t.start[i]});
    }
  }
  h.pending = unionOf(std::move(pending));
  return h;
}

StepBreakdown stepBreakdown(TimeNs start, TimeNs end, const IntervalSet& comm,
                            const IntervalSet& compute, const IntervalSet& memory,
                            const IntervalSet& other, const IntervalSet& all,
                            const HostActivity& host) {
  StepBreakdown b;
  const auto c = clip(comm, start, end);
  const auto k = clip(compute, start, end);
  const auto ck = unite(c, k);
  const auto m = subtract(clip(memory, start, end), ck);
  b.hidden_comm_ns = intersectionLength(c, k);
  b.exposed_comm_ns = totalLength(c) - b.hidden_comm_ns;
  b.compute_ns = totalLength(k) - b.hidden_comm_ns;
  b.memory_ns = totalLength(m);
  b.other_ns = totalLength(subtract(clip(other, start, end), unite(ck, m)));
  const auto busy = clip(all, start, end);
  b.outside_ns = totalLength(all) - totalLength(busy);
  const auto idle = subtract(IntervalSet{{start, end}}, busy);
  b.idle_ns = totalLength(idle);
  if (host.has_launches) {
    const auto pending = intersect(idle, host.pending);
    const auto not_pending = subtract(idle, pending);
    b.idle_launch_pending_ns = totalLength(pending);
    b.idle_data_loader_ns = intersectionLength(not_pending, host.data_loader);
    b.idle_host_bound_ns = b.idle_ns - *b.idle_launch_pending_ns - *b.idle_data_loader_ns;
  }
  return b;
}

std::vector<RankWaits> rankWaits(const RunReport& report) {
  std::vector<RankWaits> out(report.ranks.size());
  std::vector<std::vector<Interval>> waits(report.ranks.size());
  for (const auto& mc : report.matched) {
    for (std::size_t r = 0; r < out.size(); ++r) {
      if (!mc.involves(r)) continue;
      out[r].involved = true;
      if (mc.wait_ns[r] > 0)
        waits[r].push_back({mc.last_start_ns - mc.wait_ns[r], mc.last_start_ns});
    }
  }
  for (std::size_t r = 0; r < out.size(); ++r)
    out[r].waits = unionOf(std::move(waits[r]));
  return out;
}

std::vector<IntervalSet> stepExposed(const RankReport& rank, const RankActivity& activity) {
  std::vector<IntervalSet> out;
  const auto& unions = activity.steps;
  for (std::size_t s = 0; s < rank.steps.size() && s < unions.size(); ++s) {
    const auto& st = rank.steps[s];
    out.push_back(
        clip(subtract(unions[s].comm, unions[s].compute), st.start_ns, st.start_ns + st.dur_ns));
  }
  return out;
}

void splitStepExposed(RunReport& report, const std::vector<RankActivity>& activities) {
  if (!matchedSplitKnown(report)) return;  // a rank not loaded may be the one waited for
  std::vector<std::vector<IntervalSet>> exposed;
  for (std::size_t r = 0; r < report.ranks.size() && r < activities.size(); ++r)
    exposed.push_back(stepExposed(report.ranks[r], activities[r]));
  splitStepExposed(report, exposed);
}

void splitStepExposed(RunReport& report, const std::vector<std::vector<IntervalSet>>& exposed) {
  if (!matchedSplitKnown(report)) return;
  const auto waits = rankWaits(report);
  for (std::size_t r = 0; r < report.ranks.size() && r < exposed.size(); ++r) {
    if (!waits[r].involved) continue;
    auto& steps = report.ranks[r].steps;
    for (std::size_t s = 0; s < steps.size() && s < exposed[r].size(); ++s) {
      auto& st = steps[s];
      const TimeNs wait = intersectionLength(exposed[r][s], waits[r].waits);
      st.breakdown.exposed_wait_ns = wait;
      // The step's exposed communication is the set's length (a digest's decoded steps carry
      // no breakdown to subtract from).
      st.breakdown.exposed_transfer_ns = totalLength(exposed[r][s]) - wait;
    }
  }
}

BreakdownTotals breakdownTotals(const RunReport& report, const StepSelection& selection) {
  BreakdownTotals t;
  auto& p = t.parts;
  for (const auto& r : report.ranks) {
    for (const auto& st : r.steps) {
      if (!std::binary_search(selection.used.begin(), selection.used.end(), st.step)) continue;
      accumulate(p, st.breakdown, t.steps == 0);
      ++t.steps;
      t.step_ns += st.dur_ns;
    }
  }
  return t;
}

std::vector<StepBreakdownRow> stepBreakdownRows(const RunReport& report, int rank_index) {
  std::map<std::int32_t, StepBreakdownRow> sums;  // by step number
  for (std::size_t r = 0; r < report.ranks.size(); ++r) {
    if (rank_index >= 0 && static_cast<std::size_t>(rank_index) != r) continue;
    for (const auto& st : report.ranks[r].steps) {
      auto [it, fresh] = sums.try_emplace(st.step);
      auto& row = it->second;
      row.step = st.step;
      row.start_ns = fresh ? st.start_ns : std::min(row.start_ns, st.start_ns);
      accumulate(row.parts, st.breakdown, fresh);
      row.step_ns += st.dur_ns;
      ++row.ranks;
    }
  }
  std::vector<StepBreakdownRow> out;
  for (auto& [step, row] : sums) {
    row.parts = divided(row.parts, row.ranks);
    row.step_ns /= row.ranks;
    out.push_back(row);
  }
  return out;
}

std::string idleReading(const RunReport& report, const RunSummary& summary) {
  if (!summary.gpu_idle_pct || *summary.gpu_idle_pct < kIdleReadingPct) return "";
  const auto t = breakdownTotals(report, summary.selection);
  const auto& p = t.parts;
  if (t.steps == 0 || p.idle_ns <= 0 || !p.idle_host_bound_ns || !p.idle_launch_pending_ns ||
      !p.idle_data_loader_ns) {
    return "";
  }
  std::array<std::pair<TimeNs, std::string_view>, 3> parts{{
      {*p.idle_host_bound_ns, "host-bound (no launch pending)"},
      {*p.idle_launch_pending_ns, "a launch pending (stream or dependency wait)"},
      {*p.idle_data_loader_ns, "in the data loader"},
  }};
  std::stable_sort(parts.begin(), parts.end(),
                   [](const auto& a, const auto& b) { return a.first > b.first; });
  std::string s = "GPU idle " + percentText(summary.gpu_idle_pct, 1) + ": ";
  const auto share = [&](TimeNs part) {
    return 100.0 * static_cast<double>(part) / static_cast<double>(p.idle_ns);
  };
  if (2 * parts[0].first > p.idle_ns) return s + "mostly " + std::string(parts[0].second);
  bool any = false;
  for (const auto& [ns, label] : parts) {
    if (ns <= 0) continue;
    s += (any ? ", " : "") + std::string(label) + " " + percentText(share(ns), 0);
    any = true;
  }
  return s;
}

}  // namespace ddpscope::analysis
