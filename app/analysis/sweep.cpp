#include "app/analysis/sweep.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <stdexcept>

#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::analysis {

std::vector<double> defaultSweepSizes() {
  return {0, 1, 2, 5, 10, 25, 50, 100, 200, 400};
}

namespace {
std::string fmtPct(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.1f %%", v);
  return b;
}
// As --bucket-mb and PyTorch's bucket_cap_mb, in the words of every other outlet.
std::string fmtMb(double mb) {
  return mb == 0 ? "per tensor (0 MiB)" : mibNumberText(mb) + " MiB";
}
std::optional<double> gainOver(const std::vector<SweepPoint>& points, double mb, TimeNs best_ns) {
  for (const auto& p : points) {
    if (std::fabs(p.bucket_mb - mb) < 1e-9 && p.summary.step_ns > 0) {
      return 100.0 * static_cast<double>(p.summary.step_ns - best_ns) /
             static_cast<double>(p.summary.step_ns);
    }
  }
  return std::nullopt;
}
}  // namespace

SweepRecommendation recommendBucketSize(std::vector<SweepPoint>& points, double current_mb) {
  if (points.empty()) throw std::invalid_argument("a sweep needs at least one run");
  std::sort(points.begin(), points.end(),
            [](const SweepPoint& a, const SweepPoint& b) { return a.bucket_mb < b.bucket_mb; });
  SweepRecommendation rec;
  for (std::size_t i = 1; i < points.size(); ++i) {
    if (points[i].summary.step_ns < points[rec.best].summary.step_ns) rec.best = i;
  }
  const auto& best = points[rec.best];
  rec.best_mb = best.bucket_mb;
  rec.best_at_edge = points.size() > 2 && (rec.best == 0 || rec.best + 1 == points.size());
  rec.gain_vs_current_pct = gainOver(points, current_mb, best.summary.step_ns);
  rec.gain_vs_ddp_default_pct = gainOver(points, 25.0, best.summary.step_ns);
  std::string t = "Fastest bucket size: " + fmtMb(best.bucket_mb) + ", " +
                  formatDuration(best.summary.step_ns) + " per step";
  if (best.summary.overlap_pct)
    t += ", " + fmtPct(*best.summary.overlap_pct) + " of communication hidden";
  t += ".";
  if (rec.gain_vs_current_pct && std::fabs(current_mb - best.bucket_mb) > 1e-9) {
    t += " It saves " + fmtPct(*rec.gain_vs_current_pct) + " of step time over the current " +
         fmtMb(current_mb) + ".";
  }
  if (rec.gain_vs_ddp_default_pct && std::fabs(25.0 - best.bucket_mb) > 1e-9 &&
      std::fabs(25.0 - current_mb) > 1e-9) {  // the current size said it already
    t += " Against PyTorch DDP's default 25 MiB it saves " + fmtPct(*rec.gain_vs_ddp_default_pct) +
         ".";
  }
  if (rec.best_at_edge)
    t += " The best size is at the edge of the sweep: extend the range to be sure.";
  rec.text = t;
  return rec;
}

std::vector<ComparisonRow> compareRuns(const RunReport& a, const RunReport& b) {
  return compareSummaries(summarizeRun(a), summarizeRun(b));
}

std::vector<ComparisonRow> compareSummaries(const RunSummary& sa, const RunSummary& sb) {
  std::vector<ComparisonRow> rows;
  // A run summarised over its whole trace (no steps) has no per-step figure: n/a, not 0.
  auto addTime = [&](const char* metric, std::optional<TimeNs> ox, std::optional<TimeNs> oy) {
    if (!ox || !oy) {
      rows.push_back({metric, ox ? formatDuration(*ox) : "n/a", oy ? formatDuration(*oy) : "n/a",
                      "n/a", static_cast<double>(ox.value_or(0)),
                      static_cast<double>(oy.value_or(0))});
      return;
    }
    const TimeNs x = *ox, y = *oy;
    ComparisonRow r{metric, formatDuration(x),      formatDuration(y),
                    "",     static_cast<double>(x), static_cast<double>(y)};
    const TimeNs d = y - x;
    r.delta = (d > 0 ? "+" : d < 0 ? "-" : "") + formatDuration(d >= 0 ? d : -d);
    if (x > 0) {
      // A change of over 10× reads as a ratio ("×3140"), not as "+313960.3 %".
      const double ratio = static_cast<double>(y) / static_cast<double>(x);
      char b[32];
      std::snprintf(b, sizeof b, "%.0f", ratio);
      r.delta +=
          ratio > 10
              ? std::string(" (×") + b + ")"
              : " (" + signedText(100.0 * static_cast<double>(d) / static_cast<double>(x), 1) + ")";
    }
    rows.push_back(r);
  };
  auto addNumber = [&](const char* metric, std::optional<double> x, std::optional<double> y,
                       const char* unit, int decimals, const char* delta_unit = nullptr) {
    char buf[64];
    auto f = [&](std::optional<double> v) {
      if (!v) return std::string("n/a");
      std::snprintf(buf, sizeof buf, "%.*f%s", decimals, *v, unit);
      return std::string(buf);
    };
    ComparisonRow r{metric, f(x), f(y), "n/a", x.value_or(0), y.value_or(0)};
    if (x && y) r.delta = signedText(*y - *x, decimals, delta_unit != nullptr ? delta_unit : unit);
    rows.push_back(r);
  };
  rows.push_back(
      {std::string(kStepsCoveredMetric), sa.selection.rule, sb.selection.rule, "", 0, 0});
  const auto perStep = [](const RunSummary& s, auto v) -> std::optional<decltype(v)> {
    if (s.selection.whole_trace) return std::nullopt;
    return v;
  };
  addTime("step time", perStep(sa, sa.step_ns), perStep(sb, sb.step_ns));
  // Differences of percentages are percentage points.
  addNumber("overlap", sa.overlap_pct, sb.overlap_pct, " %", 2, " pp");
  addTime("exposed communication / step", perStep(sa, sa.exposed_ns_per_step),
          perStep(sb, sb.exposed_ns_per_step));
  // Of it, waiting for a late rank: what a straggler adds, which no bucket size removes; a row
  // only when either run matched its collectives across ranks.
  if (sa.exposed_wait_ns_per_step || sb.exposed_wait_ns_per_step)
    addTime("exposed waiting for a late rank / step", sa.exposed_wait_ns_per_step,
            sb.exposed_wait_ns_per_step);
  // A count: whole numbers unless a run's steps differ in it (a mean with a fraction).
  const auto whole = [](double v) { return v == std::floor(v); };
  addNumber("allreduces / step", perStep(sa, sa.allreduces_per_step),
            perStep(sb, sb.allreduces_per_step), "",
            whole(sa.allreduces_per_step) && whole(sb.allreduces_per_step) ? 0 : 1);
  addNumber(
      "DP efficiency", sa.dp_efficiency ? std::optional(*sa.dp_efficiency * 100) : std::nullopt,
      sb.dp_efficiency ? std::optional(*sb.dp_efficiency * 100) : std::nullopt, " %", 1, " pp");
  // Without buckets (an import with no DDP buckets) there is no wait to average, as in the JSON.
  const auto bucketWait = [&](const RunSummary& s) -> std::optional<TimeNs> {
    if (s.buckets_per_step <= 0) return std::nullopt;
    return perStep(s, s.mean_bucket_wait_ns);
  };
  addTime("mean bucket queued", bucketWait(sa), bucketWait(sb));
  return rows;
}

RunIdentity runIdentity(const trace::Run& run) {
  RunIdentity id;
  if (run.ranks.empty()) return id;
  const auto& first = run.ranks.front();
  id.source = std::string(first.source());
  id.model = std::string(first.ddpscope.configValue("model"));
  for (const auto& rank : run.ranks)
    id.world_size = std::max(id.world_size, rank.world_size);
  return id;
}

std::vector<std::string> identityDifferences(const RunIdentity& a, const RunIdentity& b) {
  std::vector<std::string> why;
  if (a.source != b.source) why.push_back("sources differ (" + a.source + " vs " + b.source + ")");
  if (a.model && b.model && *a.model != *b.model) {
    const auto name = [](const std::string& m) { return m.empty() ? "not recorded" : m; };
    why.push_back("models differ (" + name(*a.model) + " vs " + name(*b.model) + ")");
  }
  if (a.world_size != b.world_size)
    why.push_back("world sizes differ (" + std::to_string(a.world_size) + " vs " +
                  std::to_string(b.world_size) + ")");
  return why;
}

std::vector<std::pair<std::string, std::string>> sweepSettings(const trace::Run& run) {
  if (run.ranks.empty()) return {};
  return sweepSettings(run.ranks.front().ddpscope);
}

std::vector<std::pair<std::string, std::string>> sweepSettings(const trace::DdpscopeBlock& block) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto key : trace::runSettingKeys()) {
    if (key == "bucket_mb" || key == "first_bucket_mb" || key == "steps" || key == "run_id" ||
        key == "overlap" || key == "model")
      continue;
    const auto value = block.configValue(key);
    if (!value.empty()) out.emplace_back(std::string(key), std::string(value));
  }
  return out;
}

std::optional<double> recordedBucketMb(const trace::Run& run) {
  if (run.ranks.empty()) return std::nullopt;
  return configNumber(run.ranks.front().ddpscope, "bucket_mb");
}

MeasuredRun measuredRun(const MeasuredRunInput& in, double bucket_mb) {
  MeasuredRun m;
  m.bucket_mb = bucket_mb;
  m.label = in.label;
  m.configuration = runConfigurationText(*in.run, false);
  m.summary = *in.summary;
  m.step_times = selectedStepTimes(*in.report, in.summary->selection);
  m.identity = runIdentity(*in.run);
  m.settings = sweepSettings(*in.run);
  m.recorded_bucket_mb = recordedBucketMb(*in.run);
  return m;
}

std::string MeasuredSweep::mark(std::size_t i) const {
  if (i == best) return tied.empty() ? "fastest" : "fastest, tied";
  return std::find(tied.begin(), tied.end(), i) != tied.end() ? "tied" : "";
}

std::string settingsNotComparedNote(const std::vector<MeasuredRun>& runs) {
  std::vector<std::string> digests;
  for (const auto& r : runs)
    if (!r.settings_known) digests.push_back(r.label);
  if (digests.empty()) return {};
  std::string list;
  for (std::size_t i = 0; i < digests.size(); ++i)
    list += (i == 0 ? "" : i + 1 == digests.size() ? " and " : ", ") + digests[i];
  return "Settings not compared for " + list +
         ": a run digest of version 1 or 2 keeps no producer settings (a straggler, jitter, "
         "seed, ...), so a difference in them would not be warned of; compare the runs' traces, "
         "or digests made again by this ddpscope, to check them.";
}

std::string comparedVaried(const RunSummary& a, const RunSummary& b) {
  // Overlap as likeForLikeWarning takes it: different only when both runs record it.
  const bool overlap_differs =
      a.overlap_setting && b.overlap_setting && *a.overlap_setting != *b.overlap_setting;
  const bool same =
      !a.bucket_setting.empty() && a.bucket_setting == b.bucket_setting && !overlap_differs;
  return same ? std::string() : std::string("bucket configuration");
}

std::string sharedConfiguration(const std::vector<MeasuredRun>& runs) {
  const auto own = [](const MeasuredRun& r) { return withoutDigestPrefix(r.configuration); };
  if (runs.empty()) return {};
  for (const auto& r : runs)
    if (own(r) != own(runs.front())) return {};
  return std::string(own(runs.front()));
}

std::string likeForLikeWarning(const std::vector<MeasuredRun>& runs, std::string_view varied) {
  std::vector<std::string> why;
  const auto differs = [&](const std::string& what) {
    if (std::find(why.begin(), why.end(), what) == why.end()) why.push_back(what);
  };
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const auto& first = runs.front();
    const auto& other = runs[i];
    if (const auto ids = identityDifferences(first.identity, other.identity); !ids.empty()) {
      std::string what;
      for (std::size_t k = 0; k < ids.size(); ++k)
        what += (k ? ", " : "") + ids[k];
      differs(what + " between " + first.label + " and " + other.label);
    }
    // The same ranks of one world: a run missing some has figures of the ranks loaded alone
    // (the slowest rank, the late rank and the waiting may be among those missing).
    const auto& sa = first.summary;
    const auto& sb = other.summary;
    if (sa.world_size == sb.world_size && sa.missing_ranks != sb.missing_ranks) {
      const auto loaded = [](const RunSummary& s) {
        if (s.missing_ranks.empty()) return "all " + std::to_string(s.world_size);
        return std::to_string(s.ranks) + " of " + std::to_string(s.world_size) + ", missing rank" +
               (s.missing_ranks.size() == 1 ? " " : "s ") + rankRanges(s.missing_ranks);
      };
      differs("ranks loaded differ (" + first.label + ": " + loaded(sa) + "; " + other.label +
              ": " + loaded(sb) + ")");
    }
    // Figures over selected steps against a whole trace's (a trace without step markers): a
    // step's overlap and a whole run's are not the same quantity.
    if (sa.selection.whole_trace != sb.selection.whole_trace) {
      const auto scope = [](const RunSummary& s) {
        return s.selection.whole_trace ? "over the whole trace (no step markers)" : "over steps";
      };
      differs("figures " + std::string(scope(sa)) + " for " + first.label + ", " + scope(sb) +
              " for " + other.label);
    }
    // Overlap where both runs say it (an imported trace does not).
    const auto& oa = first.summary.overlap_setting;
    const auto& ob = other.summary.overlap_setting;
    if (oa && ob && *oa != *ob)
      differs("overlap differs (" + first.label + ": " + (*oa ? "on" : "off") + ", " + other.label +
              ": " + (*ob ? "on" : "off") + ")");
  }
  // Each setting either run records, both ways.
  const MeasuredRun* reference = nullptr;
  const auto valueOf = [](const MeasuredRun& r, const std::string& key) -> std::string {
    for (const auto& [k, v] : r.settings)
      if (k == key) return v;
    return "not recorded";
  };
  for (const auto& r : runs) {
    // An older digest keeps no settings, an imported trace records none: nothing to compare.
    if (!r.settings_known || r.settings.empty()) continue;
    if (!reference) {
      reference = &r;
      continue;
    }
    std::vector<std::string> keys;
    for (const auto* x : {reference, &r})
      for (const auto& kv : x->settings)
        if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
    for (const auto& key : keys) {
      const auto va = valueOf(*reference, key), vb = valueOf(r, key);
      if (!trace::sameSettingValue(va, vb))
        differs(key + " differs (" + reference->label + ": " + trace::settingText(key, va) + ", " +
                r.label + ": " + trace::settingText(key, vb) + ")");
    }
  }
  if (why.empty()) return {};
  std::string warning = "Not like for like: ";
  for (std::size_t i = 0; i < why.size(); ++i)
    warning += (i ? "; " : "") + why[i];
  warning += ". Differences may come from " + std::string(why.size() == 1 ? "this" : "these");
  return varied.empty() ? warning + "." : warning + ", not from the " + std::string(varied) + ".";
}

std::optional<MeasuredSweep> measuredSweep(std::vector<MeasuredRun> runs, double current_mb,
                                           std::string* error) {
  const auto fail = [&](std::string message) -> std::optional<MeasuredSweep> {
    if (error) *error = std::move(message);
    return std::nullopt;
  };
  if (runs.size() < 2)
    return fail("a sweep sets two or more runs side by side, one per bucket size; " +
                std::string(runs.empty() ? "none was" : "one was") + " given");
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (!runs[i].summary.hasSteps())
      return fail(runs[i].label +
                  " has no training steps (no ProfilerStep# ranges): a sweep compares step "
                  "times; leave it out");
    for (std::size_t j = 0; j < i; ++j) {
      if (runs[j].bucket_mb == runs[i].bucket_mb)
        return fail("two runs at " + mibNumberText(runs[i].bucket_mb) + " MiB: " + runs[j].label +
                    " and " + runs[i].label + "; give one run per size");
      // Two measured runs never time every step alike to the nanosecond: one run given twice
      // (a trace and its copy, or its digest) would make a size look as fast as another. Two
      // simulated runs may (a cap beyond the model's gradients makes the same buckets), and
      // they record their sizes.
      const auto& ri = runs[i].recorded_bucket_mb;
      const auto& rj = runs[j].recorded_bucket_mb;
      const bool recorded_apart = ri && rj && *ri != *rj;
      if (!runs[i].step_times.empty() && runs[j].step_times == runs[i].step_times &&
          !recorded_apart)
        return fail(runs[j].label + " and " + runs[i].label +
                    " have the same step times to the nanosecond: one run given at " +
                    mibNumberText(runs[j].bucket_mb) + " and at " +
                    mibNumberText(runs[i].bucket_mb) + " MiB? give each size its own run");
    }
  }
  MeasuredSweep s;
  // Listed by size, and warned against the first listed (the one a table's header describes).
  std::sort(runs.begin(), runs.end(),
            [](const MeasuredRun& x, const MeasuredRun& y) { return x.bucket_mb < y.bucket_mb; });
  s.warning = likeForLikeWarning(runs, "bucket size");
  s.note = settingsNotComparedNote(runs);
  for (const auto& r : runs) {
    SweepPoint p;
    p.bucket_mb = r.bucket_mb;
    p.summary = r.summary;
    p.label = r.label;
    p.configuration = r.configuration;
    s.points.push_back(std::move(p));
    s.spread.push_back(stepTimeSpread(r.step_times));
  }
  s.runs = std::move(runs);
  // The fastest is the recommendation's (recommendBucketSize sorts the points by size: they
  // already are, with distinct sizes, so its index is also that of s.runs and s.spread); tied
  // with it, the sizes within its noise: σ/√n of each run's steps.
  s.recommendation = recommendBucketSize(s.points, current_mb);
  s.best = s.recommendation.best;
  const auto step = [&](std::size_t i) { return s.points[i].summary.step_ns; };
  const auto se2 = [&](std::size_t i) {
    const double sd = static_cast<double>(s.spread[i].value_or(0));
    const auto n = s.runs[i].step_times.size();
    return n > 0 ? sd * sd / static_cast<double>(n) : 0.0;
  };
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    if (i == s.best) continue;
    const auto gap = static_cast<double>(step(i) - step(s.best));
    if (gap <= 2 * std::sqrt(se2(i) + se2(s.best))) s.tied.push_back(i);
  }
  s.text = s.recommendation.text;
  if (!s.warning.empty())
    s.text =
        "These runs are not like for like (the warning): what differs between them may "
        "account for the differences, not the bucket size. " +
        s.text;
  if (!s.tied.empty()) {
    std::string list;
    for (std::size_t k = 0; k < s.tied.size(); ++k) {
      const double mb = s.points[s.tied[k]].bucket_mb;
      list += (k == 0                   ? ""
               : k + 1 == s.tied.size() ? " and "
                                        : ", ") +
              (mb == 0 ? std::string("per tensor") : mibNumberText(mb) + " MiB");
    }
    s.text +=
        " Measured within the noise of it (twice the standard error of the difference of the "
        "two runs' mean step times): " +
        list +
        "; these runs do not tell them apart: run more steps, or repeat the runs, to choose "
        "among them.";
  }
  return s;
}

}  // namespace ddpscope::analysis
