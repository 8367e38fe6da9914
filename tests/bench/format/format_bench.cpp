// Loading: parse JSON and build the model, against simdjson's bare parse of the same bytes (the
// practical limit), measured in the same run; loading files from disk (.json and .json.gz, one
// rank and a multi-rank folder) with resident memory per event; writing (serialise + gzip).
//
// 10 M events (about 2 GB of JSON) are measured only with DDPSCOPE_BENCH_10M=1 in the environment.
#include <benchmark/benchmark.h>
#include <simdjson.h>
#include <unistd.h>
#include <zlib.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "tests/bench/common/bench_main.h"
#include "tests/bench/common/synthetic_run.h"
#include "tracer/format/file_io.h"
#include "tracer/format/memory.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;
namespace fs = std::filesystem;

namespace {

const trace::PaddedBuffer& jsonOf(std::int64_t events) {
  static std::map<std::int64_t, trace::PaddedBuffer> cache;
  auto it = cache.find(events);
  if (it == cache.end()) {
    cache.clear();  // one size at a time: 10 M events are 2 GB of text
    bench::SyntheticSpec spec;
    spec.events_per_rank = events;
    it = cache
             .emplace(events,
                      trace::PaddedBuffer(trace::serializeTrace(bench::syntheticRank(spec, 0))))
             .first;
  }
  return it->second;
}

void setCounters(benchmark::State& state, std::uint64_t bytes) {
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) *
                          static_cast<std::int64_t>(bytes));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

// The practical limit: simdjson's DOM parse (runtime-dispatched to the best SIMD kernel), its
// parser reused across iterations.
void BM_SimdjsonBareParse(benchmark::State& state) {
  const auto& json = jsonOf(state.range(0));
  simdjson::dom::parser parser;
  {
    simdjson::dom::element warm;  // untimed: the parser's memory is then reused
    if (parser.parse(json.data(), json.size(), false).get(warm)) state.SkipWithError("parse");
  }
  for (auto _ : state) {
    simdjson::dom::element doc;
    auto err = parser.parse(json.data(), json.size(), false).get(doc);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(doc);
  }
  setCounters(state, json.size());
}

// The same with a fresh parser each time, as when one file is opened once.
void BM_SimdjsonBareParseFreshParser(benchmark::State& state) {
  const auto& json = jsonOf(state.range(0));
  for (auto _ : state) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    auto err = parser.parse(json.data(), json.size(), false).get(doc);
    benchmark::DoNotOptimize(err);
    benchmark::DoNotOptimize(doc);
  }
  setCounters(state, json.size());
}

// Args {events, pieces, threads}: pieces 1 is the default (big documents in pieces), 0 always one
// document; threads parse the pieces of the one document (the wall time is what counts then).
void BM_ParseTrace(benchmark::State& state) {
  const auto& json = jsonOf(state.range(0));
  trace::ReadOptions options;
  if (state.range(1) == 0) options.piece_bytes = 0;
  options.threads = static_cast<unsigned>(state.range(2));
  benchmark::DoNotOptimize(trace::parseTrace(json, "bench.json", options));  // untimed warm-up
  for (auto _ : state) {
    auto t = trace::parseTrace(json, "bench.json", options);
    benchmark::DoNotOptimize(t);
  }
  trace::releaseReaderMemory();
  setCounters(state, json.size());
}

// --- Files on disk, with memory ----------------------------------------------------------------

std::int64_t residentBytes() {
  std::ifstream statm("/proc/self/statm");
  std::int64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * static_cast<std::int64_t>(::sysconf(_SC_PAGESIZE));
}

std::int64_t peakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::atoll(line.c_str() + 6) * 1024;
  }
  return 0;
}

void resetPeakResident() {
  std::ofstream("/proc/self/clear_refs") << "5";
}

// A run of `events` events over `ranks` files, written once per process into a temporary folder.
std::string runFolder(std::int64_t events, int ranks, bool gzip) {
  static std::map<std::tuple<std::int64_t, int, bool>, std::string> made;
  auto& dir = made[{events, ranks, gzip}];
  if (dir.empty()) {
    dir = (fs::temp_directory_path() /
           ("ddpscope-bench-" + std::to_string(::getpid()) + "-" + std::to_string(events) + "-" +
            std::to_string(ranks) + (gzip ? "-gz" : "")))
              .string();
    fs::create_directories(dir);
    bench::SyntheticSpec spec;
    spec.ranks = ranks;
    spec.events_per_rank = events / ranks;
    for (int r = 0; r < ranks; ++r) {
      trace::writeTraceFile(bench::syntheticRank(spec, r),
                            dir + "/rank-" + std::to_string(r) + (gzip ? ".json.gz" : ".json"));
    }
    static const bool cleanup = [] {
      std::atexit([] {
        for (const auto& [key, path] : made) {
          std::error_code ec;
          fs::remove_all(path, ec);
        }
      });
      return true;
    }();
    (void)cleanup;
  }
  return dir;
}

std::uint64_t inputBytes(const std::string& dir, bool uncompressed) {
  std::uint64_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    n += uncompressed ? trace::readTraceBytes(e.path().string(), trace::defaultReadLimits()).size()
                      : fs::file_size(e.path());
  }
  return n;
}

// Bytes the loaded model holds: every column's capacity and the interned names.
double modelBytes(const trace::Run& run) {
  double n = 0;
  for (const auto& r : run.ranks) {
    for (const auto& t : r.tracks) {
      n += static_cast<double>(
          t.start.capacity() * sizeof(trace::TimeNs) + t.dur.capacity() * sizeof(trace::TimeNs) +
          t.name.capacity() * sizeof(trace::NameId) + t.categoryBytes() +
          t.kind_of.capacity() * sizeof(trace::EventKind) +
          t.correlation.capacity() * sizeof(std::int64_t) +
          t.bucket.capacity() * sizeof(std::int32_t) + t.step.capacity() * sizeof(std::int32_t) +
          t.bytes.capacity() * sizeof(std::int64_t));
    }
    for (std::size_t i = 0; i < r.names.size(); ++i)
      n += static_cast<double>(r.names[static_cast<trace::NameId>(i)].capacity() + 48);
  }
  return n;
}

// Args: {events, ranks, gzip}. Loads the folder as the app does (ranks in parallel). Counters:
// bytes per event the loaded model holds, and (first iteration) the peak resident memory while
// loading beyond the uncompressed JSON being read, one file per loader thread.
void BM_LoadRun(benchmark::State& state) {
  const auto events = state.range(0);
  const int ranks = static_cast<int>(state.range(1));
  const bool gzip = state.range(2) != 0;
  const auto dir = runFolder(events, ranks, gzip);
  const auto json_bytes = inputBytes(dir, true);
  double held = 0, peak = -1;
  for (auto _ : state) {
    state.PauseTiming();
    const auto before = residentBytes();
    resetPeakResident();
    state.ResumeTiming();
    auto run = trace::loadRun({dir});
    state.PauseTiming();
    const double n = static_cast<double>(run.eventCount());
    held = modelBytes(run) / n;
    if (peak < 0) {
      const double in_flight = static_cast<double>(json_bytes) / ranks *
                               std::min<unsigned>(ranks, std::thread::hardware_concurrency());
      peak = (static_cast<double>(peakResidentBytes() - before) - in_flight) / n;
    }
    benchmark::DoNotOptimize(run);
    { auto drop = std::move(run); }
    state.ResumeTiming();
  }
  setCounters(state, json_bytes);
  state.counters["events"] = static_cast<double>(events);
  state.counters["model_B_per_event"] = held;
  state.counters["peak_B_per_event_beyond_json"] = peak;
}

// One byte of every 64 read, as a parser's first pass over the text reads it: the first access
// to each page of a buffer, which costs what its mapping costs (see PERFORMANCE.md).
std::uint64_t touchEveryLine(const char* p, std::size_t n) {
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < n; i += 64)
    sum += static_cast<unsigned char>(p[i]);
  return sum;
}

// Arg: {events, mapped, touch}. Bringing a plain trace file into memory for the parser: mapped 0
// is the baseline, a copy with read() into our own buffer (advised for huge pages; what every
// file got before files were mapped); mapped 1 is readTraceBytes, which maps files of 1 MiB and
// more. touch 1 also reads every 64th byte once, as the parser's first pass does.
void BM_ReadFile(benchmark::State& state) {
  const auto dir = runFolder(state.range(0), 1, false);
  const std::string path = dir + "/rank-0.json";
  const bool mapped = state.range(1) != 0;
  const bool touch = state.range(2) != 0;
  std::uint64_t bytes = 0;
  for (auto _ : state) {
    if (mapped) {
      const auto buffer = trace::readTraceBytes(path, trace::defaultReadLimits());
      bytes = buffer.size();
      benchmark::DoNotOptimize(buffer.data()[buffer.size() / 2]);
      if (touch) benchmark::DoNotOptimize(touchEveryLine(buffer.data(), buffer.size()));
    } else {
      std::ifstream in(path, std::ios::binary);
      const auto size = static_cast<std::size_t>(fs::file_size(path));
      trace::PaddedBuffer buffer;
      buffer.reserveMore(size);
      trace::populateForWrite(buffer.data(), size);
      in.read(buffer.data(), static_cast<std::streamsize>(size));
      buffer.setSize(static_cast<std::size_t>(in.gcount()));
      bytes = buffer.size();
      benchmark::DoNotOptimize(buffer.data()[buffer.size() / 2]);
      if (touch) benchmark::DoNotOptimize(touchEveryLine(buffer.data(), buffer.size()));
    }
  }
  state.SetBytesProcessed(static_cast<std::int64_t>(bytes) *
                          static_cast<std::int64_t>(state.iterations()));
}

// Args: {events, threads}. One .json.gz read as the CLI reads a single file: threads 1 inflates
// it whole (libdeflate), then parses it; threads 2 parses it while a second thread inflates it
// (a document of four to eight pieces, 2-4 MiB with the default pieces, which take one parsing
// thread; 15 k events make 3 MB). Counter: 1 when streamed.
void BM_ReadGzipTrace(benchmark::State& state) {
  const auto dir = runFolder(state.range(0), 1, true);
  const std::string path = dir + "/rank-0.json.gz";
  trace::ReadOptions options;
  options.threads = static_cast<unsigned>(state.range(1));
  bool streamed = false;
  for (auto _ : state) {
    auto t = trace::readTraceFile(path, options);
    streamed = trace::lastReadStats().inflated_while_parsing;
    benchmark::DoNotOptimize(t);
  }
  setCounters(state, inputBytes(dir, true));
  state.counters["streamed"] = streamed ? 1 : 0;
}

void BM_SerializeTrace(benchmark::State& state) {
  bench::SyntheticSpec spec;
  spec.events_per_rank = state.range(0);
  const auto t = bench::syntheticRank(spec, 0);
  for (auto _ : state) {
    auto s = trace::serializeTrace(t);
    benchmark::DoNotOptimize(s);
  }
}

bool with10M() {
  const char* v = std::getenv("DDPSCOPE_BENCH_10M");
  return v != nullptr && std::string(v) == "1";
}

const bool registered = [] {
  for (std::int64_t n : {std::int64_t{100'000}, std::int64_t{1'000'000}}) {
    benchmark::RegisterBenchmark("BM_SimdjsonBareParse", BM_SimdjsonBareParse)
        ->Arg(n)
        ->MinTime(2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_SimdjsonBareParseFreshParser", BM_SimdjsonBareParseFreshParser)
        ->Arg(n)
        ->MinTime(2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_ParseTrace", BM_ParseTrace)
        ->ArgNames({"events", "pieces", "threads"})
        ->Args({n, 1, 1})
        ->Args({n, 0, 1})
        ->Args({n, 1, 2})
        ->MinTime(2)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_ReadFile", BM_ReadFile)
      ->ArgNames({"events", "mapped", "touch"})
      ->Args({1'000'000, 0, 0})
      ->Args({1'000'000, 1, 0})
      ->Args({1'000'000, 0, 1})
      ->Args({1'000'000, 1, 1})
      ->MinTime(1)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_ReadGzipTrace", BM_ReadGzipTrace)
      ->ArgNames({"events", "threads"})
      ->Args({15'000, 1})
      ->Args({15'000, 2})
      ->MinTime(2)
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
  auto* load = benchmark::RegisterBenchmark("BM_LoadRun", BM_LoadRun)
                   ->ArgNames({"events", "ranks", "gzip"})
                   ->Args({100'000, 1, 0})
                   ->Args({1'000'000, 1, 0})
                   ->Args({1'000'000, 1, 1})
                   ->Args({1'000'000, 4, 0})
                   ->Iterations(3)
                   ->Unit(benchmark::kMillisecond)
                   ->UseRealTime();
  if (with10M()) {
    load->Args({10'000'000, 8, 0})->Args({10'000'000, 8, 1})->Args({10'000'000, 1, 0});
    benchmark::RegisterBenchmark("BM_SimdjsonBareParse", BM_SimdjsonBareParse)
        ->Arg(10'000'000)
        ->Iterations(2)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark("BM_ParseTrace", BM_ParseTrace)
        ->Args({10'000'000, 1, 1})
        ->Args({10'000'000, 1, 2})
        ->Iterations(2)
        ->Unit(benchmark::kMillisecond);
  }
  benchmark::RegisterBenchmark("BM_SerializeTrace", BM_SerializeTrace)
      ->Arg(1'000'000)
      ->Unit(benchmark::kMillisecond);
  return true;
}();

}  // namespace

// Inflating a .json.gz: the product's path (trace::inflateBytes: libdeflate in one call when the
// build has it, zlib's stream otherwise) against zlib's stream into a buffer sized from the gzip
// trailer (what the product did before), on the same bytes in the same run. Arg: events.
const std::string& gzipOf(std::int64_t events) {
  static std::map<std::int64_t, std::string> cache;
  auto it = cache.find(events);
  if (it == cache.end()) {
    cache.clear();
    it = cache.emplace(events, trace::gzipBytes(jsonOf(events).view())).first;
  }
  return it->second;
}

void BM_InflateZlibStream(benchmark::State& state) {
  const std::string& gz = gzipOf(state.range(0));
  const std::size_t size = jsonOf(state.range(0)).size();
  std::string out(size, '\0');
  for (auto _ : state) {
    z_stream zs{};
    inflateInit2(&zs, 15 + 32);
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(gz.data()));
    zs.avail_in = static_cast<uInt>(gz.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    if (inflate(&zs, Z_FINISH) != Z_STREAM_END) state.SkipWithError("inflate");
    inflateEnd(&zs);
    benchmark::DoNotOptimize(out.data());
  }
  setCounters(state, size);
}
BENCHMARK(BM_InflateZlibStream)->Arg(200'000)->Unit(benchmark::kMillisecond);

// Second arg: threads (2: the output's fresh pages mapped on a second thread, PopulatedBehind).
void BM_InflateTrace(benchmark::State& state) {
  const std::string& gz = gzipOf(state.range(0));
  const auto threads = static_cast<unsigned>(state.range(1));
  for (auto _ : state) {
    auto out = trace::inflateBytes(gz, "bench.json.gz", trace::defaultReadLimits(), threads);
    benchmark::DoNotOptimize(out.data());
  }
  setCounters(state, jsonOf(state.range(0)).size());
}
BENCHMARK(BM_InflateTrace)
    ->Args({200'000, 1})
    ->Args({200'000, 2})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

DDPSCOPE_BENCHMARK_MAIN()
