#include "app/analysis/run_summary.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "app/analysis/report_json.h"

namespace ddpscope::analysis {

std::string stepListText(const std::vector<std::int32_t>& steps) {
  if (steps.empty()) return "no steps";
  std::vector<std::string> parts;  // runs of consecutive numbers as "a–b"
  for (std::size_t i = 0; i < steps.size();) {
    std::size_t j = i;
    while (j + 1 < steps.size() && steps[j + 1] == steps[j] + 1)
      ++j;
    parts.push_back(j > i ? std::to_string(steps[i]) + "–" + std::to_string(steps[j])
                          : std::to_string(steps[i]));
    i = j + 1;
  }
  std::string s = steps.size() == 1 ? "step " : "steps ";
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (k > 0) s += k + 1 == parts.size() ? " and " : ", ";
    s += parts[k];
  }
  return s;
}

namespace {
// The rank's last step (by start) when it looks cut short by the end of its trace: it is under
// half the median of the rank's other steps, or it has fewer allreduces than each of them (a step
// of data-parallel training reduces every bucket; a trace cut in its backward pass has not). The
// ranges of one step number count as one step (their times and allreduces summed, from the first
// one's start). The others leave out the first (warm-up: often several times longer, and DDP may
// rebuild its buckets there) when there are three others or more; with fewer than three steps
// nothing is judged.
std::optional<std::int32_t> cutShortStep(const RankReport& rank) {
  struct Step {
    TimeNs start = 0, dur = 0;
    std::int64_t allreduces = 0;
  };
  std::map<std::int32_t, Step> by_number;
  for (const auto& st : rank.steps) {
    auto [it, fresh] = by_number.try_emplace(st.step, Step{st.start_ns, 0, 0});
    it->second.start = std::min(it->second.start, st.start_ns);
    it->second.dur += st.dur_ns;
    it->second.allreduces += st.allreduces;
  }
  if (by_number.size() < 3) return std::nullopt;
  std::vector<std::pair<std::int32_t, Step>> order(by_number.begin(), by_number.end());
  // By start; equal starts by step number (the map's order, kept by the stable sort).
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second.start < b.second.start; });
  const auto& [last_number, last] = order.back();
  const std::size_t first_other = order.size() - 1 >= 3 ? 1 : 0;  // three others or more
  std::vector<TimeNs> others;
  std::int64_t fewest_allreduces = std::numeric_limits<std::int64_t>::max();
  for (std::size_t k = first_other; k + 1 < order.size(); ++k) {
    others.push_back(order[k].second.dur);
    fewest_allreduces = std::min(fewest_allreduces, order[k].second.allreduces);
  }
  if (fewest_allreduces > 0 && last.allreduces < fewest_allreduces) return last_number;
  // The median of the others (the lower middle one of an even count: slower to call a step cut).
  const auto mid = others.begin() + static_cast<std::ptrdiff_t>((others.size() - 1) / 2);
  std::nth_element(others.begin(), mid, others.end());
  if (2 * last.dur >= *mid) return std::nullopt;
  return last_number;
}
}  // namespace

StepSelection selectSteps(const RunReport& report) {
  StepSelection sel;
  std::map<std::int32_t, std::size_t> seen;                   // step number -> ranks that have it
  std::set<std::int32_t> cut;                                 // steps some rank's trace ends inside
  std::vector<std::pair<std::int32_t, std::int32_t>> cut_by;  // (rank, its short last step)
  for (const auto& r : report.ranks) {
    std::set<std::int32_t> mine;  // a rank counts once per step number, however many ranges
    for (const auto& st : r.steps)
      if (mine.insert(st.step).second) seen[st.step]++;
    if (const auto c = cutShortStep(r)) {
      cut.insert(*c);
      cut_by.emplace_back(r.rank, *c);
    }
  }
  for (const auto& [n, count] : seen) {
    if (count != report.ranks.size())
      sel.partial.push_back(n);
    else
      (cut.count(n) ? sel.cut_short : sel.used).push_back(n);
  }
  if (!sel.cut_short.empty()) {
    // The ranks whose cut step is one of those (a rank's cut step may be a partial one).
    for (const auto& [rank, c] : cut_by)
      if (std::binary_search(sel.cut_short.begin(), sel.cut_short.end(), c))
        sel.cut_short_ranks.push_back(rank);
    std::sort(sel.cut_short_ranks.begin(), sel.cut_short_ranks.end());
  }
  // Three or more common steps, a cut one included: the first is the warm-up (leaving the cut
  // step out must not bring the warm-up back into the figures).
  if (sel.used.size() + sel.cut_short.size() >= 3 && !sel.used.empty()) {
    sel.warm_up.push_back(sel.used.front());
    sel.used.erase(sel.used.begin());
  }
  sel.whole_trace = sel.used.empty();
  std::vector<std::string> left_out;
  if (!sel.warm_up.empty()) left_out.push_back(stepListText(sel.warm_up) + " left out as warm-up");
  if (!sel.partial.empty())
    left_out.push_back(stepListText(sel.partial) + " left out: not on every rank");
  if (!sel.cut_short.empty()) {
    std::string ranks;
    for (std::size_t k = 0; k < sel.cut_short_ranks.size(); ++k)
      ranks += (k == 0                                ? ""
                : k + 1 == sel.cut_short_ranks.size() ? " and "
                                                      : ", ") +
               std::to_string(sel.cut_short_ranks[k]);
    const bool one = sel.cut_short_ranks.size() == 1;
    // Every rank of several: said so, not listed (a run of 64 ranks would list 64).
    const bool every = !one && sel.cut_short_ranks.size() == report.ranks.size();
    left_out.push_back(
        stepListText(sel.cut_short) + " left out: a short last step on " +
        (every ? std::string("every rank") : (one ? "rank " : "ranks ") + ranks) +
        (one ? " (the trace may end inside it)" : " (the traces may end inside it)"));
  }
  if (sel.whole_trace) {
    sel.rule = seen.empty()             ? "no step markers: whole trace"
               : !sel.cut_short.empty() ? "no whole step on every rank: whole trace"
                                        : "no step on every rank: whole trace";
  } else {
    sel.rule = stepListText(sel.used);
    if (sel.used.size() < 3 && sel.warm_up.empty()) sel.rule += " (all: too few to drop warm-up)";
  }
  for (std::size_t k = 0; k < left_out.size(); ++k)
    sel.rule += (k == 0 ? "; " : ", ") + left_out[k];
  return sel;
}

TimeNs stepIdleNs(const StepReport& step) {
  return std::max<TimeNs>(0, step.dur_ns - step.metrics.busy_ns);
}

namespace {

// The whole-trace figures, for runs without a step on every rank.
void summarizeWholeTrace(const RunReport& report, RunSummary& s) {
  TimeNs comm = 0, hidden = 0, exposed = 0, idle = 0, span = 0;
  for (const auto& r : report.ranks) {
    comm += r.whole.comm_ns;
    hidden += r.whole.overlap_ns;
    exposed += r.whole.exposed_ns;
    idle += r.whole.idle_ns;
    span += r.whole.span_ns;
  }
  if (comm > 0) s.overlap_pct = 100.0 * static_cast<double>(hidden) / static_cast<double>(comm);
  if (!report.ranks.empty()) s.exposed_ns_per_step = exposed / static_cast<TimeNs>(s.ranks);
  if (span > 0) s.gpu_idle_pct = 100.0 * static_cast<double>(idle) / static_cast<double>(span);
}

// Sums of step figures over selected steps, one rank's or every rank's: each run-level and
// per-rank figure over steps is computed from these, here only.
struct StepTotals {
  TimeNs comm = 0, hidden = 0, exposed = 0, dur = 0, busy = 0, idle = 0;
  TimeNs dp_exposed = 0, dp_time = 0;  // over the steps with GPU work
  double allreduces = 0;
  std::int64_t samples = 0;       // (rank, step) pairs added
  TimeNs exposed_wait = 0;        // over the steps whose collectives were matched
  std::int64_t wait_samples = 0;  // (rank, step) pairs with an exposed wait figure

  void add(const StepReport& st) {
    ++samples;
    comm += st.metrics.comm_ns;
    hidden += st.metrics.overlap_ns;
    exposed += st.metrics.exposed_ns;
    allreduces += st.allreduces;
    dur += st.dur_ns;
    busy += st.metrics.busy_ns;
    idle += stepIdleNs(st);
    if (st.breakdown.exposed_wait_ns) {
      exposed_wait += *st.breakdown.exposed_wait_ns;
      ++wait_samples;
    }
    if (st.dp_efficiency) {                              // a step with GPU work
      dp_exposed += st.dur_ns - st.compute_critical_ns;  // the step's exposed, at most its time
      dp_time += st.dur_ns;
    }
  }
  std::optional<double> overlapPct() const {
    if (comm <= 0) return std::nullopt;
    return 100.0 * static_cast<double>(hidden) / static_cast<double>(comm);
  }
  TimeNs exposedPerStep() const { return samples ? exposed / samples : 0; }
  // Over every (rank, step) pair, as exposedPerStep: a step with no matched collective waited 0.
  std::optional<TimeNs> exposedWaitPerStep() const {
    if (wait_samples == 0) return std::nullopt;
    return exposed_wait / samples;
  }
  std::optional<double> dpEfficiency() const {
    if (dp_time <= 0) return std::nullopt;
    return 1.0 - static_cast<double>(dp_exposed) / static_cast<double>(dp_time);
  }
  std::optional<double> gpuIdlePct() const {
    if (dur <= 0 || busy <= 0) return std::nullopt;
    return 100.0 * static_cast<double>(idle) / static_cast<double>(dur);
  }
};

// The figures of one rank over the selected steps (whole trace: its whole-file figures).
RankFigures rankFigures(const RankReport& r, const StepSelection& sel) {
  RankFigures f;
  f.rank = r.rank;
  if (sel.whole_trace) {
    f.overlap_pct = r.whole.overlap_pct;
    f.exposed_ns_per_step = r.whole.exposed_ns;
    if (r.whole.span_ns > 0) f.gpu_idle_pct = r.whole.idle_pct;
    return f;
  }
  StepTotals t;
  for (const auto& st : r.steps)
    if (std::binary_search(sel.used.begin(), sel.used.end(), st.step)) t.add(st);
  if (t.samples == 0) return f;
  f.step_ns = t.dur / t.samples;
  f.exposed_ns_per_step = t.exposedPerStep();
  f.overlap_pct = t.overlapPct();
  f.dp_efficiency = t.dpEfficiency();
  f.gpu_idle_pct = t.gpuIdlePct();
  return f;
}

}  // namespace

std::vector<TimeNs> selectedStepTimes(
    const std::vector<std::vector<std::pair<std::int32_t, TimeNs>>>& per_rank_steps,
    const StepSelection& selection) {
  std::vector<TimeNs> out;
  if (selection.whole_trace) return out;
  for (const std::int32_t n : selection.used) {
    TimeNs slowest = 0;
    for (const auto& steps : per_rank_steps)
      for (const auto& [step, dur] : steps)
        if (step == n) slowest = std::max(slowest, dur);
    out.push_back(slowest);
  }
  return out;
}

std::vector<TimeNs> selectedStepTimes(const RunReport& report, const StepSelection& selection) {
  std::vector<std::vector<std::pair<std::int32_t, TimeNs>>> per_rank;
  for (const auto& r : report.ranks) {
    auto& steps = per_rank.emplace_back();
    for (const auto& st : r.steps)
      steps.emplace_back(st.step, st.dur_ns);
  }
  return selectedStepTimes(per_rank, selection);
}

std::optional<TimeNs> stepTimeSpread(const std::vector<TimeNs>& step_times) {
  if (step_times.size() < 2) return std::nullopt;
  double mean = 0;
  for (const TimeNs t : step_times)
    mean += static_cast<double>(t);
  mean /= static_cast<double>(step_times.size());
  double sq = 0;
  for (const TimeNs t : step_times)
    sq += (static_cast<double>(t) - mean) * (static_cast<double>(t) - mean);
  return static_cast<TimeNs>(
      std::llround(std::sqrt(sq / static_cast<double>(step_times.size() - 1))));
}

std::vector<ShownStep> stepsToShow(const RunReport& report, const StepSelection& selection) {
  const auto times = selectedStepTimes(report, selection);
  const std::size_t n = times.size();
  if (n == 0) return {};
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i)
    order[i] = i;
  // Step numbers rise with the selection's order: equal times keep the earlier step first.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return times[a] < times[b]; });
  const std::size_t mid = order[(n - 1) / 2];
  // The slowest, of equal times the earlier step (max_element gives the first maximum).
  const auto top =
      static_cast<std::size_t>(std::max_element(times.begin(), times.end()) - times.begin());
  const std::string steps = std::to_string(n) + " steps covered";
  std::vector<ShownStep> out;
  ShownStep median{selection.used[mid], times[mid], false, {}};
  median.caption = "Step " + std::to_string(median.step) +
                   (n == 1   ? ", the one step covered"
                    : n == 2 ? ", the faster of the " + steps
                             : ", the median of the " + steps) +
                   " (" + formatDuration(median.step_ns) + ")";
  out.push_back(std::move(median));
  const double ratio =
      times[mid] > 0 ? static_cast<double>(times[top]) / static_cast<double>(times[mid]) : 0.0;
  if (top != mid && ratio > kSlowStepShownAbove) {
    char times_median[32];
    std::snprintf(times_median, sizeof times_median, "%.2f", ratio);
    ShownStep slow{selection.used[top], times[top], true, {}};
    slow.caption = "Step " + std::to_string(slow.step) +
                   (n == 2 ? ", the slower of the " : ", the slowest of the ") + steps + " (" +
                   formatDuration(slow.step_ns) + ", " + times_median + "× the " +
                   (n == 2 ? "faster" : "median") + ")";
    out.push_back(std::move(slow));
  }
  return out;
}

std::optional<std::pair<TimeNs, TimeNs>> stepWindow(const trace::Run& run, std::int32_t number) {
  std::optional<std::pair<TimeNs, TimeNs>> w;
  for (const auto& rank : run.ranks)
    for (const auto& s : rank.steps) {
      if (s.number != number) continue;
      if (!w) w.emplace(s.start, s.end);
      w->first = std::min(w->first, s.start);
      w->second = std::max(w->second, s.end);
    }
  return w;
}

std::vector<StepMean> stepMeans(const RunReport& report) {
  std::map<std::int32_t, StepMean> by_step;
  for (const auto& r : report.ranks) {
    for (const auto& st : r.steps) {
      auto& m = by_step[st.step];
      m.step = st.step;
      ++m.ranks;
      m.step_ns += st.dur_ns;  // sums here, means below
      m.exposed_ns += st.metrics.exposed_ns;
    }
  }
  std::vector<StepMean> out;
  for (auto& [n, m] : by_step) {
    m.step_ns /= m.ranks;
    m.exposed_ns /= m.ranks;
    out.push_back(m);
  }
  return out;
}

RunSummary summarizeRun(const RunReport& report) {
  RunSummary s;
  s.ranks = static_cast<std::int32_t>(report.ranks.size());
  s.world_size = report.completeness.world_size;
  s.missing_ranks = report.completeness.missing_ranks;
  s.first_quiet_rank = report.completeness.first_quiet_rank;
  s.first_quiet_ahead_ns = report.completeness.first_quiet_ahead_ns;
  s.selection = selectSteps(report);
  const auto& steps = s.selection.used;
  s.steps_used = static_cast<std::int32_t>(steps.size());
  for (const auto& r : report.ranks)
    s.per_rank.push_back(rankFigures(r, s.selection));
  if (!report.ranks.empty()) {
    s.bucket_setting = report.ranks.front().bucket_setting;
    s.overlap_setting = report.ranks.front().overlap_setting;
  }
  if (steps.empty()) {
    summarizeWholeTrace(report, s);
    return s;
  }
  TimeNs slowest_sum = 0;
  StepTotals totals;
  for (std::int32_t n : steps) {
    TimeNs slowest = 0;
    for (const auto& r : report.ranks) {
      const auto it = std::find_if(r.steps.begin(), r.steps.end(),
                                   [n](const StepReport& st) { return st.step == n; });
      if (it == r.steps.end()) continue;  // cannot happen: selected steps are on every rank
      const StepReport& st = *it;
      slowest = std::max(slowest, st.dur_ns);
      totals.add(st);
    }
    slowest_sum += slowest;
  }
  s.step_ns = slowest_sum / static_cast<TimeNs>(steps.size());
  s.overlap_pct = totals.overlapPct();
  s.exposed_ns_per_step = totals.exposedPerStep();
  s.exposed_wait_ns_per_step = totals.exposedWaitPerStep();
  s.allreduces_per_step =
      totals.samples ? totals.allreduces / static_cast<double>(totals.samples) : 0;
  s.dp_efficiency = totals.dpEfficiency();
  s.gpu_idle_pct = totals.gpuIdlePct();
  const auto& first = report.ranks.front();
  TimeNs wait = 0;
  std::int64_t waits = 0;
  for (const auto& b : first.buckets) {
    if (b.step == steps.front()) ++s.buckets_per_step;
    if (std::binary_search(steps.begin(), steps.end(), b.step)) {
      wait += b.wait_ns;
      ++waits;
    }
  }
  s.mean_bucket_wait_ns = waits ? wait / waits : 0;
  return s;
}

std::string percentText(const std::optional<double>& pct, int decimals) {
  if (!pct) return "n/a";
  char b[32];
  std::snprintf(b, sizeof b, "%.*f %%", decimals, *pct);
  return b;
}

std::string signedText(double v, int decimals, std::string_view unit) {
  if (!std::isfinite(v)) return "n/a";
  char b[48];
  std::snprintf(b, sizeof b, "%+.*f", decimals, v);
  // Rounded to zero: no sign, whichever side it came from.
  if (std::string_view(b).find_first_of("123456789") == std::string_view::npos)
    std::snprintf(b, sizeof b, "%.*f", decimals, 0.0);
  return b + std::string(unit);
}

std::string mibNumberText(double mib) {
  char b[48];
  // Ten significant digits: 0.1 prints as "0.1", a million as "1000000" (not "1e+06").
  std::snprintf(b, sizeof b, "%.10g", mib);
  return b;
}

std::string unquoted(std::string_view raw) {
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"')
    return std::string(raw.substr(1, raw.size() - 2));
  return std::string(raw);
}

std::string sourceText(std::string_view source) {
  return source == "sim"         ? "simulated"
         : source == "cuda"      ? "CUDA (measured)"
         : source == "predicted" ? "predicted (what-if replay, not a measurement)"
                                 : "imported";
}

std::string producerText(const trace::DdpscopeBlock& b, std::string_view distributed_backend) {
  std::string s;
  if (const auto model = b.configValue("model"); !model.empty()) {
    s += " · " + unquoted(model);
    if (const auto l = b.configValue("layers"); !l.empty()) s += ", " + unquoted(l) + " layers";
    if (const auto h = b.configValue("hidden"); !h.empty()) s += ", hidden " + unquoted(h);
  }
  std::string backend = unquoted(b.configValue("backend"));
  if (backend.empty()) backend = distributed_backend;
  if (!backend.empty()) s += " · backend " + backend;
  return s;
}

std::string runConfigurationText(const trace::Run& run, bool with_buckets) {
  if (run.ranks.empty()) return "no ranks";
  const trace::RankTrace& r = run.ranks.front();
  const auto& b = r.ddpscope;
  std::string s = sourceText(r.source()) + producerText(b, r.distributed_backend);
  std::int32_t world = 0;
  for (const auto& rank : run.ranks)
    world = std::max(world, rank.world_size);
  // Fewer ranks loaded than the world: said here too, as the summary says it.
  const auto loaded = static_cast<std::int32_t>(run.ranks.size());
  s += " · " + (loaded < world ? std::to_string(loaded) + " of " : std::string()) +
       std::to_string(world) + (world == 1 ? " rank" : " ranks");
  if (!with_buckets) return s;
  const std::string buckets = bucketSettingText(b);
  if (buckets.empty()) {
    s += " · bucket size not recorded";
  } else {
    s += " · buckets " + buckets;
    if (overlapSetting(b) == false) s += ", not overlapped";
  }
  return s;
}

namespace {
// A size as written in the configuration, shortest form: "0.1", not "0.10000000000000001".
std::string mibText(std::string_view raw) {
  const std::string text = unquoted(raw);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0') return text;
  return mibNumberText(v);
}
}  // namespace

std::string bucketSettingText(const trace::DdpscopeBlock& b) {
  const auto mb = b.configValue("bucket_mb");
  if (mb.empty()) return "";
  const std::string cap = mibText(mb);
  if (cap == "0") return "per tensor";
  std::string s = cap + " MiB";
  if (const auto first = b.configValue("first_bucket_mb"); !first.empty())
    s += " (first " + mibText(first) + " MiB)";
  return s;
}

std::optional<double> configNumber(const trace::DdpscopeBlock& b, std::string_view key) {
  const auto v = b.configValue(key);
  if (v.empty()) return std::nullopt;
  try {
    return std::stod(std::string(v));
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<bool> overlapSetting(const trace::DdpscopeBlock& b) {
  const auto v = b.configValue("overlap");
  if (v == "true") return true;
  if (v == "false") return false;
  return std::nullopt;
}

std::string overlapReading(const RunSummary& s) {
  if (s.overlap_setting == false && s.overlap_pct)
    return "overlap " + percentText(s.overlap_pct, 2) +
           ": recorded without overlap (every allreduce launched after backward), so only the "
           "work after backward can hide communication; with overlap, allreduces start during "
           "backward";
  if (s.buckets_per_step < 1 || s.buckets_per_step > 2 || !s.overlap_pct ||
      *s.overlap_pct >= kLowOverlapPct)
    return "";
  // Two: DDP's small first bucket, then everything else in one.
  return "overlap " + percentText(s.overlap_pct, 2) +
         (s.buckets_per_step == 1 ? ": one bucket per step, reduced after backward ends"
                                  : ": 2 buckets per step, most gradients reduced after backward "
                                    "ends") +
         "; smaller buckets start allreduces during backward";
}

RunFigureText runFigureText(const RunSummary& s) {
  RunFigureText t;
  if (s.world_size > s.ranks) {
    t.ranks = std::to_string(s.ranks) + " of " + std::to_string(s.world_size) + " ranks";
  } else {
    t.ranks = s.ranks == 1 ? "1 rank" : std::to_string(s.ranks) + " ranks";
  }
  t.scope = s.selection.rule;
  t.step = s.hasSteps() ? formatDuration(s.step_ns) : "n/a";
  t.overlap = percentText(s.overlap_pct, 2);
  // Without steps it is the mean per rank of the whole trace's: said so when there are several.
  t.exposed = formatDuration(s.exposed_ns_per_step) + (s.hasSteps()  ? "/step"
                                                       : s.ranks > 1 ? "/rank"
                                                                     : "");
  t.dp_efficiency =
      percentText(s.dp_efficiency ? std::optional(*s.dp_efficiency * 100) : std::nullopt, 1);
  t.gpu_idle = percentText(s.gpu_idle_pct, 1);
  if (s.hasSteps()) {
    char b[32];
    const double n = s.allreduces_per_step;
    std::snprintf(b, sizeof b, "%.*f", n == std::floor(n) ? 0 : 1, n);
    t.allreduces = b;
  } else {
    t.allreduces = "n/a (no steps)";
  }
  return t;
}

}  // namespace ddpscope::analysis
