#include "app/cli/compare_command.h"

#include <algorithm>
#include <iostream>
#include <string>
#include <tuple>

#include "app/analysis/analysis.h"
#include "app/analysis/digest_reader.h"
#include "app/analysis/report_json.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/sweep.h"
#include "tracer/format/json_text.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::cli {

CLI::App* addCompareCommand(CLI::App& app, CompareArgs& a) {
  auto* c = app.add_subcommand(
      "compare", "Two runs side by side: step time, overlap, exposed communication, ... (A → B)");
  c->add_flag("--json", a.json, "Print JSON (the fields of docs/CLI.md)");
  c->add_option("--rules", a.rules_file,
                "Classification rules to apply before the built-in ones (docs/RULES.md)");
  c->add_option("A", a.a, "The first run: a trace file, a run folder or a run digest")
      ->required();
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
  analysis::RunIdentity identity;
};

ComparedRun comparedRun(const std::string& path, const analysis::AnalysisOptions& options) {
  ComparedRun c;
  if (analysis::isDigestFile(path)) {
    const auto digest = analysis::readDigest(path);
    c.summary = digest.run;
    c.configuration = analysis::digestConfigurationText(digest);
    c.identity = analysis::digestIdentity(digest);
    return c;
  }
  const trace::Run run = trace::loadRun({path});
  c.summary = analysis::summarizeRun(analysis::analyzeRun(run, options));
  c.configuration = analysis::runConfigurationText(run);
  c.identity = analysis::runIdentity(run);
  return c;
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
    trace::appendJsonString(o, "warning");
    o += ": ";
    if (warning.empty())
      o += "null";
    else
      trace::appendJsonString(o, warning);
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

}  // namespace ddpscope::cli
