// ddpscope-cli: headless summaries and conversion of traces.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "app/cli/compare_command.h"
#include "app/cli/digest_command.h"
#include "app/cli/predict_command.h"
#include "tracer/format/importer.h"
#include "tracer/format/memory.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

namespace {

using namespace ddpscope;

int summary(const std::vector<std::string>& paths, bool json, bool hta_compat,
            const std::string& rules_file, bool bucket_steps, bool skip_unreadable) {
  analysis::AnalysisOptions options;
  options.rules = analysis::ClassRules::forCommandLine(rules_file);  // before loading: fail fast
  trace::RunLoadOptions load;
  load.skip_unreadable = skip_unreadable;
  const trace::Run run = trace::loadRun(paths, load);
  options.hta_compat = hta_compat;
  const auto report = analysis::analyzeRun(run, options);
  analysis::TextOptions text;
  text.bucket_steps = bucket_steps;
  std::cout << (json ? analysis::reportToJson(report) : analysis::reportToText(report, text));
  return 0;
}

bool isTraceFileName(const std::string& p) {
  return p.ends_with(".json") || p.ends_with(".json.gz");
}

// Any importable file (trace::importFile) to our files: OUT.json[.gz] for one rank, or a folder
// of rank-<r>.json.gz files.
int convert(const std::string& in, const std::string& out) {
  auto ranks = trace::importFile(in);
  // An existing folder receives the rank files whatever its name ("run.json/" included).
  std::error_code ec;
  const bool to_folder = !isTraceFileName(out) || std::filesystem::is_directory(out, ec);
  if (!to_folder && ranks.size() > 1) {
    std::cerr << "ddpscope-cli: " << in << " holds " << ranks.size()
              << " ranks; give a folder for OUT (one rank-<r>.json.gz per rank)\n";
    return 2;
  }
  if (to_folder) std::filesystem::create_directories(out);
  for (auto& r : ranks) {
    trace::RankTrace& t = r.trace;
    if (!t.ddpscope.present) {
      t.ddpscope.present = true;
      t.ddpscope.source = "imported";
    }
    // The ranks of one capture written as one run: its rank count is the run's world size.
    if (ranks.size() > 1 && !t.world_size_declared) t.world_size_declared = true;
    const std::string path =
        to_folder ? (std::filesystem::path(out) / ("rank-" + std::to_string(t.rank) + ".json.gz"))
                        .string()
                  : out;
    trace::writeTraceFile(t, path);
    std::cerr << "wrote " << path << " (" << t.eventCount() << " events)\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  ddpscope::trace::tuneAllocatorForTraces();
  CLI::App app{
      "ddpscope-cli: summaries of data-parallel training traces (ddpscope and PyTorch/Kineto)"};
  app.require_subcommand(1);

  bool json = false, hta = false, bucket_steps = false, skip_unreadable = false;
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
  sum->add_flag("--bucket-steps", bucket_steps,
                "Text: every rank's buckets step by step (default: one mean row per bucket)");
  sum->add_flag("--skip-unreadable", skip_unreadable,
                "Leave out the trace files that cannot be read (truncated, malformed), naming "
                "each in a warning; their ranks then have no trace");
  sum->add_option("PATH", paths, "Trace files or run folders (one run)")->required();

  std::string in, out;
  auto* conv =
      app.add_subcommand("convert", "Rewrite a trace (any supported format) in ddpscope's format");
  conv->add_option("IN", in, "Input trace")->required();
  // OUT also as --out, as `digest` names its output.
  conv->add_option("OUT,--out", out,
                   "Output file (.json or .json.gz) for one rank, or a folder (rank-<r>.json.gz "
                   "per rank)")
      ->check(CLI::Validator(
          [](std::string& p) -> std::string {
            std::error_code ec;
            if (isTraceFileName(p) || p.ends_with('/') || std::filesystem::is_directory(p, ec))
              return "";
            return "OUT '" + p +
                   "' must end in .json (plain) or .json.gz (compressed), or be a folder "
                   "(ending in /) for several ranks";
          },
          "FILE.json[.gz]|FOLDER/"));

  ddpscope::cli::PredictArgs predict_args;
  auto* predict = ddpscope::cli::addPredictCommand(app, predict_args);
  ddpscope::cli::DigestArgs digest_args;
  auto* digest = ddpscope::cli::addDigestCommand(app, digest_args);
  ddpscope::cli::CompareArgs compare_args;
  auto* compare = ddpscope::cli::addCompareCommand(app, compare_args);
  ddpscope::cli::SweepArgs sweep_args;
  auto* sweep = ddpscope::cli::addSweepCommand(app, sweep_args);
  // Argument errors name the program, as every other message does.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return "ddpscope-cli: " + std::string(e.what()) + "\nRun with --help for more information.\n";
  });

  // An unknown command is named, not taken for a missing one.
  const auto named = [&](const CLI::App* s) { return s->get_name() == argv[1]; };
  if (argc > 1 && argv[1][0] != '-' && app.get_subcommands(named).empty()) {
    std::cerr << "ddpscope-cli: unknown command '" << argv[1]
              << "'; the commands are summary, convert, predict, digest, compare and sweep "
                 "(ddpscope-cli "
                 "--help)\n";
    return 2;
  }

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // An option the command does not take is named as such, not as its value and the
    // positionals it displaced ("The following arguments were not expected: RUN --threads").
    if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && !app.get_subcommands().empty()) {
      const CLI::App* command = app.get_subcommands().front();
      for (int i = 2; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--") break;
        if (arg.size() < 2 || arg[0] != '-' || (arg[1] >= '0' && arg[1] <= '9')) continue;
        const std::string name = arg.substr(0, arg.find('='));
        if (const CLI::Option* known = command->get_option_no_throw(name)) {
          // Its value is the next argument (which may start with '-'), unless given with '='.
          if (arg.find('=') == std::string::npos && known->get_items_expected_min() > 0) ++i;
          continue;
        }
        std::cerr << "ddpscope-cli " << command->get_name() << ": " << name
                  << " is not an option of " << command->get_name() << " (ddpscope-cli "
                  << command->get_name() << " --help lists them)\n";
        return 2;
      }
    }
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*sum) return summary(paths, json, hta, rules_file, bucket_steps, skip_unreadable);
    if (*conv) {
      // Checked here rather than by the parser, which would name only --out.
      if (out.empty()) {
        std::cerr << "ddpscope-cli convert: give OUT (or --out OUT), the file or folder to write\n";
        return 2;
      }
      // A run folder is many files; convert rewrites one (a folder out takes its ranks).
      if (std::error_code ec; std::filesystem::is_directory(in, ec)) {
        std::cerr << "ddpscope-cli convert: " << in
                  << " is a folder; convert rewrites one trace file: give one of its files\n";
        return 2;
      }
      return convert(in, out);
    }
    if (*predict) return ddpscope::cli::runPredict(predict_args);
    if (*digest) return ddpscope::cli::runDigest(digest_args);
    if (*compare) return ddpscope::cli::runCompare(compare_args);
    if (*sweep) return ddpscope::cli::runSweep(sweep_args);
  } catch (const analysis::RulesError& e) {
    std::cerr << "ddpscope-cli: bad rules: " << e.what() << "\n";
    return 2;
  } catch (const trace::UnreadableRunFiles& e) {
    // A run of several files, some of which cannot be read: it can be read without them.
    std::cerr << "ddpscope-cli: " << e.what() << "\n";
    std::cerr << "ddpscope-cli: ";
    if (e.unreadable > 0)
      std::cerr << e.unreadable << " of " << e.read + e.unreadable
                << " trace files could not be read; ";
    else if (*digest)  // a thousand files: it stops at the first rather than read them all
      std::cerr << "the digest stopped at the first file it could not read, and there may be "
                   "more; ";
    const char* them = e.unreadable > 0 ? "those files" : "the files that cannot be read";
    if (*sum || *digest) {
      std::cerr << "--skip-unreadable leaves out " << them << " (their ranks then have no trace)\n";
    } else {
      std::cerr << "summary and digest --skip-unreadable leave out " << them << "\n";
    }
    return 1;
  } catch (const trace::TraceError& e) {
    std::cerr << "ddpscope-cli: " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "ddpscope-cli: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
