#pragma once
// main() of the benchmarks that stand for the app and the CLI: the allocator set up as they set
// it up (tracer/format/memory.h), then Google Benchmark as BENCHMARK_MAIN() runs it.
#include <benchmark/benchmark.h>

#include "tracer/format/memory.h"

#define DDPSCOPE_BENCHMARK_MAIN()                                     \
  int main(int argc, char** argv) {                                   \
    ddpscope::trace::tuneAllocatorForTraces();                        \
    benchmark::Initialize(&argc, argv);                               \
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1; \
    benchmark::RunSpecifiedBenchmarks();                              \
    benchmark::Shutdown();                                            \
    return 0;                                                         \
  }
