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

// What compare and sweep need of a run: what like for like compares (analysis::measuredRun of
// its traces, loaded, analysed and dropped, or measuredDigest of its digest, as written; its label
// and bucket size set where it is used), its configuration line with its buckets, and its
// warnings.
struct ComparedRun {
  analysis::MeasuredRun measured;
  std::string configuration;
  // What `summary` warns of this run (missing ranks, a trace with no events, ...): its report's
  // warnings, or the digest's, then each rank's own ("rank 3: ...").
  std::vector<std::string> warnings;
  void addRankWarnings(std::int32_t rank, const std::vector<std::string>& of_rank) {
    for (const auto& w : of_rank)
      warnings.push_back(analysis::rankWarning(rank, w));
  }
};

ComparedRun comparedRun(const std::string& path, const analysis::AnalysisOptions& options) {
  ComparedRun c;
  if (analysis::isDigestFile(path)) {
    if (options.rules && options.rules->userRuleCount() > 0)
      std::cerr << "note: " << path
                << " is a run digest: its figures are those of the rules it was made with, not "
                   "--rules (make the digest again with --rules to apply them)\n";
    const auto digest = analysis::readDigest(path);
    c.measured = analysis::measuredDigest(digest, path, 0);
    c.configuration = analysis::digestConfigurationText(digest);
    c.warnings = digest.warnings;
    for (const auto& r : digest.ranks)
      c.addRankWarnings(r.rank, r.warnings);
    return c;
  }
  const trace::Run run = trace::loadRun({path});
  const auto report = analysis::analyzeRun(run, options);
  const auto summary = analysis::summarizeRun(report);
  c.measured = analysis::measuredRun({&run, &report, &summary, path}, 0);
  c.configuration = analysis::runConfigurationText(run);
  c.warnings = report.warnings;
  for (const auto& r : report.ranks)
    c.addRankWarnings(r.rank, r.warnings);
  return c;
}

// A run as a sweep and the like-for-like warning set it beside others.
analysis::MeasuredRun measured(ComparedRun run, const std::string& label, double bucket_mb) {
  analysis::MeasuredRun m = std::move(run.measured);
  m.label = label;
  m.bucket_mb = bucket_mb;
  return m;
}

// "key": text, or null when the text is empty ("warning": the like-for-like warning; "note":
// settingsNotComparedNote).
void appendTextOrNull(std::string& o, const char* key, const std::string& text) {
  trace::appendJsonString(o, key);
  o += ": ";
  if (text.empty())
    o += "null";
  else
    trace::appendJsonString(o, text);
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
  o += ", ";
  trace::appendJsonString(o, "warnings");
  o += ": [";
  for (std::size_t i = 0; i < run.warnings.size(); ++i) {
    if (i > 0) o += ", ";
    trace::appendJsonString(o, run.warnings[i]);
  }
  o += "]}";
}

}  // namespace

int runCompare(const CompareArgs& args) {
  analysis::AnalysisOptions options;
  options.rules = analysis::ClassRules::forCommandLine(args.rules_file);
  // One run at a time: a run's traces are dropped once its summary is known, so two big runs
  // never share the memory. A digest is read as written (its rules were chosen when it was made).
  const ComparedRun a = comparedRun(args.a, options);
  const ComparedRun b = comparedRun(args.b, options);
  const auto rows = analysis::compareSummaries(a.measured.summary, b.measured.summary);
  const std::vector<analysis::MeasuredRun> pair{measured(ComparedRun(a), "A", 0),
                                                measured(ComparedRun(b), "B", 0)};
  const std::string warning = analysis::likeForLikeWarning(
      pair, analysis::comparedVaried(pair[0].summary, pair[1].summary));
  std::string note = analysis::settingsNotComparedNote(pair);
  // The same run given twice compares equal by construction: say so, rather than let zeros read
  // as a finding.
  std::error_code ec_a, ec_b;
  const auto path_a = std::filesystem::weakly_canonical(args.a, ec_a);
  const auto path_b = std::filesystem::weakly_canonical(args.b, ec_b);
  if (!ec_a && !ec_b && path_a == path_b)
    note =
        "A and B are the same path, so every difference is 0 by construction: give B another "
        "run's traces or digest." +
        (note.empty() ? "" : " " + note);
  if (args.json) {
    std::string o = "{";
    runJson(o, "a", args.a, a);
    o += ", ";
    runJson(o, "b", args.b, b);
    o += ", ";
    appendTextOrNull(o, "warning", warning);
    o += ", ";
    appendTextOrNull(o, "note", note);
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
  // The steps each run covers are a sentence (which steps, which left out and why): under the
  // run's line, not a table cell as wide as the sentence. The JSON keeps it as a row.
  const auto covered = [&](bool first) {
    for (const auto& r : rows) {
      if (r.metric == analysis::kStepsCoveredMetric) return "\n   " + (first ? r.a : r.b);
    }
    return std::string();
  };
  // Each run's own warnings under its lines, as `summary` gives them (a missing rank, a trace
  // with no events): what makes its figures partial or n/a.
  // The first few; --json has them all.
  const auto warned = [](const ComparedRun& r) {
    constexpr std::size_t kShown = 4;
    std::string s;
    for (std::size_t i = 0; i < r.warnings.size() && i < kShown; ++i)
      s += "\n   warning: " + r.warnings[i];
    if (r.warnings.size() > kShown)
      s += "\n   (" + std::to_string(r.warnings.size() - kShown) +
           " more warnings: `summary` of this run, or --json, lists them)";
    return s;
  };
  std::cout << "A: " << args.a << "\n   " << a.configuration << covered(true) << warned(a) << "\n";
  std::cout << "B: " << args.b << "\n   " << b.configuration << covered(false) << warned(b) << "\n";
  if (!warning.empty()) std::cout << "warning: " << warning << "\n";
  if (!note.empty()) std::cout << "note: " << note << "\n";
  std::cout << "\n";
  // Widths in characters, as padded counts them: "–" and "µ" are one each.
  std::size_t metric_w = 6, a_w = 1, b_w = 1;
  for (const auto& r : rows) {
    if (r.metric == analysis::kStepsCoveredMetric) continue;
    metric_w = std::max(metric_w, analysis::textColumns(r.metric));
    a_w = std::max(a_w, analysis::textColumns(r.a));
    b_w = std::max(b_w, analysis::textColumns(r.b));
  }
  std::cout << "  " << analysis::padded("metric", metric_w + 2) << analysis::padded("A", a_w + 2)
            << analysis::padded("B", b_w + 2) << "B − A\n";
  for (const auto& r : rows) {
    if (r.metric == analysis::kStepsCoveredMetric) continue;
    std::cout << "  " << analysis::padded(r.metric, metric_w + 2) << analysis::padded(r.a, a_w + 2)
              << analysis::padded(r.b, b_w + 2) << r.delta << "\n";
  }
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

int runSweep(const SweepArgs& args) {
  analysis::AnalysisOptions options;
  options.rules = analysis::ClassRules::forCommandLine(args.rules_file);
  // The sizes stated before anything is read: a bad one fails at once.
  std::vector<std::pair<std::optional<double>, std::string>> given;
  for (const auto& r : args.runs) {
    const auto eq = r.find('=');
    std::error_code ec;
    if (eq == std::string::npos || std::filesystem::exists(r, ec)) {
      given.emplace_back(std::nullopt, r);  // a path (one with '=' in its name too)
      continue;
    }
    const std::string mb = r.substr(0, eq);
    if (eq == 0 || eq + 1 == r.size()) {
      std::cerr << "ddpscope-cli sweep: '" << r << "' is not MB=PATH: "
                << (eq == 0 ? "no bucket size before '='" : "no path after '='")
                << " (as 25=rank0.json.gz)\n";
      return 2;
    }
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
  std::vector<analysis::MeasuredRun> runs;
  std::set<std::string> seen;
  for (const auto& [stated, path] : given) {
    std::error_code ec;
    const auto canonical = std::filesystem::weakly_canonical(path, ec).string();
    if (!seen.insert(ec ? path : canonical).second) {
      std::cerr << "ddpscope-cli sweep: " << path << " is given twice; give each run once\n";
      return 2;
    }
    ComparedRun run = comparedRun(path, options);
    const auto recorded = run.measured.recorded_bucket_mb;  // the trace's, or the digest's setting
    if (stated && recorded && *recorded != *stated) {
      std::cerr << "ddpscope-cli sweep: " << path << " records bucket size "
                << analysis::mibNumberText(*recorded) << " MiB, not "
                << analysis::mibNumberText(*stated) << " as given; give it without "
                << analysis::mibNumberText(*stated) << "=\n";
      return 2;
    }
    const auto mb = stated ? stated : recorded;
    if (!mb) {
      std::cerr << "ddpscope-cli sweep: " << path
                << " does not record its bucket size: give it as MB=" << path << " (25=" << path
                << " for PyTorch DDP's default)\n";
      return 2;
    }
    runs.push_back(measured(std::move(run), path, *mb));
  }
  // No current size: the sweep says the fastest and its gain over DDP's default 25 MiB.
  std::string error;
  const auto sweep = analysis::measuredSweep(std::move(runs), -1, &error);
  if (!sweep) {
    std::cerr << "ddpscope-cli sweep: " << error << "\n";
    return 2;
  }
  const auto& points = sweep->points;
  const auto& warning = sweep->warning;
  const auto& text = sweep->text;
  const auto mark = [&](std::size_t i) { return sweep->mark(i); };
  // Step times that differ never read the same (the marks set them apart).
  std::vector<analysis::TimeNs> step_ns;
  for (const auto& p : points)
    step_ns.push_back(p.summary.step_ns);
  const auto steps = analysis::distinctDurations(step_ns);
  const auto spreadText = [&](std::size_t i) {
    return sweep->spread[i] ? "±" + analysis::formatDuration(*sweep->spread[i])
                            : std::string("n/a");
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
                                 {"step", &steps[i]},
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
      if (sweep->spread[i])
        trace::appendDouble(o, static_cast<double>(*sweep->spread[i]) / 1e3);
      else
        o += "null";
      o += "}";
    }
    o += "], ";
    trace::appendJsonString(o, "best_mb");
    o += ": ";
    trace::appendDouble(o, sweep->recommendation.best_mb);
    o += ", ";
    appendTextOrNull(o, "warning", warning);
    o += ", ";
    appendTextOrNull(o, "note", sweep->note);
    o += ", ";
    trace::appendJsonString(o, "text");
    o += ": ";
    trace::appendJsonString(o, text);
    o += "}\n";
    std::cout << o;
    return 0;
  }
  // The configuration when every run has it; else each run's (the warning says what differs).
  if (const std::string shared = analysis::sharedConfiguration(sweep->runs); !shared.empty()) {
    std::cout << "sweep (measured): " << points.size() << (points.size() == 1 ? " run" : " runs")
              << ", " << shared << "\n";
  } else {
    std::cout << "sweep (measured): " << points.size() << " runs of other configurations:\n";
    for (const auto& r : sweep->runs)
      std::cout << "  " << r.label << ": " << r.configuration << "\n";
  }
  if (!warning.empty()) std::cout << "warning: " << warning << "\n";
  if (!sweep->note.empty()) std::cout << "note: " << sweep->note << "\n";
  std::cout << "\n";
  std::vector<std::vector<std::string>> rows{{"bucket MiB", "step time", "spread", "overlap",
                                              "exposed", "allreduces/step", "steps", "run"}};
  for (std::size_t i = 0; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto f = analysis::runFigureText(p.summary);
    const std::string m = mark(i);
    rows.push_back({p.bucket_mb == 0 ? "0 (tensor)" : analysis::mibNumberText(p.bucket_mb),
                    steps[i], spreadText(i), f.overlap, f.exposed, f.allreduces, f.scope,
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
