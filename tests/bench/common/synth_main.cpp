// ddpscope-synth: writes a realistic synthetic run (one trace file per rank) for load and drawing
// measurements, e.g. `ddpscope-synth --events 10M --ranks 8 --gzip /tmp/run10M`. The traces are
// labelled source "sim" and carry the generator's settings in their ddpscope config block; they
// are test inputs, never measurements of a device.
#include <CLI/CLI.hpp>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "tests/bench/common/synthetic_run.h"
#include "tracer/format/trace_writer.h"

namespace {

// "100k", "1M", "10M", "2500000" -> count; 0 when malformed.
std::int64_t parseCount(const std::string& text) {
  std::int64_t n = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, n);
  if (ec != std::errc() || n <= 0) return 0;
  if (ptr == end) return n;
  if (ptr + 1 != end) return 0;
  switch (*ptr) {
    case 'k':
    case 'K':
      return n * 1'000;
    case 'm':
    case 'M':
      return n * 1'000'000;
    default:
      return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "Writes a synthetic multi-rank run (rank-<r>.json or .json.gz per rank) with a "
      "GEMM/NCCL/memcpy name mix, launches with correlation ids, steps and buckets."};
  std::string events_text = "1M";
  std::int32_t ranks = 1;
  bool gzip = false;
  std::uint32_t seed = 1;
  std::string out_dir;
  app.add_option("--events", events_text,
                 "events in the whole run (host + GPU), e.g. 100k, 1M, 10M")
      ->capture_default_str();
  app.add_option("--ranks", ranks, "ranks (one file each)")
      ->check(CLI::Range(1, 4096))
      ->capture_default_str();
  app.add_flag("--gzip", gzip, "write .json.gz instead of .json");
  app.add_option("--seed", seed, "random seed")->capture_default_str();
  app.add_option("out", out_dir, "output folder (created)")->required();
  CLI11_PARSE(app, argc, argv);

  const std::int64_t events = parseCount(events_text);
  if (events <= 0) {
    std::fprintf(stderr, "ddpscope-synth: --events %s is not a count (examples: 100k, 1M, 10M)\n",
                 events_text.c_str());
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "ddpscope-synth: cannot create %s: %s\n", out_dir.c_str(),
                 ec.message().c_str());
    return 1;
  }
  ddpscope::bench::SyntheticSpec spec;
  spec.ranks = ranks;
  spec.events_per_rank = (events + ranks - 1) / ranks;
  spec.seed = seed;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::string> errors(static_cast<std::size_t>(ranks));
  std::vector<std::thread> workers;
  const unsigned threads = std::max(
      1u, std::min<unsigned>(std::thread::hardware_concurrency(), static_cast<unsigned>(ranks)));
  for (unsigned w = 0; w < threads; ++w) {
    workers.emplace_back([&, w] {
      for (std::int32_t r = static_cast<std::int32_t>(w); r < ranks;
           r += static_cast<std::int32_t>(threads)) {
        try {
          auto trace = ddpscope::bench::syntheticRank(spec, r);
          trace.ddpscope.config = {{"generator", "\"ddpscope-synth\""},
                                   {"events", std::to_string(events)},
                                   {"seed", std::to_string(seed)}};
          const auto path = (std::filesystem::path(out_dir) /
                             ("rank-" + std::to_string(r) + (gzip ? ".json.gz" : ".json")))
                                .string();
          ddpscope::trace::writeTraceFile(trace, path);
        } catch (const std::exception& e) {
          errors[static_cast<std::size_t>(r)] = e.what();
        }
      }
    });
  }
  for (auto& w : workers)
    w.join();
  int rc = 0;
  for (std::int32_t r = 0; r < ranks; ++r) {
    if (!errors[static_cast<std::size_t>(r)].empty()) {
      std::fprintf(stderr, "ddpscope-synth: rank %d: %s\n", r,
                   errors[static_cast<std::size_t>(r)].c_str());
      rc = 1;
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (rc == 0) {
    std::printf("wrote %d rank file(s), %lld events per rank, to %s in %.1f s\n", ranks,
                static_cast<long long>(spec.events_per_rank), out_dir.c_str(), s);
  }
  return rc;
}
