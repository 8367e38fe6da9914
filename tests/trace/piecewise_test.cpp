// Big documents are parsed a piece of the event array at a time. The oracles: the same text
// parsed as one document (piece_bytes 0), and the same text with every newline replaced by a
// space (no place to cut); all must give the same model, warnings and errors.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <string>

#include "tracer/format/file_io.h"
#include "tracer/format/memory.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_parser.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope::trace;

namespace {

struct Layout {
  bool kineto_keys_after = true;  // "traceName", "baseTimeNanoseconds" after the events
  bool bare_array = false;
  bool nested_object_lists = false;        // args holding a multi-line list of objects
  std::size_t nested_every = 50;           // in one event of this many
  std::string nested_indent = "        ";  // the events' own lines begin with two spaces
};

// About 45 MB of Kineto-style, multi-line events: GPU kernels and copies on three streams,
// runtime launches, flows, metadata, strings with escapes, numbers as strings.
std::string bigTrace(std::size_t events, const Layout& layout) {
  std::string s;
  s.reserve(events * 420);
  if (layout.bare_array) {
    s += "[\n";
  } else {
    s += "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {\"id\": 0, \"name\": "
         "\"GPU [0]\", \"note\": \"traceEvents\"}\n  ],\n";
    s += "  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 3, \"world_size\": 8},\n";
    s += "  \"traceEvents\": [\n";
  }
  for (std::size_t i = 0; i < events; ++i) {
    const std::size_t stream = 7 + (i % 3) * 3;
    const bool runtime = i % 4 == 3;
    s += "  {\n    \"ph\": \"X\", \"cat\": \"";
    s += runtime ? "cuda_runtime" : (stream == 10 ? "gpu_memcpy" : "kernel");
    s += "\", \"name\": \"";
    s += runtime ? "cudaLaunchKernel" : (i % 7 == 0 ? "k\\\"quoted\\\"\\n{x}" : "gemm_bf16");
    s += "\",\n    \"pid\": ";
    s += runtime ? "100" : "0";
    s += ", \"tid\": ";
    s += runtime ? "\"100\"" : std::to_string(stream);
    s += ",\n    \"ts\": " + std::to_string(1000 + i * 3) + "." + std::to_string(i % 1000) +
         ", \"dur\": " + std::to_string(1 + i % 17) + ".250,\n    \"args\": {\n";
    s += "      \"device\": 0, \"stream\": " + std::to_string(stream) +
         ", \"correlation\": " + std::to_string(i) + ", \"step\": " + std::to_string(i / 5000);
    if (layout.nested_object_lists && i % layout.nested_every == 0) {
      const std::string& in = layout.nested_indent;
      s += ",\n      \"inputs\": [\n" + in + "{\"shape\": [1, 2]},\n" + in +
           "{\"shape\": []}\n      ]";
    }
    s += "\n    }\n  }";
    if (i % 100 == 5) {
      s += ",\n  {\"ph\": \"s\", \"id\": " + std::to_string(i) +
           ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"pid\": 100, \"tid\": 100, \"ts\": " +
           std::to_string(1000 + i * 3) + "}";
      s += ",\n  {\"ph\": \"f\", \"id\": " + std::to_string(i) +
           ", \"bp\": \"e\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"pid\": 0, \"tid\": 7, "
           "\"ts\": " +
           std::to_string(1001 + i * 3) + "}";
    }
    if (i + 1 < events) s += ",";
    s += "\n";
  }
  if (layout.bare_array) {
    s += "]\n";
  } else if (layout.kineto_keys_after) {
    s += "  ],\n  \"traceName\": \"x.json\",\n  \"displayTimeUnit\": \"ms\",\n"
         "  \"baseTimeNanoseconds\": 1700000000000000000\n}\n";
  } else {
    s += "  ]\n}\n";
  }
  return s;
}

std::string oneLine(std::string s) {
  std::replace(s.begin(), s.end(), '\n', ' ');
  return s;
}

// Pieces of 256 KiB keep these documents small (and the tests quick under sanitizers); the
// default size is exercised by the first test.
constexpr std::size_t kSmallPiece = 256 << 10;

RankTrace parse(const std::string& text, std::size_t* pieces, unsigned threads = 1,
                std::size_t piece_bytes = kSmallPiece) {
  ReadOptions options;
  options.piece_bytes = piece_bytes;
  options.threads = threads;
  auto t = parseTraceText(text, "big.json", options);
  *pieces = lastReadStats().pieces;
  return t;
}

std::string dataPath(const std::string& name) {
  return std::string(DDPSCOPE_TEST_DATA) + "/" + name;
}

RankTrace parseWhole(const std::string& text) {
  ReadOptions whole;
  whole.piece_bytes = 0;
  return parseTraceText(text, "big.json", whole);
}

std::string errorOf(const std::string& text, std::size_t piece_bytes = kSmallPiece,
                    unsigned threads = 1) {
  ReadOptions options;
  options.piece_bytes = piece_bytes;
  options.threads = threads;
  try {
    parseTraceText(text, "big.json", options);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace

TEST(PiecewiseParse, KinetoLayoutGivesTheSameModelAsOneDocument) {
  const auto text = bigTrace(100'000, {});
  ASSERT_GT(text.size(), 4 * ReadOptions{}.piece_bytes);
  std::size_t pieces = 0, whole = 99;
  const auto a = parse(text, &pieces, 1, ReadOptions{}.piece_bytes);
  const auto b = parse(oneLine(text), &whole, 1, ReadOptions{}.piece_bytes);
  EXPECT_GE(pieces, 4u);
  EXPECT_EQ(whole, 0u);
  EXPECT_EQ(describeDifference(a, b), "");
  EXPECT_EQ(a.rank, 3);
  EXPECT_EQ(a.world_size, 8);
  EXPECT_EQ(a.base_time_ns, b.base_time_ns);
  EXPECT_GT(a.flows.size(), 900u);
  EXPECT_EQ(a.eventCount(), 100'000u);
}

TEST(PiecewiseParse, BareArrayAndNoKeysAfterTheEvents) {
  for (const Layout& layout : {Layout{false, true, false}, Layout{false, false, false}}) {
    const auto text = bigTrace(15'000, layout);
    std::size_t pieces = 0, whole = 99;
    const auto a = parse(text, &pieces);
    const auto b = parse(oneLine(text), &whole);
    EXPECT_GE(pieces, 4u);
    EXPECT_EQ(whole, 0u);
    EXPECT_EQ(describeDifference(a, b), "");
  }
}

TEST(PiecewiseParse, ListsOfObjectsInsideEventsStillGiveTheSameModel) {
  // Newline + '{' after a comma also occurs inside these events, in every other one. Indented
  // deeper than the events, such places are not taken as cuts; indented as the events, they are,
  // and a piece that then cannot parse is joined with the next (the last one with the rest of the
  // document). Either way the model is the one of the whole parse.
  for (const std::string indent : {"        ", "  "}) {
    SCOPED_TRACE("indent " + std::to_string(indent.size()));
    const auto text = bigTrace(15'000, {true, false, true, 2, indent});
    std::size_t pieces = 0, whole = 99;
    const auto b = parse(oneLine(text), &whole);
    EXPECT_EQ(whole, 0u);
    for (const unsigned threads : {1u, 2u}) {
      SCOPED_TRACE(threads);
      const auto a = parse(text, &pieces, threads, 64 << 10);
      EXPECT_EQ(describeDifference(a, b), "");
      EXPECT_EQ(a.warnings, b.warnings);
      EXPECT_EQ(a.eventCount(), 15'000u);
      // Not sent to the whole-document parse; except where a false cut ends one thread's run of
      // pieces (the next thread's first piece then begins inside an event): that is left to it.
      if (threads == 1 || indent.size() > 2) {
        EXPECT_GE(pieces, 40u);
      }
    }
  }
}

TEST(PiecewiseParse, ErrorsAndWarningsAreTheOnesOfTheWholeDocument) {
  const auto text = bigTrace(15'000, {});
  const auto at = text.find("\"dur\": 3.250", text.size() * 2 / 3);
  ASSERT_NE(at, std::string::npos);

  // A missing colon far into the file.
  auto bad = text;
  bad.replace(at, 12, "\"dur\"  3.25");
  const auto msg = errorOf(bad);
  EXPECT_EQ(msg, errorOf(bad, 0));
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;

  // A negative duration there is tolerated with a warning that says where.
  auto negative = text;
  negative.replace(at, 12, "\"dur\": -3.25");
  std::size_t pieces = 0;
  const auto a = parse(negative, &pieces);
  EXPECT_GE(pieces, 4u);
  const auto b = parseWhole(negative);
  EXPECT_EQ(describeDifference(a, b), "");
  EXPECT_EQ(a.warnings, b.warnings);
  ASSERT_FALSE(a.warnings.empty());

  // Cut short in the middle of an event.
  const auto cut = text.substr(0, text.size() * 3 / 4);
  const auto truncated = errorOf(cut);
  EXPECT_EQ(truncated, errorOf(cut, 0));
  EXPECT_NE(truncated.find("truncated"), std::string::npos) << truncated;

  // Garbage after the document.
  const auto garbage = text + "\n{\"x\": 1}\n";
  EXPECT_EQ(errorOf(garbage), errorOf(garbage, 0));
  EXPECT_NE(errorOf(garbage), "(no error)");

  // Two event arrays.
  auto twice = text;
  twice.insert(twice.rfind('}'), ",\n  \"traceEvents\": [\n  {\"ph\": \"i\", \"ts\": 1}\n  ]\n");
  EXPECT_EQ(errorOf(twice), errorOf(twice, 0));
  EXPECT_NE(errorOf(twice), "(no error)");
}

TEST(PiecewiseParse, RealTracesInSmallPiecesGiveTheSameModel) {
  for (const char* file :
       {"resnet50_ddp_rank0.json.gz", "resnet50_world1_rank0.json.gz",
        "alexnet_sync_events.json.gz", "rocm_mi250_tiny.json.gz", "triton_driver_launch.json.gz"}) {
    SCOPED_TRACE(file);
    ReadOptions whole;
    whole.piece_bytes = 0;
    ReadOptions small;
    small.piece_bytes = 16 << 10;
    const auto a = readTraceFile(dataPath(file), whole);
    EXPECT_EQ(lastReadStats().pieces, 0u);
    const auto b = readTraceFile(dataPath(file), small);
    const auto bytes = readTraceBytes(dataPath(file), defaultReadLimits()).size();
    if (bytes >= 4 * small.piece_bytes) {
      EXPECT_GT(lastReadStats().pieces, bytes / small.piece_bytes / 2);
    }
    EXPECT_EQ(describeDifference(a, b), "");
    EXPECT_EQ(a.warnings, b.warnings);
  }
}

TEST(PiecewiseParse, PiecesOnSeveralThreadsGiveTheSameModelWarningsAndErrors) {
  for (const Layout& layout : {Layout{}, Layout{false, true, false}, Layout{true, false, true},
                               Layout{false, false, false}}) {
    auto text = bigTrace(20'000, layout);
    // Tolerated problems in the pieces of different threads: the first one must stay first.
    for (const double where : {0.3, 0.5, 0.9}) {
      const auto at = text.find("\"dur\": 3.250", static_cast<std::size_t>(text.size() * where));
      ASSERT_NE(at, std::string::npos);
      text.replace(at, 12, "\"dur\": -3.25");
    }
    const auto b = parseWhole(text);
    for (const unsigned threads : {2u, 3u, 7u}) {
      SCOPED_TRACE(threads);
      std::size_t pieces = 0;
      const auto a = parse(text, &pieces, threads, 64 << 10);
      if (!layout.nested_object_lists) {  // there a false cut may send it all to the whole parse
        EXPECT_GE(pieces, 57u);
        EXPECT_EQ(lastReadStats().threads,
                  std::min<std::size_t>(threads, (pieces - 1) / reader::kPiecesPerThread));
      }
      EXPECT_EQ(describeDifference(a, b), "");
      EXPECT_EQ(a.warnings, b.warnings);
      EXPECT_EQ(a.process_names, b.process_names);
      EXPECT_EQ(a.thread_names, b.thread_names);
    }
  }
  const auto text = bigTrace(20'000, {});
  auto bad = text;
  bad.replace(bad.find("\"dur\": 3.250", text.size() * 2 / 3), 12, "\"dur\"  3.25");
  EXPECT_EQ(errorOf(bad, 64 << 10, 3), errorOf(bad, 0));
  const auto cut = text.substr(0, text.size() * 3 / 4);
  EXPECT_EQ(errorOf(cut, 64 << 10, 3), errorOf(cut, 0));
}

TEST(PiecewiseParse, ManyRowsWrittenIntoTheColumnsOnTwoThreadsGiveTheSameModel) {
  // From 65,536 rows on, the staged rows are written into the columns by two threads, each
  // writing half of the columns (the first with the categories kept aside).
  auto text = bigTrace(70'000, {});
  for (const double where : {0.2, 0.6}) {  // categories other than their kind's usual one
    const auto at = text.find("\"cat\": \"kernel\"", static_cast<std::size_t>(text.size() * where));
    ASSERT_NE(at, std::string::npos);
    text.replace(at, 15, "\"cat\": \"Kernel\"");
  }
  const auto b = parseWhole(text);
  std::size_t rows = 0;
  for (const auto& t : b.tracks)
    rows += t.size();
  ASSERT_GE(rows, std::size_t{1} << 16);
  for (const unsigned threads : {1u, 2u, 4u}) {
    SCOPED_TRACE(threads);
    std::size_t pieces = 0;
    const auto a = parse(text, &pieces, threads, 512 << 10);
    EXPECT_GE(pieces, 24u);
    EXPECT_EQ(describeDifference(a, b), "");
    EXPECT_EQ(a.warnings, b.warnings);
  }
}

TEST(PiecewiseParse, RealTracesOnSeveralThreadsGiveTheSameModel) {
  for (const char* file : {"resnet50_ddp_rank0.json.gz", "alexnet_sync_events.json.gz"}) {
    SCOPED_TRACE(file);
    ReadOptions whole;
    whole.piece_bytes = 0;
    ReadOptions threaded;
    threaded.piece_bytes = 4 << 10;
    threaded.threads = 4;
    const auto a = readTraceFile(dataPath(file), whole);
    const auto b = readTraceFile(dataPath(file), threaded);
    EXPECT_EQ(lastReadStats().threads, 4u);
    EXPECT_EQ(describeDifference(a, b), "");
    EXPECT_EQ(a.warnings, b.warnings);
    EXPECT_EQ(a.process_names, b.process_names);
    EXPECT_EQ(a.thread_names, b.thread_names);
  }
}

// Files of 1 MiB and more are parsed from a read-only map of the file: the same model as from a
// copy in memory, whatever the file's size against the page size (the zero padding the parser
// reads past the end comes from the rest of the last page or the zero page after it).
TEST(MappedFile, SameModelAsFromMemoryAtEveryPageBoundary) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-mapped-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = bigTrace(8'000, Layout{});
  ASSERT_GT(text.size(), std::size_t{1} << 20);
  const long page = ::sysconf(_SC_PAGESIZE);
  ASSERT_GT(page, 0);
  const auto whole_pages = text.size() / static_cast<std::size_t>(page) * page;
  // Ends exactly on a page; with less than the padding left in its last page; with plenty left.
  // (Spaces inside the event array are insignificant; they move the end.)
  for (const std::size_t target : {whole_pages + static_cast<std::size_t>(page),
                                   whole_pages + static_cast<std::size_t>(page) - 10,
                                   whole_pages + static_cast<std::size_t>(page) / 2}) {
    SCOPED_TRACE(target);
    std::string padded = text;
    ASSERT_LE(padded.size(), target);
    padded.insert(padded.find('[') + 1, target - padded.size(), ' ');
    ASSERT_EQ(padded.size(), target);
    const auto path = (dir / "rank-0.json").string();
    std::ofstream(path, std::ios::binary) << padded;
    const PaddedBuffer bytes = readTraceBytes(path, defaultReadLimits());
    EXPECT_TRUE(bytes.mapped());
    ASSERT_EQ(bytes.size(), target);
    ASSERT_GE(bytes.capacity(), bytes.size() + PaddedBuffer::kPadding);
    for (std::size_t i = 0; i < PaddedBuffer::kPadding; ++i)
      ASSERT_EQ(bytes.data()[bytes.size() + i], '\0') << i;
    for (const std::size_t piece : {std::size_t{0}, std::size_t{64} << 10}) {
      // Copied whole first, or read from the map (whole, or each piece copied from the file).
      for (const bool copied_whole : {true, false}) {
        ReadOptions options;
        options.piece_bytes = piece;
        if (!copied_whole) options.copy_whole_at_most = 0;
        EXPECT_EQ(describeDifference(readTraceFile(path, options), parseWhole(padded)), "");
      }
    }
    // An error in a mapped file is reported at the same offset as from memory.
    std::string broken = padded;
    const auto colon = broken.find("\"ts\":", broken.size() / 2);
    ASSERT_NE(colon, std::string::npos);
    broken[colon + 4] = '}';
    std::ofstream(path, std::ios::binary | std::ios::trunc) << broken;
    std::string mapped_error, memory_error;
    try {
      readTraceFile(path, {});
    } catch (const TraceError& e) {
      mapped_error = e.what();
    }
    try {
      parseTraceText(broken, path, {});
    } catch (const TraceError& e) {
      memory_error = e.what();
    }
    EXPECT_NE(mapped_error, "");
    EXPECT_EQ(mapped_error, memory_error);
  }
  // Small files are read into memory of their own.
  const auto small = (dir / "small.json").string();
  std::ofstream(small) << "{\"traceEvents\": []}";
  EXPECT_FALSE(readTraceBytes(small, defaultReadLimits()).mapped());
  std::filesystem::remove_all(dir);
}

// A mapped file keeps its descriptor (closed with the map, also when the buffer was moved):
// big documents are parsed from copies the kernel makes, which must be the map's bytes; a file
// shortened since is said to be so, never read past its end.
TEST(MappedFile, KeepsItsFileOpenToCopyItsBytes) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-source-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto open_files = [] {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
      ++n;
    return n;
  };
  const std::string text = bigTrace(8'000, Layout{});
  const auto path = (dir / "rank-0.json").string();
  std::ofstream(path, std::ios::binary) << text;
  const std::size_t before = open_files();
  {
    PaddedBuffer first = readTraceBytes(path, defaultReadLimits());
    ASSERT_TRUE(first.mapped());
    ASSERT_TRUE(first.hasSource());
    EXPECT_EQ(open_files(), before + 1);
    const PaddedBuffer bytes = std::move(first);
    EXPECT_FALSE(first.hasSource());
    EXPECT_EQ(open_files(), before + 1);
    std::string copy(4096, '?');
    int error = -1;
    std::size_t got = 0;
    for (const std::size_t from :
         {std::size_t{0}, std::size_t{4095}, text.size() / 2, text.size() - 4096}) {
      ASSERT_TRUE(bytes.readSource(from, copy.size(), copy.data(), &error, &got)) << from;
      EXPECT_EQ(got, copy.size());
      EXPECT_EQ(copy, text.substr(from, copy.size())) << from;
    }
    EXPECT_FALSE(bytes.readSource(text.size() - 10, 11, copy.data(), &error, &got));
    EXPECT_EQ(error, EINVAL);  // past the buffer: asked wrongly, not a changed file
    EXPECT_FALSE(bytes.sourceChanged());
    // Shortened after it was mapped: its tail cannot be read, and says so.
    std::filesystem::resize_file(path, text.size() / 2);
    EXPECT_TRUE(bytes.sourceChanged());
    error = -1;
    EXPECT_FALSE(bytes.readSource(text.size() / 2 - 100, 4096, copy.data(), &error, &got));
    EXPECT_EQ(error, 0);
    EXPECT_EQ(got, 100u);
    ASSERT_TRUE(bytes.readSource(0, 4096, copy.data(), &error, &got));
    EXPECT_EQ(copy, text.substr(0, 4096));
  }
  EXPECT_EQ(open_files(), before);
  // Memory of our own has no file to copy from.
  {
    const PaddedBuffer small(std::string_view("{}"));
    EXPECT_FALSE(small.hasSource());
    int error = -1;
    std::size_t got = 0;
    char c = 0;
    EXPECT_FALSE(small.readSource(0, 1, &c, &error, &got));
    EXPECT_FALSE(small.sourceChanged());
  }
  std::filesystem::remove_all(dir);
}

namespace {
// A trace of a few MB whose end lies well inside its last page: cutting 10 bytes leaves every
// page of a map of it in the file (a page wholly past the end would fault), so only copies read
// from the file can see the change.
std::string traceEndingMidPage() {
  const long page = ::sysconf(_SC_PAGESIZE);
  std::string text = bigTrace(8'000, Layout{});
  while (page > 0 && text.size() % static_cast<std::size_t>(page) < 100)
    text.insert(text.find('[') + 1, 50, ' ');
  return text;
}
}  // namespace

// A file shortened after loading began (a profiler writing the same name again) is an error
// that says so, from whichever thread read the short piece, or from the copy of a file too small
// for pieces; never a fault reading the map, nor a JSON error about the cut end (what parsing
// through the map gave: the cut end read as zeros).
TEST(MappedFile, ShortenedWhileItsPiecesAreReadIsAClearError) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-shorter-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = traceEndingMidPage();
  ASSERT_LT(text.size(), 4 * ReadOptions{}.piece_bytes);  // whole, by default
  const auto path = (dir / "rank-0.json").string();
  // In pieces on one thread and on two, each piece copied from the file (as a file too big to be
  // copied whole is read) or from a copy of it all; whole (twice: the second reuses the grown
  // buffer).
  struct Way {
    std::size_t piece_bytes;
    unsigned threads;
    bool copied_whole;
  };
  const Way ways[] = {{std::size_t{64} << 10, 1, false},
                      {std::size_t{64} << 10, 2, false},
                      {std::size_t{64} << 10, 2, true},
                      {0, 1, true},
                      {0, 1, true}};
  for (const auto& [piece_bytes, threads, copied_whole] : ways) {
    SCOPED_TRACE(std::to_string(piece_bytes) + " " + std::to_string(threads) + " " +
                 std::to_string(copied_whole));
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
    const PaddedBuffer bytes = readTraceBytes(path, defaultReadLimits());
    ASSERT_TRUE(bytes.hasSource());
    std::filesystem::resize_file(path, text.size() - 10);
    ReadOptions options;
    if (piece_bytes > 0) options.piece_bytes = piece_bytes;
    options.threads = threads;
    if (!copied_whole) options.copy_whole_at_most = 0;
    try {
      parseTrace(bytes, path, options);
      FAIL() << "expected an error";
    } catch (const SourceUnreadable& e) {
      EXPECT_NE(std::string(e.what()).find("rewritten while loading"), std::string::npos)
          << e.what();
      EXPECT_EQ(e.file(), path);
    }
  }
  std::filesystem::remove_all(dir);
}

// A mapped file too small for pieces is parsed whole from a copy the kernel makes (not through
// the map): the same model as the text parsed whole.
TEST(MappedFile, TooSmallForPiecesIsParsedFromACopy) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-copied-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = traceEndingMidPage();
  const auto path = (dir / "rank-0.json").string();
  std::ofstream(path, std::ios::binary) << text;
  ASSERT_TRUE(readTraceBytes(path, defaultReadLimits()).hasSource());  // mapped, its file kept
  const auto t = readTraceFile(path);
  EXPECT_EQ(lastReadStats().pieces, 0u);
  EXPECT_EQ(describeDifference(t, parseWhole(text)), "");
  std::filesystem::remove_all(dir);
}

// An inflated gzip's pages are given back as its pieces are parsed, as a map's are; its bytes
// are then gone, so an error found after that reads the file again for the exact message.
TEST(InflatedFile, PagesGivenBackAsPiecesAreReadAndErrorsStayExact) {
  // Memory of our own: only once allowed, and then the bytes read as zeros.
  {
    const std::string text(std::size_t{1} << 20, 'x');
    PaddedBuffer kept(text);
    kept.releasePages(0, kept.size());
    EXPECT_FALSE(kept.pagesDiscarded());
    EXPECT_EQ(kept.view(), text);
    PaddedBuffer dropped(text);
    dropped.allowDiscard();
    dropped.releasePages(100, dropped.size() - 100);
    EXPECT_TRUE(dropped.pagesDiscarded());
    EXPECT_EQ(dropped.data()[99], 'x');  // partial pages at either end are kept
    EXPECT_EQ(dropped.data()[dropped.size() - 100], 'x');
    EXPECT_EQ(dropped.data()[dropped.size() / 2], '\0');
    for (std::size_t i = 0; i < PaddedBuffer::kPadding; ++i)
      ASSERT_EQ(dropped.data()[dropped.size() + i], '\0') << i;
  }
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-inflated-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = bigTrace(8'000, Layout{});
  const auto path = (dir / "rank-0.json.gz").string();
  std::ofstream(path, std::ios::binary) << gzipBytes(text);
  ReadOptions options;
  options.piece_bytes = std::size_t{64} << 10;
  EXPECT_EQ(describeDifference(readTraceFile(path, options), parseWhole(text)), "");
  EXPECT_GE(lastReadStats().pieces, 4u);

  // Broken two thirds in: pieces before it were parsed (their pages dropped) when it fails.
  std::string broken = text;
  const auto colon = broken.find("\"ts\":", broken.size() * 2 / 3);
  ASSERT_NE(colon, std::string::npos);
  broken[colon + 4] = '}';
  std::ofstream(path, std::ios::binary | std::ios::trunc) << gzipBytes(broken);
  std::string inflated_error, memory_error;
  try {
    readTraceFile(path, options);
  } catch (const TraceError& e) {
    inflated_error = e.what();
  }
  try {
    parseTraceText(broken, path, {});
  } catch (const TraceError& e) {
    memory_error = e.what();
  }
  EXPECT_NE(inflated_error, "");
  EXPECT_EQ(inflated_error, memory_error);
  std::filesystem::remove_all(dir);
}

// A buffer of our own big enough to be advised for huge pages gives back whole 2 MiB blocks only:
// dropping part of one splits it into 4 KiB pages, which were then several times slower to read
// (PERFORMANCE.md, "Whole huge pages given back"). A caller going forward passes what it was
// told as the next start.
TEST(InflatedFile, BuffersOnHugePagesAreGivenBackInWholeBlocks) {
  const std::string text(std::size_t{9} << 20, 'x');
  PaddedBuffer b(text);
  ASSERT_GE(b.capacity(), kHugePagesAdvisedFrom);
  b.allowDiscard();
  const auto base = reinterpret_cast<std::uintptr_t>(b.data());
  const std::size_t block = (kHugePageBytes - base % kHugePageBytes) % kHugePageBytes;
  // Less than a block, inside one: nothing given back, and the caller is told so.
  EXPECT_EQ(b.releasePages(block + 4096, block + (std::size_t{1} << 20)), block + 4096);
  EXPECT_FALSE(b.pagesDiscarded());
  EXPECT_EQ(b.data()[block + 8192], 'x');
  // Two blocks and a bit: the two go, the bit stays, and the end of the second is the answer.
  const std::size_t to = block + 2 * kHugePageBytes + 12345;
  EXPECT_EQ(b.releasePages(block, to), block + 2 * kHugePageBytes);
  EXPECT_TRUE(b.pagesDiscarded());
  EXPECT_EQ(b.data()[block], '\0');
  EXPECT_EQ(b.data()[block + 2 * kHugePageBytes - 1], '\0');
  EXPECT_EQ(b.data()[block + 2 * kHugePageBytes], 'x');
  if (block > 0) {
    EXPECT_EQ(b.data()[block - 1], 'x');
  }
}

// Pieces much smaller than a huge-page block are given back as the run of them grows: each
// piece alone covers no whole block, the pieces read so far do.
TEST(InflatedFile, SmallPiecesGiveBackTheBlocksTheyCoverTogether) {
  const std::string text = bigTrace(50'000, Layout{});
  ASSERT_GE(text.size(), 3 * kHugePageBytes + kHugePagesAdvisedFrom);
  PaddedBuffer json(text);
  json.allowDiscard();
  ReadOptions options;
  options.piece_bytes = std::size_t{128} << 10;
  options.threads = 1;
  const auto trace = parseTrace(json, "rank-0.json", options);
  EXPECT_GE(lastReadStats().pieces, 40u);
  EXPECT_TRUE(json.pagesDiscarded());
  EXPECT_EQ(describeDifference(trace, parseWhole(text)), "");
}

// An inflated trace big enough for huge pages, read as a user's file is: in pieces parsed where
// they lie on two threads (commas lent at the cuts), and parsed while it is inflated; blocks of
// 2 MiB given back behind each run. The same model as the whole document, and an error two
// thirds in (beyond blocks given back) the same as the whole document's.
TEST(InflatedFile, BigTracesOnHugePagesGiveTheWholeDocumentsModelAndErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-huge-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string text = bigTrace(50'000, Layout{});
  ASSERT_GE(text.size(), 5 * kHugePageBytes);
  const auto path = (dir / "rank-0.json.gz").string();
  std::ofstream(path, std::ios::binary) << gzipBytes(text);
  ReadOptions several;  // 80-odd pieces: two runs, after inflating
  several.piece_bytes = std::size_t{128} << 10;
  several.threads = 2;
  ReadOptions streamed;  // five pieces: one thread, beside the inflating
  streamed.piece_bytes = std::size_t{2} << 20;
  streamed.threads = 2;
  const auto whole = parseWhole(text);
  EXPECT_EQ(describeDifference(readTraceFile(path, several), whole), "");
  EXPECT_EQ(lastReadStats().threads, 2u);
  EXPECT_FALSE(lastReadStats().inflated_while_parsing);
  EXPECT_EQ(describeDifference(readTraceFile(path, streamed), whole), "");
  EXPECT_TRUE(lastReadStats().inflated_while_parsing);

  std::string broken = text;
  const auto colon = broken.find("\"ts\":", broken.size() * 2 / 3);
  ASSERT_NE(colon, std::string::npos);
  broken[colon + 4] = '}';
  std::ofstream(path, std::ios::binary | std::ios::trunc) << gzipBytes(broken);
  std::string memory_error;
  try {
    parseTraceText(broken, path, {});
  } catch (const TraceError& e) {
    memory_error = e.what();
  }
  ASSERT_NE(memory_error, "");
  for (const ReadOptions& options : {several, streamed}) {
    std::string error;
    try {
      readTraceFile(path, options);
    } catch (const TraceError& e) {
      error = e.what();
    }
    EXPECT_EQ(error, memory_error);
  }
  std::filesystem::remove_all(dir);
}

// A .json.gz whose pieces would be parsed on one thread is parsed while a second thread inflates
// it (StreamedInflate). The model, the warnings and the errors must be the whole document's, and
// whatever the stream cannot do (a corrupt or cut stream, two gzip members, no place to cut) must
// end as the usual read does.
TEST(InflatedWhileParsed, SameModelWarningsAndErrorsAsTheWholeDocument) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-streamed-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "rank-0.json.gz").string();
  const auto write = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  };
  // Pieces of 64 KiB: a document of 256 to 512 KiB is parsed in pieces on one thread (a second
  // one takes four pieces of its own).
  const auto options = [](unsigned threads) {
    ReadOptions o;
    o.piece_bytes = std::size_t{64} << 10;
    o.threads = threads;
    return o;
  };
  const auto errorOfFile = [&](unsigned threads) -> std::string {
    try {
      readTraceFile(path, options(threads));
    } catch (const TraceError& e) {
      return e.what();
    }
    return "(no error)";
  };
  for (const Layout& layout : {Layout{}, Layout{false, true, false}, Layout{false, false, false},
                               Layout{true, false, true, 7, "  "}}) {
    SCOPED_TRACE("bare " + std::to_string(layout.bare_array) + ", nested " +
                 std::to_string(layout.nested_object_lists));
    const auto text = bigTrace(1'500, layout);
    ASSERT_GT(text.size(), std::size_t{4} * (64 << 10));
    ASSERT_LT(text.size(), std::size_t{8} * (64 << 10));
    write(gzipBytes(text));
    const auto b = parseWhole(text);
    const auto a = readTraceFile(path, options(2));
    EXPECT_TRUE(lastReadStats().inflated_while_parsing);
    EXPECT_FALSE(lastReadStats().inflate_stream_fell_back);
    // Cuts inside events (the nested lists at the events' indentation) are joined with the next
    // piece, not left with everything after them to the rest of the document.
    EXPECT_GE(lastReadStats().pieces, 4u);
    EXPECT_EQ(describeDifference(a, b), "");
    EXPECT_EQ(a.warnings, b.warnings);
    (void)readTraceFile(path, options(1));
    EXPECT_FALSE(lastReadStats().inflated_while_parsing) << "one thread: inflated first";
  }
  {
    // Enough pieces for two parsing threads: inflated first, then parsed on both.
    const auto text = bigTrace(5'000, {});
    write(gzipBytes(text));
    EXPECT_EQ(describeDifference(readTraceFile(path, options(2)), parseWhole(text)), "");
    EXPECT_FALSE(lastReadStats().inflated_while_parsing);
  }
  const auto text = bigTrace(1'500, {});
  {
    // A missing colon two thirds in, found after the pieces before it were parsed.
    auto bad = text;
    const auto at = bad.find("\"dur\": 3.250", bad.size() * 2 / 3);
    ASSERT_NE(at, std::string::npos);
    bad.replace(at, 12, "\"dur\"  3.25");
    write(gzipBytes(bad));
    std::string expected;
    try {
      parseTraceText(bad, path, {});
    } catch (const TraceError& e) {
      expected = e.what();
    }
    ASSERT_NE(expected.find("invalid JSON"), std::string::npos) << expected;
    EXPECT_EQ(errorOfFile(2), expected);
    EXPECT_TRUE(lastReadStats().inflate_stream_fell_back);
  }
  {
    // Cancelled: the inflating thread is stopped, nothing waits for it.
    write(gzipBytes(text));
    std::atomic<bool> cancel{true};
    ReadOptions o = options(2);
    o.cancel = &cancel;
    EXPECT_THROW(readTraceFile(path, o), LoadCancelled);
  }
  {
    // The compressed stream damaged half-way, and cut short: the usual read's messages.
    const std::string gz = gzipBytes(text);
    std::string damaged = gz;
    for (std::size_t i = gz.size() / 2; i < gz.size() / 2 + 64; ++i)
      damaged[i] = static_cast<char>(damaged[i] ^ 0x5a);
    write(damaged);
    const auto one = errorOfFile(1);
    EXPECT_NE(one, "(no error)");
    EXPECT_EQ(errorOfFile(2), one);
    EXPECT_TRUE(lastReadStats().inflate_stream_fell_back) << "the stream was tried, and failed";
    write(gz.substr(0, gz.size() * 3 / 4));
    EXPECT_NE(errorOfFile(1), "(no error)");
    EXPECT_EQ(errorOfFile(2), errorOfFile(1));
  }
  {
    // Two gzip members (one stream to zlib, concatenated): the trailer states the second's size
    // alone (big enough to be streamed), so the stream fails at the end of the first, and the
    // usual read takes over.
    const std::size_t half = text.size() / 10;
    write(gzipBytes(text.substr(0, half)) + gzipBytes(text.substr(half)));
    EXPECT_EQ(describeDifference(readTraceFile(path, options(2)), parseWhole(text)), "");
    EXPECT_FALSE(lastReadStats().inflated_while_parsing);
    EXPECT_TRUE(lastReadStats().inflate_stream_fell_back);
  }
  {
    // On one line: no place to cut. The stream's inflated bytes are parsed whole.
    write(gzipBytes(oneLine(text)));
    EXPECT_EQ(describeDifference(readTraceFile(path, options(2)), parseWhole(text)), "");
    EXPECT_EQ(lastReadStats().pieces, 0u);
  }
  std::filesystem::remove_all(dir);
}

// A file read from disk is parsed where it lies: the bytes around each piece (the comma between
// two events and the whitespace after it) stand in for the brackets and are put back after. The
// model, the warnings and the errors must be the same as the whole document's, on one thread
// and on several, and a failed piece must leave the bytes as they were (the whole-document parse
// that then gives the message reads the same buffer).
TEST(PiecewiseParse, PiecesParsedWhereTheyLieGiveTheSameModelAndErrors) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-inplace-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "rank-0.json").string();
  auto write = [&](const std::string& text) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  };
  auto wholeOf = [&](const std::string& text) {
    ReadOptions whole;
    whole.piece_bytes = 0;
    return parseTraceText(text, path, whole);
  };
  auto errorOfFile = [&](unsigned threads, std::size_t piece_bytes) -> std::string {
    ReadOptions options;
    options.piece_bytes = piece_bytes;
    options.threads = threads;
    try {
      readTraceFile(path, options);
    } catch (const TraceError& e) {
      return e.what();
    }
    return "(no error)";
  };
  for (const Layout& layout :
       {Layout{}, Layout{false, true, false}, Layout{true, false, true, 7, "    "}}) {
    const auto text = bigTrace(15'000, layout);
    write(text);
    const auto b = wholeOf(text);
    for (const unsigned threads : {1u, 2u}) {
      SCOPED_TRACE(std::to_string(threads) + " thread(s), bare " +
                   std::to_string(layout.bare_array));
      ReadOptions options;
      options.piece_bytes = kSmallPiece / 4;
      options.threads = threads;
      const auto a = readTraceFile(path, options);
      EXPECT_GE(lastReadStats().pieces, 8u);
      EXPECT_EQ(describeDifference(a, b), "");
      EXPECT_EQ(a.warnings, b.warnings);
    }
    std::ifstream in(path, std::ios::binary);
    const std::string after((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(after == text) << "the file changed";
  }
  // A missing colon two thirds in: the pieces before it were parsed in place.
  auto bad = bigTrace(15'000, {});
  const auto at = bad.find("\"dur\": 3.250", bad.size() * 2 / 3);
  ASSERT_NE(at, std::string::npos);
  bad.replace(at, 12, "\"dur\"  3.25");
  write(bad);
  std::string expected;
  try {
    wholeOf(bad);
  } catch (const TraceError& e) {
    expected = e.what();
  }
  ASSERT_NE(expected.find("invalid JSON"), std::string::npos) << expected;
  EXPECT_EQ(errorOfFile(1, kSmallPiece / 4), expected);
  EXPECT_EQ(errorOfFile(2, kSmallPiece / 4), expected);
  std::filesystem::remove_all(dir);
}

// The reader gives the file's content hash (fileContentHash's value) when it had the file's own
// bytes whole on the way, so the digest does not read the file twice: a small file read, a
// mapped file of up to 16 MiB copied whole, a gzip file before inflating (read, or mapped from
// 1 MiB up). A big plain file parsed in pieces leaves it unset. The model is the same either way.
TEST(ContentHash, TheReaderGivesTheFilesHashWhenItHadTheBytesWhole) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-hashed-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string mid = bigTrace(10'000, {});   // about 2 MB
  const std::string big = bigTrace(100'000, {});  // about 22 MB: parsed in pieces
  struct Case {
    std::string name, bytes;
    bool hashed;
  };
  const std::vector<Case> cases = {
      {"small.json", bigTrace(1'000, {}), true},
      {"mid.json", mid, true},
      {"big.json", big, false},
      {"mid.json.gz", gzipBytes(mid), true},
      {"big.json.gz", gzipBytes(big, 1), true},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const auto path = (dir / c.name).string();
    std::ofstream(path, std::ios::binary) << c.bytes;
    if (c.name == "big.json") {
      ASSERT_GT(c.bytes.size(), std::size_t{16} << 20);
    }
    if (c.name == "big.json.gz") {
      ASSERT_GE(c.bytes.size(), std::size_t{1} << 20);  // mapped, then inflated
    }
    std::optional<std::uint64_t> hash;
    ReadOptions options;
    options.content_hash = &hash;
    const auto t = readTraceFile(path, options);
    EXPECT_EQ(hash.has_value(), c.hashed);
    if (hash) {
      EXPECT_EQ(hashHex(*hash), hashHex(fileContentHash(path)));
    }
    EXPECT_EQ(describeDifference(t, readTraceFile(path)), "");
  }
  std::filesystem::remove_all(dir);
}
