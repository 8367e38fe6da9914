#include "app/cli/compare_command.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "app/analysis/analysis.h"
#include "app/analysis/digest_reader.h"
#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/sweep.h"
#include "tracer/format/json_text.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::cli {

namespace {
// The options compare and sweep share: --json and --rules.
void addJsonAndRules(CLI::App* c, bool& json, std::string& rules_file) {
  c->add_flag("--json", json, "Print JSON (the fields of docs/CLI.md)");
  c->add_option("--rules", rules_file,
                "Classification rules to apply before the built-in ones (docs/RULES.md)");
}
}  // namespace

CLI::App* addCompareCommand(CLI::App& app, CompareArgs& a) {
  auto* c = app.add_subcommand(
      "compare", "Two runs side by side: step time, overlap, exposed communication, ... (A → B)");
  addJsonAndRules(c, a.json, a.rules_file);
  c->add_option("A", a.a, "The first run: a trace file, a run folder or a run digest")->required();
  c->add_option("B", a.b, "The second run, set against the first (a trace, folder or digest)")
      ->required();
  return c;
}

namespace {

// What compare needs of a run: its summary, its configuration line and what like for like
// compares; from its traces (loaded, analysed, dropped) or from its digest (as written).
struct ComparedRun {
  analysis::RunSummary summary;
  std::string configuration;
  std::string configuration_without_buckets;  // what a sweep's runs must share
  analysis::RunIdentity identity;
  std::optional<double> bucket_mb;           // the recorded cap, when the run says it
  bool from_digest = false;                  // a digest keeps fewer settings than its traces
  std::vector<analysis::TimeNs> step_times;  // per selected step (selectedStepTimes)
  // The settings the trace records but its bucket caps and step count (ddpscope's
  // configuration: a straggler, jitter, ...), as written; none for a digest or an import.
  std::vector<std::pair<std::string, std::string>> settings;
};

// The cap a digest's bucket setting states ("25 MiB (first 1 MiB)", "per tensor").
std::optional<double> capOfSetting(const std::string& setting) {
  if (setting == "per tensor") return 0.0;
  char* end = nullptr;
  const double v = std::strtod(setting.c_str(), &end);
  if (end == setting.c_str() || std::string_view(end).rfind(" MiB", 0) != 0) return std::nullopt;
  return v;
}

ComparedRun comparedRun(const std::string& path, const analysis::AnalysisOptions& options) {
  ComparedRun c;
  if (analysis::isDigestFile(path)) {
    if (options.rules && options.rules->userRuleCount() > 0)
      std::cerr << "note: " << path
                << " is a run digest: its figures are those of the rules it was made with, not "
                   "--rules (make the digest again with --rules to apply them)\n";
    const auto digest = analysis::readDigest(path);
    c.summary = digest.run;
    c.configuration = analysis::digestConfigurationText(digest);
    c.identity = analysis::digestIdentity(digest);
    c.bucket_mb = capOfSetting(digest.run.bucket_setting);
    c.from_digest = true;
    c.step_times = analysis::digestStepTimes(digest);
    c.configuration_without_buckets = analysis::digestConfigurationText(digest, false);
    return c;
  }
  const trace::Run run = trace::loadRun({path});
  const auto report = analysis::analyzeRun(run, options);
  c.summary = analysis::summarizeRun(report);
  c.step_times = analysis::selectedStepTimes(report, c.summary.selection);
  // The producer's settings every rank shares (not a tracer's per-rank counts), but those a sweep
  // varies or says otherwise: its caps, its steps, the run's id, overlap and model (compared on
  // their own).
  if (!run.ranks.empty())
    for (const auto key : trace::runSettingKeys()) {
      if (key == "bucket_mb" || key == "first_bucket_mb" || key == "steps" || key == "run_id" ||
          key == "overlap" || key == "model")
        continue;
      const auto value = run.ranks.front().ddpscope.configValue(key);
      if (!value.empty()) c.settings.emplace_back(std::string(key), std::string(value));
    }
  c.configuration = analysis::runConfigurationText(run);
  c.configuration_without_buckets = analysis::runConfigurationText(run, false);
  c.identity = analysis::runIdentity(run);
  if (!run.ranks.empty())
    c.bucket_mb = analysis::configNumber(run.ranks.front().ddpscope, "bucket_mb");
  return c;
}

// "warning": the like-for-like warning, or null when there is none.
void appendWarning(std::string& o, const std::string& warning) {
  trace::appendJsonString(o, "warning");
  o += ": ";
  if (warning.empty())
    o += "null";
  else
    trace::appendJsonString(o, warning);
}

void runJson(std::string& o, const char* key, const std::string& path, const ComparedRun& run) {
  trace::appendJsonString(o, key);
  o += ": {";
  trace::appendJsonString(o, "path");
  o += ": ";
  trace::appendJsonString(o, path);
  o += ", ";
  trace::appendJsonString(o, "configuration");
  o += ": ";
  trace::appendJsonString(o, run.configuration);
  o += "}";
}

}  // namespace

int runCompare(const CompareArgs& args) {
  analysis::AnalysisOptions options;
  options.rules = analysis::ClassRules::forCommandLine(args.rules_file);
  // One run at a time: a run's traces are dropped once its summary is known, so two big runs
  // never share the memory. A digest is read as written (its rules were chosen when it was made).
  const ComparedRun a = comparedRun(args.a, options);
  const ComparedRun b = comparedRun(args.b, options);
  const auto rows = analysis::compareSummaries(a.summary, b.summary);
  const std::string warning = analysis::comparabilityWarning(a.identity, b.identity);
  if (args.json) {
    std::string o = "{";
    runJson(o, "a", args.a, a);
    o += ", ";
    runJson(o, "b", args.b, b);
    o += ", ";
    appendWarning(o, warning);
    o += ", ";
    trace::appendJsonString(o, "rows");
    o += ": [";
    for (std::size_t i = 0; i < rows.size(); ++i) {
      const auto& r = rows[i];
      o += i ? ", {" : "{";
      for (const auto& [k, v] : {std::pair<const char*, const std::string*>{"metric", &r.metric},
                                 {"a", &r.a},
                                 {"b", &r.b},
                                 {"delta", &r.delta}}) {
        trace::appendJsonString(o, k);
        o += ": ";
        trace::appendJsonString(o, *v);
        o += ", ";
      }
      // A figure the run does not have ("n/a") is null, not a zero.
      for (const auto& [k, text, v] :
           {std::tuple<const char*, const std::string*, double>{"a_value", &r.a, r.a_value},
            {"b_value", &r.b, r.b_value}}) {
        trace::appendJsonString(o, k);
        o += ": ";
        if (*text == "n/a")
          o += "null";
        else
          trace::appendDouble(o, v);
        o += k[0] == 'a' ? ", " : "";
      }
      o += "}";
    }
    o += "]}\n";
    std::cout << o;
    return 0;
  }
  std::cout << "A: " << args.a << "\n   " << a.configuration << "\n";
  std::cout << "B: " << args.b << "\n   " << b.configuration << "\n";
  if (!warning.empty()) std::cout << "warning: " << warning << "\n";
  std::cout << "\n";
  // Widths in characters, as padded counts them: "–" and "µ" are one each.
  std::size_t metric_w = 6, a_w = 1, b_w = 1;
  for (const auto& r : rows) {
    metric_w = std::max(metric_w, analysis::textColumns(r.metric));
    a_w = std::max(a_w, analysis::textColumns(r.a));
    b_w = std::max(b_w, analysis::textColumns(r.b));
  }
  std::cout << "  " << analysis::padded("metric", metric_w + 2) << analysis::padded("A", a_w + 2)
            << analysis::padded("B", b_w + 2) << "B − A\n";
  for (const auto& r : rows)
    std::cout << "  " << analysis::padded(r.metric, metric_w + 2) << analysis::padded(r.a, a_w + 2)
              << analysis::padded(r.b, b_w + 2) << r.delta << "\n";
  return 0;
}

CLI::App* addSweepCommand(CLI::App& app, SweepArgs& a) {
  auto* c = app.add_subcommand(
      "sweep", "Measured runs at several bucket sizes side by side, and the fastest");
  addJsonAndRules(c, a.json, a.rules_file);
  c->add_option("RUN", a.runs,
                "Runs (trace files, run folders or digests), one per bucket size; MB=PATH gives "
                "the size of a run that does not record it (an imported trace)")
      ->required();
  return c;
}

namespace {

// The sweep's mark of each run: the fastest, and the runs whose mean step time is within twice
// the standard error of the difference of the two means (σ/√n of each run's steps): not told
// apart by these measurements; more steps, or repeated runs, narrow it.
struct SweepTies {
  std::size_t best = 0;
  std::vector<std::size_t> tied;
};

// One run of a sweep: its point (size, summary, label), what was read, its step time's spread.
struct SweepRun {
  analysis::SweepPoint point;
  ComparedRun run;
  std::optional<analysis::TimeNs> spread;  // stepTimeSpread of run.step_times
};

SweepTies sweepTies(const std::vector<SweepRun>& runs) {
  SweepTies t;
  const auto step = [&](std::size_t i) { return runs[i].point.summary.step_ns; };
  for (std::size_t i = 1; i < runs.size(); ++i)
    if (step(i) < step(t.best)) t.best = i;
  const auto se2 = [&](std::size_t i) {
    const double s = static_cast<double>(runs[i].spread.value_or(0));
    const auto n = runs[i].run.step_times.size();
    return n > 0 ? s * s / static_cast<double>(n) : 0.0;
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (i == t.best) continue;
    const auto gap = static_cast<double>(step(i) - step(t.best));
    if (gap <= 2 * std::sqrt(se2(i) + se2(t.best))) t.tied.push_back(i);
  }
  return t;
}

}  // namespace

int runSweep(const SweepArgs& args) {
  analysis::AnalysisOptions options;
  options.rules = analysis::ClassRules::forCommandLine(args.rules_file);
  // The sizes stated before anything is read: a bad one fails at once.
  std::vector<std::pair<std::optional<double>, std::string>> given;
  for (const auto& r : args.runs) {
    const auto eq = r.find('=');
    std::error_code ec;
    if (eq == std::string::npos || eq == 0 || std::filesystem::exists(r, ec)) {
      given.emplace_back(std::nullopt, r);  // a path (one with '=' in its name too)
      continue;
    }
    const std::string mb = r.substr(0, eq);
    char* end = nullptr;
    const double v = std::strtod(mb.c_str(), &end);
    if (end == mb.c_str() || *end != '\0' || !(v >= 0) || !std::isfinite(v) || v > (1 << 20)) {
      std::cerr << "ddpscope-cli sweep: '" << mb << "' in " << r
                << " is not a bucket size in MiB (give MB=PATH, as 25=" << r.substr(eq + 1)
                << ")\n";
      return 2;
    }
    given.emplace_back(v, r.substr(eq + 1));
  }
  std::vector<SweepRun> runs;
  std::set<std::string> seen;
  for (const auto& [stated, path] : given) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(path, ec).string();
    if (!seen.insert(ec ? path : canonical).second) {
      std::cerr << "ddpscope-cli sweep: " << path << " is given twice; give each run once\n";
      return 2;
    }
    ComparedRun run = comparedRun(path, options);
    if (stated && run.bucket_mb && *run.bucket_mb != *stated) {
      std::cerr << "ddpscope-cli sweep: " << path << " records bucket size "
                << analysis::mibNumberText(*run.bucket_mb) << " MiB, not "
                << analysis::mibNumberText(*stated) << " as given; give it without "
                << analysis::mibNumberText(*stated) << "=\n";
      return 2;
    }
    const auto mb = stated ? stated : run.bucket_mb;
    if (!mb) {
      std::cerr << "ddpscope-cli sweep: " << path
                << " does not record its bucket size: give it as MB=" << path << " (25=" << path
                << " for PyTorch DDP's default)\n";
      return 2;
    }
    if (!run.summary.hasSteps()) {
      std::cerr << "ddpscope-cli sweep: " << path
                << " has no training steps (no ProfilerStep# ranges): a sweep compares step "
                   "times; leave it out\n";
      return 2;
    }
    for (const auto& r : runs)
      if (r.point.bucket_mb == *mb) {
        std::cerr << "ddpscope-cli sweep: two runs at " << analysis::mibNumberText(*mb)
                  << " MiB: " << r.point.label << " and " << path << "; give one run per size\n";
        return 2;
      }
    SweepRun entry;
    entry.point.bucket_mb = *mb;
    entry.point.summary = run.summary;
    entry.point.label = path;
    entry.point.configuration = run.configuration_without_buckets;
    entry.spread = analysis::stepTimeSpread(run.step_times);
    entry.run = std::move(run);
    runs.push_back(std::move(entry));
  }
  // Like for like but for the bucket size: source, model and world size; overlap; and every
  // other setting a run of the agent records (a straggler, jitter, ...), between the runs read
  // from their traces (a digest keeps fewer settings).
  std::vector<std::string> why;
  const auto differs = [&](const std::string& what) {
    if (std::find(why.begin(), why.end(), what) == why.end()) why.push_back(what);
  };
  for (std::size_t i = 1; i < runs.size(); ++i) {
    const auto& first = runs.front();
    const auto& other = runs[i];
    if (const auto w = analysis::comparabilityWarning(first.run.identity, other.run.identity);
        !w.empty()) {
      // "Not like for like: sources differ (...). Differences ..." -> "sources differ (...)".
      constexpr std::string_view kHead = "Not like for like: ";
      const std::size_t from = w.rfind(kHead, 0) == 0 ? kHead.size() : 0;
      differs(w.substr(from, w.find(". Differences") - from) + " (" + other.point.label + ")");
    }
    // Overlap where both runs say it (an imported trace does not).
    const auto& oa = first.run.summary.overlap_setting;
    const auto& ob = other.run.summary.overlap_setting;
    if (oa && ob && *oa != *ob)
      differs("overlap differs (" + first.point.label + ": " + (*oa ? "on" : "off") + ", " +
              other.point.label + ": " + (*ob ? "on" : "off") + ")");
  }
  // Each setting either run records, both ways.
  std::optional<std::size_t> reference;
  const auto valueOf = [](const ComparedRun& r, const std::string& key) -> std::string {
    for (const auto& [k, v] : r.settings)
      if (k == key) return v;
    return "not recorded";
  };
  for (std::size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].run.from_digest) continue;
    if (!reference) {
      reference = i;
      continue;
    }
    const auto& a = runs[*reference].run;
    const auto& b = runs[i].run;
    std::vector<std::string> keys;
    for (const auto* r : {&a, &b})
      for (const auto& kv : r->settings)
        if (std::find(keys.begin(), keys.end(), kv.first) == keys.end()) keys.push_back(kv.first);
    for (const auto& key : keys) {
      const auto va = valueOf(a, key), vb = valueOf(b, key);
      if (!trace::sameSettingValue(va, vb))
        differs(key + " differs (" + runs[*reference].point.label + ": " + va + ", " +
                runs[i].point.label + ": " + vb + ")");
    }
  }
  std::string warning;
  if (!why.empty()) {
    warning = "Not like for like: ";
    for (std::size_t i = 0; i < why.size(); ++i)
      warning += (i ? "; " : "") + why[i];
    warning += ". Differences may come from these, not from the bucket size.";
  }
  // In order of size, as the table lists them (sizes are distinct).
  std::sort(runs.begin(), runs.end(), [](const SweepRun& x, const SweepRun& y) {
    return x.point.bucket_mb < y.point.bucket_mb;
  });
  std::vector<analysis::SweepPoint> points;
  for (const auto& r : runs)
    points.push_back(r.point);
  const SweepTies ties = sweepTies(runs);
  // No current size: the sweep says the fastest and its gain over DDP's default 25 MiB.
  const auto rec = analysis::recommendBucketSize(points, -1);
  std::string text = rec.text;
  if (!ties.tied.empty()) {
    std::vector<double> sizes;
    for (const auto i : ties.tied)
      sizes.push_back(points[i].bucket_mb);
    std::string list;
    for (std::size_t i = 0; i < sizes.size(); ++i)
      list +=
          (i == 0                  ? ""
           : i + 1 == sizes.size() ? " and "
                                   : ", ") +
          (sizes[i] == 0 ? std::string("per tensor") : analysis::mibNumberText(sizes[i]) + " MiB");
    text +=
        " Measured within the noise of it (twice the standard error of the difference of the "
        "two runs' mean step times): " +
        list +
        "; these runs do not tell them apart: run more steps, or repeat the runs, to choose "
        "among them.";
  }
  const auto mark = [&](std::size_t i) -> std::string {
    if (i == ties.best) return ties.tied.empty() ? "fastest" : "fastest, tied";
    return std::find(ties.tied.begin(), ties.tied.end(), i) != ties.tied.end() ? "tied" : "";
  };
  const auto spreadText = [&](std::size_t i) {
    return runs[i].spread ? "±" + analysis::formatDuration(*runs[i].spread) : std::string("n/a");
  };
  if (args.json) {
    std::string o = "{";
    trace::appendJsonString(o, "measured");
    o += ": true, ";
    trace::appendJsonString(o, "points");
    o += ": [";
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& p = points[i];
      const auto f = analysis::runFigureText(p.summary);
      const std::string m = mark(i);
      o += i ? ", {" : "{";
      trace::appendJsonString(o, "bucket_mb");
      o += ": ";
      trace::appendDouble(o, p.bucket_mb);
      for (const auto& [k, v] : {std::pair<const char*, const std::string*>{"path", &p.label},
                                 {"configuration", &p.configuration},
                                 {"step_rule", &p.summary.selection.rule},
                                 {"step", &f.step},
                                 {"overlap", &f.overlap},
                                 {"exposed", &f.exposed},
                                 {"allreduces_per_step", &f.allreduces},
                                 {"mark", &m}}) {
        o += ", ";
        trace::appendJsonString(o, k);
        o += ": ";
        trace::appendJsonString(o, *v);
      }
      o += ", ";
      trace::appendJsonString(o, "step_us");
      o += ": ";
      trace::appendDouble(o, static_cast<double>(p.summary.step_ns) / 1e3);
      o += ", ";
      trace::appendJsonString(o, "step_spread_us");
      o += ": ";
      if (runs[i].spread)
        trace::appendDouble(o, static_cast<double>(*runs[i].spread) / 1e3);
      else
        o += "null";
      o += "}";
    }
    o += "], ";
    trace::appendJsonString(o, "best_mb");
    o += ": ";
    trace::appendDouble(o, rec.best_mb);
    o += ", ";
    appendWarning(o, warning);
    o += ", ";
    trace::appendJsonString(o, "text");
    o += ": ";
    trace::appendJsonString(o, text);
    o += "}\n";
    std::cout << o;
    return 0;
  }
  std::cout << "sweep (measured): " << points.size() << (points.size() == 1 ? " run" : " runs")
            << ", " << points.front().configuration << "\n";
  if (!warning.empty()) std::cout << "warning: " << warning << "\n";
  std::cout << "\n";
  std::vector<std::vector<std::string>> rows{{"bucket MiB", "step time", "spread", "overlap",
                                              "exposed", "allreduces/step", "steps", "run"}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto f = analysis::runFigureText(p.summary);
    const std::string m = mark(i);
    rows.push_back({p.bucket_mb == 0 ? "0 (tensor)" : analysis::mibNumberText(p.bucket_mb), f.step,
                    spreadText(i), f.overlap, f.exposed, f.allreduces, f.scope,
                    p.label + (m.empty() ? "" : "  <- " + m)});
  }
  std::vector<std::size_t> widths(rows.front().size(), 0);
  for (const auto& r : rows)
    for (std::size_t c = 0; c + 1 < r.size(); ++c)
      widths[c] = std::max(widths[c], analysis::textColumns(r[c]));
  for (const auto& r : rows) {
    std::string line = "  ";
    for (std::size_t c = 0; c + 1 < r.size(); ++c)
      line += analysis::padded(r[c], widths[c] + 2);
    std::cout << line << r.back() << "\n";
  }
  std::cout << "(spread: the standard deviation of the step time over the steps covered; a size "
               "within twice the standard error of the difference of the means is tied)\n";
  std::cout << "\n" << text << "\n";
  return 0;
}

}  // namespace ddpscope::cli
