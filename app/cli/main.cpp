// ddpscope-cli: headless summaries and conversion of traces.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <iostream>

#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "tracer/format/memory.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

namespace {

using namespace ddpscope;

int summary(const std::vector<std::string>& paths, bool json, bool hta_compat,
            const std::string& rules_file) {
  analysis::AnalysisOptions options;
  options.rules = analysis::ClassRules::forCommandLine(rules_file);  // before loading: fail fast
  const trace::Run run = trace::loadRun(paths);
  options.hta_compat = hta_compat;
  const auto report = analysis::analyzeRun(run, options);
  std::cout << (json ? analysis::reportToJson(report) : analysis::reportToText(report));
  return 0;
}

int convert(const std::string& in, const std::string& out) {
  trace::RankTrace t = trace::readTraceFile(in);
  if (!t.ddpscope.present) {
    t.ddpscope.present = true;
    t.ddpscope.source = "imported";
  }
  trace::writeTraceFile(t, out);
  std::cerr << "wrote " << out << " (" << t.eventCount() << " events)\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ddpscope::trace::tuneAllocatorForTraces();
  CLI::App app{
      "ddpscope-cli: summaries of data-parallel training traces (ddpscope and PyTorch/Kineto)"};
  app.require_subcommand(1);

  bool json = false, hta = false;
  std::vector<std::string> paths;
  std::string rules_file;
  auto* sum =
      app.add_subcommand("summary", "Overlap, steps, buckets and dependency checks per rank");
  sum->add_flag("--json", json, "Print JSON (the fields of docs/CLI.md)");
  sum->add_flag("--hta-compat", hta,
                "Use Holistic Trace Analysis's window (drop work launched at or after the last "
                "ProfilerStep#)");
  sum->add_option("--rules", rules_file,
                  "Classification rules to apply before the built-in ones (JSON Lines, "
                  "docs/RULES.md); default: $DDPSCOPE_RULES when set");
  sum->add_option("PATH", paths, "Trace files or run folders (one run)")->required();

  std::string in, out;
  auto* conv =
      app.add_subcommand("convert", "Rewrite a trace (any supported format) in ddpscope's format");
  conv->add_option("IN", in, "Input trace")->required();
  conv->add_option("OUT", out, "Output file (.json or .json.gz)")
      ->required()
      ->check(CLI::Validator(
          [](std::string& p) -> std::string {
            if (p.ends_with(".json") || p.ends_with(".json.gz")) return "";
            return "'" + p + "' must end in .json (plain) or .json.gz (compressed)";
          },
          "FILE.json[.gz]"));

  // An unknown command is named, not taken for a missing one.
  const auto named = [&](const CLI::App* s) { return s->get_name() == argv[1]; };
  if (argc > 1 && argv[1][0] != '-' && app.get_subcommands(named).empty()) {
    std::cerr << "ddpscope-cli: unknown command '" << argv[1]
              << "'; the commands are summary and convert (ddpscope-cli --help)\n";
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*sum) return summary(paths, json, hta, rules_file);
    if (*conv) return convert(in, out);
  } catch (const analysis::RulesError& e) {
    std::cerr << "ddpscope-cli: bad rules: " << e.what() << "\n";
    return 2;
  } catch (const trace::TraceError& e) {
    std::cerr << "ddpscope-cli: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ddpscope-cli: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
