#include "app/cli/digest_command.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <mutex>

#include "app/analysis/digest.h"
#include "app/analysis/rules.h"
#include "tracer/format/file_io.h"

namespace ddpscope::cli {

CLI::App* addDigestCommand(CLI::App& app, DigestArgs& a) {
  auto* c = app.add_subcommand(
      "digest", "A small file of a run's per-rank and per-step figures (docs/DIGEST.md)");
  c->add_option("--out", a.out,
                "Write the digest here (.json, or .json.gz compressed); default: "
                "standard output")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // The app and `compare` know a digest by its first bytes, but a digest named
            // .txt or .csv is lost among a run's files, and .gz decides the compression.
            if (v.ends_with(".json") || v.ends_with(".json.gz")) return "";
            return "'" + v + "': give a name ending in .json, or .json.gz to compress it";
          },
          "FILE.json[.gz]"));
  c->add_option("--threads", a.threads, "Files read at once (default: one per core)")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            // 0 would read as "one per core" without saying so: leaving the flag out says that.
            const bool digits =
                !v.empty() && v.find_first_not_of("0123456789") == std::string::npos;
            const auto first = v.find_first_not_of('0');
            if (!digits || first == std::string::npos || v.size() - first > 5)
              return "'" + v +
                     "': give a whole number from 1 to 99999 (leave it out for one per core)";
            v.erase(0, first);  // leading zeros would read as octal ("010" as 8)
            return "";
          },
          "N >= 1"));
  c->add_option("--rules", a.rules_file,
                "Classification rules to apply before the built-in ones (docs/RULES.md); "
                "default: $DDPSCOPE_RULES when set");
  c->add_flag("--skip-unreadable", a.skip_unreadable,
              "Leave out the trace files that cannot be read (truncated, malformed), naming "
              "each in a warning of the digest; their ranks then have no trace");
  c->add_option("PATH", a.paths, "Trace files or run folders (one run)")->required();
  return c;
}

bool launchedAsMpiJob() {
  const auto above_one = [](const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr && std::atoi(v) > 1;
  };
  return above_one("OMPI_COMM_WORLD_SIZE") || above_one("PMI_SIZE") || above_one("PMIX_SIZE");
}

int runDigest(const DigestArgs& a) {
  if (launchedAsMpiJob()) return runDigestMpi(a);
  analysis::DigestOptions options;
  options.threads = a.threads;
  options.skip_unreadable = a.skip_unreadable;
  options.analysis.rules = analysis::ClassRules::forCommandLine(a.rules_file);
  // On a terminal, how far the reading is (a thousand files take a while); nothing in a log.
  std::mutex progress_mutex;
  auto last = std::chrono::steady_clock::now();
  bool shown = false;
  if (::isatty(STDERR_FILENO)) {
    options.progress = [&](std::size_t done, std::size_t total) {
      const std::lock_guard<std::mutex> lock(progress_mutex);
      const auto now = std::chrono::steady_clock::now();
      if (done < total && now - last < std::chrono::milliseconds(500)) return;
      last = now;
      shown = true;
      std::fprintf(stderr, "\rdigest: %zu of %zu trace files read", done, total);
      std::fflush(stderr);
    };
  }
  const std::string digest = analysis::digestRun(a.paths, options);
  if (shown) std::fprintf(stderr, "\n");
  if (a.out.empty()) {
    std::cout << digest;
    return 0;
  }
  trace::writeFileAtomically(a.out, a.out.ends_with(".gz") ? trace::gzipBytes(digest) : digest);
  std::cerr << "wrote " << a.out << " (" << digest.size() << " bytes of JSON)\n";
  return 0;
}

}  // namespace ddpscope::cli
