// Malformed input never crashes or hangs: each case gives a TraceError that names the file,
// the byte offset where known, and what was expected. (Negative and overflowing durations are
// tolerated with a warning: see hostile_test.cpp and tests/data/hostile.)
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>

#include "tracer/format/file_io.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope::trace;
namespace fs = std::filesystem;

namespace {

struct Case {
  const char* label;
  std::string json;
  const char* expect;  // substring of the message
  bool offset_known;
};

const std::string kEvent =
    R"({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.5, "dur": 2, "args": {"stream": 7}})";

std::vector<Case> cases() {
  return {
      {"empty file", "", "empty", true},
      {"not json", "hello", "an unquoted word 'hello'", true},
      {"truncated json", R"({"traceEvents": [)" + kEvent, "truncated", false},
      {"truncated string", R"({"traceEvents": [{"ph": "X", "name": "abc)", "truncated", false},
      {"missing traceEvents", R"({"schemaVersion": 1})", "no \"traceEvents\"", false},
      {"traceEvents not array", R"({"traceEvents": {"a": 1}})", "must be an array", true},
      {"event not object", R"({"traceEvents": [1, 2]})", "expected an event object", true},
      {"ts is a string",
       R"({"traceEvents": [{"ph": "X", "ts": "soon", "dur": 1, "pid": 0, "tid": 0}]})",
       "\"ts\" must be a number", true},
      {"dur is an array",
       R"({"traceEvents": [{"ph": "X", "ts": 1, "dur": [], "pid": 0, "tid": 0}]})",
       "\"dur\" must be a number", true},
      {"name is a number",
       R"({"traceEvents": [{"ph": "X", "name": 5, "ts": 1, "dur": 1, "pid": 0, "tid": 0}]})",
       "\"name\" must be a string", true},
      {"NaN timestamp",
       R"({"traceEvents": [{"ph": "X", "name": "k", "ts": NaN, "dur": 1, "pid": 0, "tid": 0}]})",
       "", false},
      {"huge timestamp",
       R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1e300, "dur": 1, "pid": 0, "tid": 0}]})",
       "in range", true},
      {"missing ph", R"({"traceEvents": [{"name": "k", "ts": 1, "dur": 1, "pid": 0, "tid": 0}]})",
       "missing \"ph\"", true},
      {"missing ts", R"({"traceEvents": [{"ph": "X", "name": "k", "dur": 1, "pid": 0, "tid": 0}]})",
       "missing \"ts\"", true},
      {"X without dur",
       R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1, "pid": 0, "tid": 0}]})",
       "needs \"dur\"", true},
      {"top level scalar", "42", "expected a JSON object", true},
      {"trailing garbage", R"({"traceEvents": []} xyz)", "", false},
      {"bad baseTimeNanoseconds", R"({"baseTimeNanoseconds": "yesterday", "traceEvents": []})",
       "baseTimeNanoseconds", true},
      {"ddpscope block not object", R"({"ddpscope": [1], "traceEvents": []})", "must be an object",
       true},
      {"invalid utf8 in name",
       std::string(R"({"traceEvents": [{"ph": "X", "name": ")") + "\xff\xfe" +
           R"(", "ts": 1, "dur": 1, "pid": 0, "tid": 0}]})",
       "UTF-8", false},
      {"deeply nested events",
       std::string(R"({"traceEvents": )") + std::string(5000, '[') + std::string(5000, ']') + "}",
       "", false},
  };
}

}  // namespace

TEST(MalformedInput, EveryCaseGivesAClearErrorNamingTheFile) {
  for (const auto& c : cases()) {
    SCOPED_TRACE(c.label);
    try {
      parseTraceText(c.json, "bad.json");
      ADD_FAILURE() << c.label << ": no error";
    } catch (const TraceError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(e.file(), "bad.json");
      EXPECT_TRUE(msg.starts_with("bad.json")) << msg;
      EXPECT_NE(msg.find(c.expect), std::string::npos) << msg;
      if (c.offset_known) {
        EXPECT_NE(e.offset(), kNoOffset) << msg;
      }
      EXPECT_GT(e.detail().size(), 5u) << msg;
    }
  }
}

TEST(MalformedInput, ErrorOffsetPointsAtTheBadEvent) {
  const std::string json = R"({"traceEvents": [)" + kEvent + ", " +
                           R"({"ph": "X", "name": "k", "ts": 1, "dur": "2", "pid": 0, "tid": 0}]})";
  try {
    parseTraceText(json, "x.json");
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_EQ(e.offset(), json.find(R"({"ph": "X", "name": "k", "ts": 1, "dur": "2")"));
    EXPECT_NE(std::string(e.what()).find("traceEvents[1]"), std::string::npos) << e.what();
  }
}

TEST(MalformedInput, TruncatedAndCorruptGzip) {
  const std::string json = R"({"traceEvents": [)" + kEvent + "]}";
  const std::string gz = gzipBytes(json);
  const auto dir = fs::temp_directory_path() / ("ddpscope-gz-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto truncated = (dir / "t.json.gz").string();
  writeFileAtomically(truncated, std::string_view(gz).substr(0, gz.size() / 2));
  try {
    readTraceFile(truncated);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), truncated);
  }
  std::string corrupt = gz;
  for (std::size_t i = 12; i < corrupt.size() - 8; ++i)
    corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  const auto bad = (dir / "c.json.gz").string();
  writeFileAtomically(bad, corrupt);
  EXPECT_THROW(readTraceFile(bad), TraceError);
  // The data intact but its checksum not: zlib's "incorrect data check", said in plain words, at
  // a byte of the compressed file (the trailer).
  std::string bad_sum = gz;
  bad_sum[bad_sum.size() - 8] = static_cast<char>(bad_sum[bad_sum.size() - 8] ^ 0x01);
  const auto summed = (dir / "s.json.gz").string();
  writeFileAtomically(summed, bad_sum);
  try {
    readTraceFile(summed);
    FAIL();
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("incorrect data check (what it inflates to does not match the checksum "
                        "at its end: the file is damaged"),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("the byte is counted in the compressed file"), std::string::npos) << what;
    EXPECT_LE(e.offset(), gz.size());
  }
  // The intact file loads.
  const auto good = (dir / "g.json.gz").string();
  writeFileAtomically(good, gz);
  EXPECT_EQ(readTraceFile(good).eventCount(), 1u);
  // Zeros after the gzip data (a copy padded to a block size) are ignored, as gzip ignores them;
  // other bytes there are named for what they are.
  const auto padded = (dir / "p.json.gz").string();
  writeFileAtomically(padded, gz + std::string(1024, '\0'));
  EXPECT_EQ(readTraceFile(padded).eventCount(), 1u);
  // The gzip data followed by `after`: the error's message and offset.
  const auto errorAfter = [&](const std::string& after) -> std::pair<std::string, std::uint64_t> {
    const auto path = (dir / "a.json.gz").string();
    writeFileAtomically(path, gz + after);
    try {
      readTraceFile(path);
    } catch (const TraceError& e) {
      return {e.what(), e.offset()};
    }
    return {"(no error)", 0};
  };
  const auto [text, at] = errorAfter("appended text\n");
  EXPECT_NE(text.find("14 bytes after the end of the gzip data are not"), std::string::npos)
      << text;
  EXPECT_EQ(at, gz.size());
  // What to do: keep the whole gzip data, which then loads.
  const std::string keep = "(head -c " + std::to_string(gz.size()) + " FILE > COPY.json.gz)";
  EXPECT_NE(text.find(keep), std::string::npos) << text;
  // One byte (an editor's newline): zlib takes it in and waits for more; still not a member.
  const auto [one, one_at] = errorAfter("\n");
  EXPECT_NE(one.find("1 byte after the end of the gzip data is not"), std::string::npos) << one;
  EXPECT_EQ(one_at, gz.size());
  fs::remove_all(dir);
}

TEST(MalformedInput, GzipBombStopsAtTheSizeLimit) {
  const std::string zeros(64 << 20, ' ');
  const std::string gz = gzipBytes("{\"traceEvents\": []," + zeros + "}", 9);
  ReadLimits limits;
  limits.max_bytes = 8 << 20;
  try {
    inflateBytes(gz, "bomb.json.gz", limits);
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than the limit"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("more than 8 MiB when inflated; its gzip trailer states"),
              std::string::npos)
        << e.what();
  }
}

TEST(MalformedInput, MissingFileAndFolder) {
  EXPECT_THROW(readTraceFile("/no/such/file.json"), TraceError);
  EXPECT_THROW(readTraceFile(fs::temp_directory_path().string()), TraceError);
}

TEST(MalformedInput, DeepNestingInIgnoredFieldsIsTolerated) {
  const std::string json = std::string(R"({"x": )") + std::string(5000, '[') +
                           std::string(5000, ']') + R"(, "traceEvents": [)" + kEvent + "]}";
  EXPECT_EQ(parseTraceText(json, "deep.json").eventCount(), 1u);
}
