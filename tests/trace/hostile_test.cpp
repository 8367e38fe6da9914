// Hostile and malformed traces (tests/data/hostile, README.md there): each one gives a clear
// error naming the file, or loads with a warning saying what was tolerated; never a crash, a
// hang or unbounded memory. The small files and their expected outcomes are pinned in
// tests/data/hostile/expected.tsv; the big cases are generated here at test time.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tracer/format/file_io.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

#if defined(__SANITIZE_ADDRESS__)
#define DDPSCOPE_HOSTILE_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DDPSCOPE_HOSTILE_ASAN 1
#endif
#endif
#ifndef DDPSCOPE_HOSTILE_ASAN
#define DDPSCOPE_HOSTILE_ASAN 0
#endif

using namespace ddpscope::trace;
namespace fs = std::filesystem;

namespace {

constexpr bool kAsan = DDPSCOPE_HOSTILE_ASAN != 0;
const std::string kDir = std::string(DDPSCOPE_TEST_DATA) + "/hostile/";

struct Expectation {
  std::string file;
  std::string outcome;  // error | warn | ok
  std::string substring;
  long events = -1;  // -1: not checked
  bool offset = false;
};

std::vector<Expectation> manifest() {
  std::ifstream in(kDir + "expected.tsv");
  std::vector<Expectation> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, '\t'))
      cols.push_back(col);
    if (cols.size() != 5) {
      ADD_FAILURE() << "expected.tsv: 5 tab-separated columns needed: " << line;
      continue;
    }
    Expectation e{cols[0], cols[1], cols[2] == "-" ? "" : cols[2], -1, cols[4] == "byte"};
    if (cols[3] != "-") e.events = std::stol(cols[3]);
    out.push_back(e);
  }
  return out;
}

// Highest resident set size so far (bytes). Growth of it across a step bounds what the step
// allocated at its peak (0 when an earlier step of this process peaked higher).
std::int64_t peakRss() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return static_cast<std::int64_t>(ru.ru_maxrss) * 1024;
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    ::setenv(name, value, 1);
  }
  ~ScopedEnv() {
    if (old_.empty()) {
      ::unsetenv(name_);
    } else {
      ::setenv(name_, old_.c_str(), 1);
    }
  }

 private:
  const char* name_;
  std::string old_;
};

fs::path freshDir(const char* name) {
  auto d = fs::temp_directory_path() /
           (std::string("ddpscope-hostile-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Loads a tolerated trace and checks what it became writes and reads back unchanged.
void expectRoundTrip(const RankTrace& t) {
  const RankTrace again = parseTraceText(serializeTrace(t), "again.json");
  EXPECT_EQ(describeDifference(t, again), "");
  EXPECT_TRUE(again.warnings.empty()) << again.warnings.front();
}

std::string expectError(const std::string& path, const std::string& substring) {
  try {
    const auto t = readTraceFile(path);
    ADD_FAILURE() << path << ": loaded (" << t.eventCount() << " events), expected an error";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), path);
    EXPECT_NE(std::string(e.what()).find(substring), std::string::npos) << e.what();
    return e.what();
  }
  return {};
}

}  // namespace

TEST(HostileTraces, EveryFileIsListedWithItsOutcome) {
  std::set<std::string> listed;
  for (const auto& e : manifest())
    listed.insert(e.file);
  EXPECT_GE(listed.size(), 40u);
  for (const auto& entry : fs::directory_iterator(kDir)) {
    auto name = entry.path().filename().string();
    if (name == "expected.tsv" || name == "README.md" || name == "make_corpus.py") continue;
    if (entry.is_directory()) name += "/";
    EXPECT_TRUE(listed.count(name)) << name << " is not in expected.tsv";
    if (entry.is_regular_file()) {
      EXPECT_LE(entry.file_size(), 4096u) << name;
    }
  }
}

TEST(HostileTraces, EachFileGivesItsPinnedOutcome) {
  for (const auto& e : manifest()) {
    SCOPED_TRACE(e.file);
    const std::string path = kDir + e.file;
    try {
      RankTrace t;
      std::vector<std::string> warnings;
      if (e.file.ends_with("/")) {
        ddpscope::trace::Run run = loadRun({path});
        warnings = run.warnings;
        ASSERT_FALSE(run.ranks.empty());
        t = std::move(run.ranks.front());
      } else {
        t = readTraceFile(path);
        warnings = t.warnings;
      }
      if (e.outcome == "error") {
        ADD_FAILURE() << "loaded (" << t.eventCount() << " events), expected an error with \""
                      << e.substring << "\"";
        continue;
      }
      if (e.events >= 0) {
        EXPECT_EQ(t.eventCount(), static_cast<std::size_t>(e.events));
      }
      if (e.outcome == "ok") {
        EXPECT_TRUE(warnings.empty()) << warnings.front();
      } else {
        bool found = false;
        for (const auto& w : warnings)
          found = found || w.find(e.substring) != std::string::npos;
        EXPECT_TRUE(found) << "no warning with \"" << e.substring
                           << "\"; warnings: " << (warnings.empty() ? "(none)" : warnings.front());
        EXPECT_LE(warnings.size(), 3u);
      }
      t.warnings.clear();
      expectRoundTrip(t);
    } catch (const TraceError& err) {
      const std::string msg = err.what();
      if (e.outcome != "error") {
        ADD_FAILURE() << "expected it to load (" << e.outcome << "), got: " << msg;
        continue;
      }
      // The message names the file, says what was wrong, and where when it is known.
      EXPECT_TRUE(msg.starts_with(err.file())) << msg;
      EXPECT_NE(err.file().find(fs::path(path).filename().string().substr(0, 8)), std::string::npos)
          << msg;
      EXPECT_NE(msg.find(e.substring), std::string::npos) << msg;
      EXPECT_GT(err.detail().size(), 10u) << msg;
      if (e.offset) {
        EXPECT_NE(err.offset(), kNoOffset) << msg;
        EXPECT_NE(msg.find("(byte "), std::string::npos) << msg;
      }
    }
  }
}

TEST(HostileTraces, SyntaxErrorsSayWhereInLinesAndColumns) {
  const auto msg = expectError(kDir + "ts_nan.json", "line 1, column");
  EXPECT_NE(msg.find("near \""), std::string::npos) << msg;
  // Multi-line: the comment is on line 1, the first event on line 2.
  expectError(kDir + "comments.json", "line 1, column 1");
}

TEST(HostileTraces, NegativeDurationsAreSkippedNotClampedToGarbage) {
  const auto t = readTraceFile(kDir + "dur_negative.json");
  ASSERT_EQ(t.eventCount(), 2u);
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      EXPECT_GE(track.dur[i], 0);
      EXPECT_GE(track.start[i], 0);
    }
  }
}

TEST(HostileTraces, OutOfRangeArgsAreDroppedNotTruncated) {
  const auto t = readTraceFile(kDir + "step_and_bucket_out_of_range.json");
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      EXPECT_EQ(track.step[i], kNoStep);
      EXPECT_EQ(track.bucket[i], kNoBucket);
    }
  }
  const auto n = readTraceFile(kDir + "nelems_overflow.json");
  ASSERT_EQ(n.tracks.size(), 1u);
  EXPECT_EQ(n.tracks[0].bytes[0], kNoBytes);
  // A step marker whose number leaves no room for "the next step" is not a step.
  EXPECT_TRUE(readTraceFile(kDir + "profiler_step_int_max.json").steps.empty());
}

TEST(HostileTraces, EscapedKeysAreDecoded) {
  // Keys may be written with escapes; "\u0070h" is "ph". Unknown ones are still ignored.
  const auto t = parseTraceText(
      R"({"traceEvents": [{"\u0070h": "X", "t\u0073": 2, "d\u0075r": 1, "pid": 0, "tid": 0, )"
      R"("\ud83d\ude00": 1, "a\"b": 2, "x\/y": 3, "\u00zz": 4, "n\u0061me": "k\u00e9"}]})",
      "escaped-keys.json");
  ASSERT_EQ(t.eventCount(), 1u);
  EXPECT_EQ(t.tracks[0].dur[0], 1000);
  EXPECT_EQ(t.names[t.tracks[0].name[0]], "k\xc3\xa9");
  EXPECT_TRUE(t.warnings.empty());
}

// ---- Generated: too big to commit ----

TEST(HostileTracesGenerated, NestingHundredThousandLevelsDeep) {
  constexpr std::size_t kDepth = 100'000;
  const std::string ev =
      R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 0, "ts": 1, "dur": 1)";
  // In a field the reader skips: tolerated.
  const std::string in_args = R"({"traceEvents": [)" + ev + R"(, "args": {"x": )" +
                              std::string(kDepth, '[') + std::string(kDepth, ']') + "}}]}";
  EXPECT_EQ(parseTraceText(in_args, "deep-args.json").eventCount(), 1u);
  std::string objects = R"({"traceEvents": [)" + ev + R"(, "args": )";
  for (std::size_t i = 0; i < kDepth; ++i)
    objects += "{\"a\":";
  objects += "1" + std::string(kDepth, '}') + "}]}";
  EXPECT_EQ(parseTraceText(objects, "deep-objects.json").eventCount(), 1u);
  // In the ddpscope config, kept as raw JSON and written back as it was.
  const std::string config = R"({"ddpscope": {"config": {"x": )" + std::string(kDepth, '[') +
                             std::string(kDepth, ']') + R"(}}, "traceEvents": [)" + ev + "}]}";
  const auto t = parseTraceText(config, "deep-config.json");
  EXPECT_EQ(t.ddpscope.configValue("x").size(), 2 * kDepth);
  expectRoundTrip(t);
  // Where events belong: an error at the first event, not a stack overflow.
  for (const std::string& bad :
       {R"({"traceEvents": )" + std::string(kDepth, '[') + std::string(kDepth, ']') + "}",
        std::string(kDepth, '[') + std::string(kDepth, ']')}) {
    try {
      parseTraceText(bad, "deep-events.json");
      ADD_FAILURE() << "no error";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("expected an event object"), std::string::npos)
          << e.what();
    }
  }
  // Never closed: truncated, and how deep it was.
  try {
    parseTraceText(R"({"traceEvents": [{"ph": "X", "args": )" + std::string(kDepth, '['),
                   "deep-open.json");
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("100003 levels still open"), std::string::npos)
        << e.what();
  }
}

TEST(HostileTracesGenerated, SixtyFourMebibyteSingleString) {
  const std::size_t n = std::size_t{64} << 20;
  std::string json =
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "ts": 1, "dur": 1, "pid": 0, "tid": 0, "name": ")";
  const std::size_t string_start = json.size() - 1;
  json.append(n, 'a');
  const auto before = peakRss();
  {
    const auto t = parseTraceText(json + "\"}]}", "long-name.json");
    ASSERT_EQ(t.eventCount(), 1u);
    EXPECT_EQ(t.names[t.tracks[0].name[0]].size(), n);
  }
  // The whole name is held a few times (text, parser, interned copy), never unboundedly.
  if (!kAsan) {
    EXPECT_LT(peakRss() - before, std::int64_t{12} * static_cast<std::int64_t>(n));
  }
  try {
    parseTraceText(json, "long-unclosed.json");
    ADD_FAILURE() << "no error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("ends inside a string that starts at byte " +
                                         std::to_string(string_start)),
              std::string::npos)
        << e.what();
  }
}

TEST(HostileTracesGenerated, MillionsOfTinyEvents) {
  // Several million events take minutes under AddressSanitizer: a tenth of them there.
  const std::size_t kEvents = kAsan ? 250'000 : 2'500'000;
  PaddedBuffer json;
  json.append(R"({"traceEvents": [)", 17);
  std::string ev;
  std::size_t negative = 0, counters = 0;
  for (std::size_t i = 0; i < kEvents; ++i) {
    ev.clear();
    if (i > 0) ev += ",\n";  // one event a line, as writers do: big files are read in pieces
    if (i % 1000 == 1) {
      ev += R"({"ph":"X","ts":)" + std::to_string(i) + R"(,"dur":-1,"pid":0,"tid":0})";
      ++negative;
    } else if (i % 1000 == 2) {
      ev += R"({"ph":"C","ts":)" + std::to_string(i) + R"(,"pid":0,"args":{"v":1}})";
      ++counters;
    } else {
      ev += R"({"ph":"X","ts":)" + std::to_string(i) + R"(,"dur":1,"pid":0,"tid":)" +
            std::to_string(i % 4) + "}";
    }
    json.append(ev.data(), ev.size());
  }
  json.append("]}", 2);
  const auto before = peakRss();
  const auto start = std::chrono::steady_clock::now();
  const RankTrace t = parseTrace(json, "tiny-events.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.eventCount(), kEvents - negative - counters);
  EXPECT_EQ(t.tracks.size(), 4u);
  // One warning per kind of problem, with a count, not one per event.
  ASSERT_EQ(t.warnings.size(), 2u);
  std::string all = t.warnings[0] + " | " + t.warnings[1];
  EXPECT_NE(all.find(std::to_string(negative) +
                     " events with a negative or impossible duration were skipped; the first is "
                     "traceEvents[1] (byte "),
            std::string::npos)
      << all;
  EXPECT_NE(all.find(std::to_string(counters) + " events of unsupported phases"), std::string::npos)
      << all;
  // Bounded: the model is ~50 bytes per event; the parser's memory scales with the text.
  if (!kAsan) {
    const auto grew = peakRss() - before;
    EXPECT_LT(grew, static_cast<std::int64_t>(6 * json.size() + kEvents * 100)) << grew;
    EXPECT_LT(seconds, 30.0);
  }
}

TEST(HostileTracesGenerated, ManyDistinctTracksAndFlowsLoadInLinearTime) {
  // Every event on its own thread, each with a flow: track and flow lookups must not scan.
  const std::size_t n = kAsan ? 40'000 : 200'000;
  std::string json = R"({"traceEvents": [)";
  for (std::size_t i = 0; i < n; ++i) {
    const auto tid = std::to_string(i);
    if (i > 0) json += ',';
    json += R"({"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":)" + tid +
            R"(,"ts":1,"dur":1},{"ph":"s","cat":"ac2g","id":)" + tid + R"(,"pid":1,"tid":)" + tid +
            R"(,"ts":1},{"ph":"f","cat":"ac2g","id":)" + tid + R"(,"pid":1,"tid":)" + tid +
            R"(,"ts":1,"bp":"e"})";
  }
  json += "]}";
  const auto start = std::chrono::steady_clock::now();
  const auto t = parseTraceText(json, "many-tracks.json");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(t.tracks.size(), n);
  EXPECT_EQ(t.flows.size(), n);
  EXPECT_LT(seconds, kAsan ? 60.0 : 20.0);  // quadratic lookups took minutes here
}

namespace {

// Writes a gzip file of {"traceEvents": [ + spaces + ]} that inflates to `mib` MiB without
// compressing all of it: after a full flush deflate restarts from a clean state, so one
// compressed MiB of spaces is repeated; a stored final block and the true CRC and size end it.
void writeGzipBomb(const std::string& path, std::uint64_t mib) {
  const std::string head = R"({"traceEvents": [)";
  const std::string tail = "]}";
  const std::string chunk(1u << 20, ' ');
  z_stream zs{};
  ASSERT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  auto pump = [&zs](std::string_view in) {
    std::string out;
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
    zs.avail_in = static_cast<uInt>(in.size());
    char buf[1 << 16];
    do {
      zs.next_out = reinterpret_cast<Bytef*>(buf);
      zs.avail_out = sizeof buf;
      deflate(&zs, Z_FULL_FLUSH);
      out.append(buf, sizeof buf - zs.avail_out);
    } while (zs.avail_out == 0 || zs.avail_in > 0);
    return out;
  };
  const std::string start = pump(head);
  const std::string block = pump(chunk);
  ASSERT_EQ(pump(chunk), block) << "deflate output after a full flush is not repeatable";
  deflateEnd(&zs);
  std::ofstream out(path, std::ios::binary);
  out << start;
  uLong crc = crc32(0, reinterpret_cast<const Bytef*>(head.data()), static_cast<uInt>(head.size()));
  const uLong chunk_crc =
      crc32(0, reinterpret_cast<const Bytef*>(chunk.data()), static_cast<uInt>(chunk.size()));
  for (std::uint64_t i = 0; i < mib; ++i) {
    out << block;
    crc = crc32_combine(crc, chunk_crc, static_cast<z_off_t>(chunk.size()));
  }
  // Final stored block holding the tail: BFINAL=1, BTYPE=00, then LEN and its complement.
  const auto len = static_cast<unsigned>(tail.size());
  const unsigned char stored[5] = {
      1, static_cast<unsigned char>(len & 0xFF), static_cast<unsigned char>(len >> 8),
      static_cast<unsigned char>(~len & 0xFF), static_cast<unsigned char>((~len >> 8) & 0xFF)};
  out.write(reinterpret_cast<const char*>(stored), sizeof stored);
  out << tail;
  crc = crc32_combine(
      crc, crc32(0, reinterpret_cast<const Bytef*>(tail.data()), static_cast<uInt>(tail.size())),
      static_cast<z_off_t>(tail.size()));
  const std::uint64_t total = head.size() + mib * chunk.size() + tail.size();
  for (std::uint64_t v : {static_cast<std::uint64_t>(crc), total & 0xFFFFFFFFu}) {
    for (int b = 0; b < 4; ++b)
      out.put(static_cast<char>((v >> (8 * b)) & 0xFF));
  }
}

}  // namespace

TEST(HostileTracesGenerated, GzipBombOfTenGigabytesStopsAtTheSizeLimit) {
  const auto dir = freshDir("bomb");
  const auto path = (dir / "bomb.json.gz").string();
  writeGzipBomb(path, 10 * 1024);  // 10 GiB of spaces in about 10 MB
  ASSERT_LT(fs::file_size(path), std::uintmax_t{16} << 20);
  const ScopedEnv limit("DDPSCOPE_MAX_TRACE_MB", "64");
  const auto before = peakRss();
  const auto msg = expectError(path, "larger than the limit of 64 MiB");
  EXPECT_NE(msg.find("DDPSCOPE_MAX_TRACE_MB"), std::string::npos) << msg;
  // It stopped at the limit instead of inflating on: at most the limit plus one growth step.
  if (!kAsan) {
    EXPECT_LT(peakRss() - before, std::int64_t{200} << 20);
  }
  fs::remove_all(dir);
}

TEST(HostileTracesGenerated, FilesOverTheSizeLimitAreRefusedBeforeReading) {
  const auto dir = freshDir("limit");
  const ScopedEnv limit("DDPSCOPE_MAX_TRACE_MB", "16");
  // A sparse 8 GiB file: reading it first would need 8 GiB.
  const auto big = (dir / "big.json").string();
  {
    const int fd = ::open(big.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ASSERT_GE(fd, 0);
    ASSERT_EQ(::ftruncate(fd, std::int64_t{8} << 30), 0);
    ::close(fd);
  }
  const auto before = peakRss();
  auto msg = expectError(big, "larger than the limit of 16 MiB");
  EXPECT_NE(msg.find("(8192 MiB on disk)"), std::string::npos) << msg;
  EXPECT_LT(peakRss() - before, std::int64_t{64} << 20);
  // Just over the limit, plain and compressed.
  std::string json = R"({"traceEvents": [)" + std::string((17u << 20), ' ') + "]}";
  const auto plain = (dir / "over.json").string();
  writeFileAtomically(plain, json);
  expectError(plain, "larger than the limit of 16 MiB");
  const auto gz = (dir / "over.json.gz").string();
  writeFileAtomically(gz, gzipBytes(json));
  // Inflated up to the limit (a damaged trailer could state anything), then refused with what
  // its trailer states.
  msg = expectError(gz, "larger than the limit of 16 MiB");
  EXPECT_NE(msg.find("(more than 16 MiB when inflated; its gzip trailer states 17.1 MiB)"),
            std::string::npos)
      << msg;
  // Two members, the last one small: its trailer says nothing of the first, which is inflated
  // until it passes the limit.
  writeFileAtomically(gz, gzipBytes(json) + gzipBytes("\n"));
  msg = expectError(gz, "larger than the limit of 16 MiB");
  EXPECT_NE(msg.find("(more than 16 MiB when inflated)"), std::string::npos) << msg;
  // Just under it loads.
  json.resize(15u << 20);
  json += "]}";
  writeFileAtomically(plain, json);
  EXPECT_EQ(readTraceFile(plain).eventCount(), 0u);
  fs::remove_all(dir);
}

TEST(HostileTracesGenerated, AnUnreadableSizeLimitIsSaidNotIgnored) {
  const auto dir = freshDir("badlimit");
  const auto plain = (dir / "rank-0.json").string();
  writeFileAtomically(plain, R"({"traceEvents": []})");
  const auto gz = (dir / "rank-1.json.gz").string();
  writeFileAtomically(gz, gzipBytes(R"({"traceEvents": []})"));
  for (const char* bad : {"abc", "-1", "0", "12MB", " 64"}) {
    const ScopedEnv limit("DDPSCOPE_MAX_TRACE_MB", bad);
    const auto msg = expectError(plain, std::string("DDPSCOPE_MAX_TRACE_MB=\"") + bad + "\"");
    EXPECT_NE(msg.find("not a size in MiB"), std::string::npos) << msg;
    expectError(gz, "not a size in MiB");
  }
  for (const char* good : {"64", "8192"}) {
    const ScopedEnv limit("DDPSCOPE_MAX_TRACE_MB", good);
    EXPECT_EQ(readTraceFile(plain).eventCount(), 0u);
    EXPECT_EQ(readTraceFile(gz).eventCount(), 0u);
  }
  {
    const ScopedEnv limit("DDPSCOPE_MAX_TRACE_MB", "");  // set but empty: the default
    EXPECT_EQ(readTraceFile(plain).eventCount(), 0u);
  }
  fs::remove_all(dir);
}

TEST(HostileTracesGenerated, PipesAndDevicesAreRefusedWithoutBlocking) {
  const auto dir = freshDir("fifo");
  const auto fifo = (dir / "rank-0.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Opening a FIFO for reading blocks until a writer appears; the reader must not wait.
  expectError(fifo, "not a regular file");
  expectError("/dev/zero", "not a regular file");
  expectError(dir.string(), "is a folder");
  fs::remove_all(dir);
}
