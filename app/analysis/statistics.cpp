#include "app/analysis/statistics.h"

#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace ddpscope::analysis {

std::vector<KernelStats> kernelStatistics(const trace::Run& run,
                                          const std::shared_ptr<const ClassRules>& rules,
                                          const TimeWindow& window,
                                          const std::vector<std::size_t>& ranks) {
  // By name across ranks: each rank's names are its own table, so rows are keyed by the text.
  std::unordered_map<std::string, KernelStats> by_name;
  TimeNs all = 0;
  const auto add_rank = [&](const trace::RankTrace& rank) {
    // Each (track, name, kind) is classified once through the cache, as the analysis does.
    const ClassCache cache(rules, rank);
    // The row of each of the rank's names, looked up by text once.
    std::vector<KernelStats*> row_of(rank.names.size(), nullptr);
    for (std::size_t ti = 0; ti < rank.tracks.size(); ++ti) {
      const auto& t = rank.tracks[ti];
      if (t.kind != trace::TrackKind::Gpu) continue;
      const auto first = static_cast<std::size_t>(
          std::lower_bound(t.start.begin(), t.start.end(), window.lo) - t.start.begin());
      for (std::size_t i = first; i < t.size() && t.start[i] < window.hi; ++i) {
        // GPU work only: a cuda_sync record is the host waiting, not GPU time.
        if (!trace::occupiesGpu(t.kind_of[i])) continue;
        const Classification& c = cache.get(ti, i);
        if (c.cls == ActivityClass::None) continue;
        const TimeNs d = t.dur[i];
        KernelStats*& row = row_of[t.name[i]];
        if (!row) {
          auto [it, fresh] = by_name.try_emplace(rank.names[t.name[i]]);
          row = &it->second;
          if (fresh) {
            row->name = it->first;
            row->cls = c.cls;
            row->kind = c.kind;
            row->min_ns = d;
            row->max_ns = d;
          }
        }
        KernelStats& k = *row;
        ++k.count;
        k.total_ns += d;
        k.min_ns = std::min(k.min_ns, d);
        k.max_ns = std::max(k.max_ns, d);
        all += d;
      }
    }
  };
  if (ranks.empty()) {
    for (const auto& r : run.ranks)
      add_rank(r);
  } else {
    for (const std::size_t r : ranks)
      if (r < run.ranks.size()) add_rank(run.ranks[r]);
  }
  std::vector<KernelStats> out;
  out.reserve(by_name.size());
  for (auto& [name, k] : by_name) {
    k.mean_ns = static_cast<double>(k.total_ns) / static_cast<double>(k.count);
    k.share = all > 0 ? static_cast<double>(k.total_ns) / static_cast<double>(all) : 0.0;
    out.push_back(std::move(k));
  }
  std::sort(out.begin(), out.end(), [](const KernelStats& a, const KernelStats& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return out;
}

TimeNs streamBusyWithin(const trace::Track& t, TimeNs lo, TimeNs hi) {
  // The track is sorted by start: one sweep, counting each instant once.
  TimeNs busy = 0;
  TimeNs covered = lo;
  for (std::size_t i = 0; i < t.size() && t.start[i] < hi; ++i) {
    if (!trace::occupiesGpu(t.kind_of[i])) continue;
    const TimeNs e = std::min(t.end(i), hi);
    const TimeNs s = std::max(t.start[i], covered);
    if (e > s) {
      busy += e - s;
      covered = e;
    }
  }
  return busy;
}

std::vector<StreamStats> streamStatistics(const trace::Run& run, const RunReport& report,
                                          const std::optional<TimeWindow>& window) {
  std::vector<StreamStats> out;
  for (std::size_t r = 0; r < report.ranks.size() && r < run.ranks.size(); ++r) {
    const auto& rr = report.ranks[r];
    const auto& rank = run.ranks[r];
    for (const auto& s : rr.streams) {
      StreamStats st;
      st.rank = rr.rank;
      st.device = s.device;
      st.stream = s.stream;
      st.role = s.role;
      if (!window) {
        st.busy_ns = s.busy_ns;
        st.scope_ns = rr.whole.span_ns;
      } else {
        st.scope_ns = std::max<TimeNs>(0, window->hi - window->lo);
        for (const auto& t : rank.tracks)
          if (t.kind == trace::TrackKind::Gpu && t.device() == s.device && t.stream() == s.stream)
            st.busy_ns += streamBusyWithin(t, window->lo, window->hi);
      }
      if (st.scope_ns > 0)
        st.busy_share = static_cast<double>(st.busy_ns) / static_cast<double>(st.scope_ns);
      out.push_back(st);
    }
  }
  return out;
}

std::optional<double> stepGpuIdlePct(const StepReport& step) {
  if (step.dur_ns <= 0) return std::nullopt;
  return 100.0 * static_cast<double>(stepIdleNs(step)) / static_cast<double>(step.dur_ns);
}

WindowFigures windowFigures(const std::vector<RankActivity>& activities, TimeNs lo, TimeNs hi) {
  WindowFigures f;
  f.lo = lo;
  f.hi = std::max(lo, hi);
  f.ranks = activities.size();
  for (const auto& a : activities) {
    const IntervalSet comm = clip(a.comm, f.lo, f.hi);
    f.comm_ns += totalLength(comm);
    f.hidden_ns += intersectionLength(comm, clip(a.compute, f.lo, f.hi));
    f.busy_ns += lengthWithin(a.all, f.lo, f.hi);
  }
  if (f.comm_ns > 0)
    f.overlap_pct = 100.0 * static_cast<double>(f.hidden_ns) / static_cast<double>(f.comm_ns);
  if (f.ranks > 0) f.exposed_ns = (f.comm_ns - f.hidden_ns) / static_cast<TimeNs>(f.ranks);
  const TimeNs span = (f.hi - f.lo) * static_cast<TimeNs>(f.ranks);
  if (span > 0)
    f.gpu_idle_pct = 100.0 * static_cast<double>(span - f.busy_ns) / static_cast<double>(span);
  return f;
}

WindowFigures windowFigures(const trace::Run& run, const AnalysisOptions& options, TimeNs lo,
                            TimeNs hi) {
  std::vector<RankActivity> activities;
  activities.reserve(run.ranks.size());
  for (const auto& rank : run.ranks)
    activities.push_back(rankActivity(rank, options));
  return windowFigures(activities, lo, hi);
}

std::string windowFigureText(const WindowFigures& f) {
  // Both ends in the unit of the end, with enough decimals that a tenth of the window shows.
  const double mag =
      std::max(std::fabs(static_cast<double>(f.lo)), std::fabs(static_cast<double>(f.hi)));
  double unit = 1;
  const char* name = "ns";
  if (mag >= 1e9) {
    unit = 1e9;
    name = "s";
  } else if (mag >= 1e6) {
    unit = 1e6;
    name = "ms";
  } else if (mag >= 1e3) {
    unit = 1e3;
    name = "µs";
  }
  const double tenth = std::max(1.0, static_cast<double>(f.hi - f.lo) / 10.0) / unit;
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(tenth))), 0, 6);
  char range[96];
  std::snprintf(range, sizeof range, "%.*f–%.*f %s", decimals, static_cast<double>(f.lo) / unit,
                decimals, static_cast<double>(f.hi) / unit, name);
  return std::string("window ") + range + ": overlap " + percentText(f.overlap_pct, 2) +
         ", exposed " + formatDuration(f.exposed_ns) + (f.ranks > 1 ? " per rank" : "") +
         ", GPU idle " + percentText(f.gpu_idle_pct, 1);
}

std::string csvField(const std::string& field) {
  if (field.find_first_of(",\"\r\n") == std::string::npos) return field;
  std::string out = "\"";
  for (const char c : field) {
    if (c == '"') out += '"';
    out += c;
  }
  out += '"';
  return out;
}

}  // namespace ddpscope::analysis
