// ddpscope-simdjson-parse FILE [ROUNDS]: simdjson's DOM parse of FILE's bytes, the practical limit
// a JSON trace loads against. The file is read into memory first; one untimed parse sizes the
// parser, which is then reused for ROUNDS timed parses (default 10), as BM_SimdjsonBareParse
// does in format_bench. Prints each parse's milliseconds on one line and their median on the
// next ("median_ms 142.1"): tests/bench/summary-check's baseline, built without Google Benchmark
// so that a machine without it (a GPU machine) can measure too.
#include <simdjson.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: ddpscope-simdjson-parse FILE [ROUNDS]\n");
    return 2;
  }
  const int rounds = argc == 3 ? std::atoi(argv[2]) : 10;
  if (rounds < 1 || rounds > 1000) {
    std::fprintf(stderr, "ddpscope-simdjson-parse: ROUNDS must be 1 to 1000, not %s\n", argv[2]);
    return 2;
  }
  simdjson::padded_string json;
  if (const auto err = simdjson::padded_string::load(argv[1]).get(json); err) {
    std::fprintf(stderr, "ddpscope-simdjson-parse: %s: %s\n", argv[1],
                 simdjson::error_message(err));
    return 1;
  }
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (const auto err = parser.parse(json).get(doc); err) {
    std::fprintf(stderr, "ddpscope-simdjson-parse: %s: not JSON (%s)\n", argv[1],
                 simdjson::error_message(err));
    return 1;
  }
  std::vector<double> ms;
  for (int i = 0; i < rounds; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto err = parser.parse(json).get(doc);
    const auto t1 = std::chrono::steady_clock::now();
    if (err) return 1;
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    std::printf("%s%.1f", i == 0 ? "" : " ", ms.back());
  }
  std::sort(ms.begin(), ms.end());
  const std::size_t n = ms.size();
  const double median = n % 2 == 1 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
  std::printf("\nmedian_ms %.1f\n", median);
  return 0;
}
