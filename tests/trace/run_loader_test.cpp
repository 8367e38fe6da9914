#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "tracer/format/file_io.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope::trace;
namespace fs = std::filesystem;

namespace {

RankTrace oneKernelRank(std::int32_t rank, TimeNs base, TimeNs start) {
  RankTrace t;
  t.rank = rank;
  t.world_size = 2;
  t.base_time_ns = base;
  t.tracks[static_cast<std::size_t>(t.trackIndex(TrackKind::Gpu, 0, 7))].push(
      {start, 100, t.names.intern("gemm"), t.names.intern("kernel"), EventKind::Kernel});
  return t;
}

fs::path freshDir(const char* name) {
  auto d = fs::temp_directory_path() /
           (std::string("ddpscope-") + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

}  // namespace

TEST(RunLoader, FolderOfRanksLoadsAsOneAlignedRun) {
  const auto dir = freshDir("run");
  // Rank 1's clock base is 5 µs later; its kernel starts at the same absolute time as rank 0's + 2
  // µs.
  writeTraceFile(oneKernelRank(0, 1'000'000'000, 10'000), (dir / "rank-0.json.gz").string());
  writeTraceFile(oneKernelRank(1, 1'000'005'000, 7'000), (dir / "rank-1.json.gz").string());
  const ddpscope::trace::Run run = loadRun({dir.string()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].rank, 0);
  EXPECT_EQ(run.ranks[1].rank, 1);
  EXPECT_EQ(run.ranks[0].base_time_ns, run.ranks[1].base_time_ns);
  // Absolute: rank0 at 1'000'010'000, rank1 at 1'000'012'000 -> 2 µs apart in model time.
  EXPECT_EQ(run.ranks[1].tracks[0].start[0] - run.ranks[0].tracks[0].start[0], 2'000);
  EXPECT_EQ(run.base_time_ns + run.ranks[0].tracks[0].start[0], 1'000'010'000);
  fs::remove_all(dir);
}

// A run of three ranks with rank 1's file cut short: refused, naming the file; with
// skip_unreadable, the other two load and the file is named with why; with no readable file,
// still refused.
TEST(RunLoader, UnreadableFilesAreLeftOutOnlyWhenAsked) {
  const auto dir = freshDir("unreadable");
  for (std::int32_t r = 0; r < 3; ++r) {
    auto t = oneKernelRank(r, 0, 1'000 * r);
    t.world_size = 3;
    writeTraceFile(t, (dir / ("rank-" + std::to_string(r) + ".json")).string());
  }
  const std::string cut = (dir / "rank-1.json").string();
  std::ifstream in(cut, std::ios::binary);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  writeFileAtomically(cut, text.substr(0, text.size() / 2));
  try {
    loadRun({dir.string()});
    FAIL() << "a cut-short file was loaded";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), cut);
  }
  RunLoadOptions skip;
  skip.skip_unreadable = true;
  const ddpscope::trace::Run run = loadRun({dir.string()}, skip);
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].rank, 0);
  EXPECT_EQ(run.ranks[1].rank, 2);
  ASSERT_EQ(run.unreadable_files.size(), 1u);
  EXPECT_EQ(run.unreadable_files[0].rfind(cut, 0), 0u) << run.unreadable_files[0];
  // Nothing readable: the first file's error, as without the option.
  for (std::int32_t r : {0, 2})
    writeFileAtomically((dir / ("rank-" + std::to_string(r) + ".json")).string(), "{\"trace");
  EXPECT_THROW(loadRun({dir.string()}, skip), TraceError);
  fs::remove_all(dir);
}

TEST(RunLoader, SeveralFilesLoadAsOneRun) {
  const auto dir = freshDir("files");
  writeTraceFile(oneKernelRank(1, 0, 0), (dir / "b.json").string());
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "a.json").string());
  const ddpscope::trace::Run run = loadRun({(dir / "b.json").string(), (dir / "a.json").string()});
  ASSERT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.ranks[0].rank, 0);
  fs::remove_all(dir);
}

TEST(RunLoader, DuplicateRanksAreAnError) {
  const auto dir = freshDir("dup");
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "a.json").string());
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "b.json").string());
  try {
    loadRun({dir.string()});
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 is also in"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

// Rank 0 of a 5 MiB run and rank 1 of a 100 MiB run of the same world size: refused, naming the
// setting; a per-rank entry (a tracer's record count) and a setting one file lacks are not.
TEST(RunLoader, FilesOfDifferentRunConfigurationsAreNotOneRun) {
  const auto dir = freshDir("configs");
  RankTrace a = oneKernelRank(0, 0, 0), b = oneKernelRank(1, 0, 0);
  for (RankTrace* t : {&a, &b}) {
    t->ddpscope.present = true;
    t->ddpscope.source = "sim";
    t->ddpscope.config = {{"backend", "\"sim\""}, {"model", "\"mlp\""}, {"bucket_mb", "5"}};
  }
  a.ddpscope.config.emplace_back("nvtx_payloads", "12");
  b.ddpscope.config.emplace_back("nvtx_payloads", "40");
  writeTraceFile(a, (dir / "rank-0.json").string());
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_EQ(loadRun({dir.string()}).ranks.size(), 2u);
  b.ddpscope.config[2].second = "100";
  writeTraceFile(b, (dir / "rank-1.json").string());
  try {
    loadRun({dir.string()});
    FAIL() << "expected an error";
  } catch (const TraceError& e) {
    EXPECT_EQ(e.file(), (dir / "rank-1.json").string());
    EXPECT_NE(std::string(e.what()).find("its bucket_mb is 100, not 5 as in"), std::string::npos)
        << e.what();
  }
  // The same number written another way is the same setting; a string is compared as text.
  for (const char* same : {"5.0", "5e0", "5.000"}) {
    b.ddpscope.config[2].second = same;
    writeTraceFile(b, (dir / "rank-1.json").string());
    EXPECT_EQ(loadRun({dir.string()}).ranks.size(), 2u) << same;
  }
  b.ddpscope.config[2].second = "\"5\"";
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_THROW(loadRun({dir.string()}), TraceError);
  b.ddpscope.config[2].second = "5.5";
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_THROW(loadRun({dir.string()}), TraceError);
  // A float32 setting written in full is the one written short (0.05f is 0.05000000074505806);
  // numbers a float32 tells apart are not.
  a.ddpscope.config.emplace_back("lr", "0.05");
  b.ddpscope.config.emplace_back("lr", "0.05000000074505806");
  b.ddpscope.config[2].second = "5";
  writeTraceFile(a, (dir / "rank-0.json").string());
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_EQ(loadRun({dir.string()}).ranks.size(), 2u);
  for (const char* other : {"0.0500001", "0.04999999701976776", "0.05000000447034836",
                            "0.05000000074505805", "0.050000001"}) {
    b.ddpscope.config.back().second = other;
    writeTraceFile(b, (dir / "rank-1.json").string());
    EXPECT_THROW(loadRun({dir.string()}), TraceError) << other;
  }
  // 0.5 is a float32 value, and 0.50000001 rounds to it, but is not its short form.
  a.ddpscope.config.back().second = "0.5";
  b.ddpscope.config.back().second = "0.50000001";
  writeTraceFile(a, (dir / "rank-0.json").string());
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_THROW(loadRun({dir.string()}), TraceError);
  a.ddpscope.config.pop_back();
  b.ddpscope.config.pop_back();
  writeTraceFile(a, (dir / "rank-0.json").string());
  // Whole numbers past a double's precision are compared digit by digit.
  b.ddpscope.config[2].second = "00005";
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_EQ(loadRun({dir.string()}).ranks.size(), 2u);
  a.ddpscope.config.emplace_back("seed", "1733440000123456789");
  b.ddpscope.config.emplace_back("seed", "1733440000123456790");
  b.ddpscope.config[2].second = "5";
  writeTraceFile(a, (dir / "rank-0.json").string());
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_THROW(loadRun({dir.string()}), TraceError);
  b.ddpscope.config.back().second = "1733440000123456789";
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_EQ(loadRun({dir.string()}).ranks.size(), 2u);
  a.ddpscope.config.pop_back();
  b.ddpscope.config.pop_back();
  writeTraceFile(a, (dir / "rank-0.json").string());
  b.ddpscope.config.erase(b.ddpscope.config.begin() + 2);  // no bucket_mb: nothing to compare
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_EQ(loadRun({dir.string()}).ranks.size(), 2u);
  b.ddpscope.source = "cuda";
  writeTraceFile(b, (dir / "rank-1.json").string());
  EXPECT_THROW(loadRun({dir.string()}), TraceError);
  fs::remove_all(dir);
}

TEST(RunLoader, FilesOfDifferentWorldSizesAreNotOneRun) {
  const auto dir = freshDir("worlds");
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "a.json").string());
  RankTrace other = oneKernelRank(1, 0, 0);
  other.world_size = 8;
  writeTraceFile(other, (dir / "b.json").string());
  // What loading both says: b.json refused, and why.
  const auto refusal = [&]() -> std::string {
    try {
      loadRun({(dir / "a.json").string(), (dir / "b.json").string()});
    } catch (const TraceError& e) {
      EXPECT_EQ(e.file(), (dir / "b.json").string());
      return e.what();
    }
    return "(no error)";
  };
  EXPECT_NE(refusal().find("its world size is 8, not 2 as in " + (dir / "a.json").string() +
                           ": the files are not from one run"),
            std::string::npos)
      << refusal();
  // A file that says no world size is still not of a run whose declared world its rank is
  // beyond.
  other.rank = 2;
  other.world_size = 1;
  other.world_size_declared = false;
  writeTraceFile(other, (dir / "b.json").string());
  EXPECT_NE(refusal().find("its rank 2 is outside the world of 2 ranks that " +
                           (dir / "a.json").string() + " declares"),
            std::string::npos)
      << refusal();
  other.rank = 1;
  // A file that does not say its world size (read as 1) goes with any: a tracer launched with
  // RANK but no WORLD_SIZE leaves it out.
  other.world_size = 1;
  other.world_size_declared = false;
  writeTraceFile(other, (dir / "b.json").string());
  {
    const auto both = loadRun({(dir / "a.json").string(), (dir / "b.json").string()});
    ASSERT_EQ(both.ranks.size(), 2u);
    EXPECT_FALSE(both.ranks[1].world_size_declared);  // it round-trips as unknown
    EXPECT_TRUE(both.ranks[0].world_size_declared);
  }
  other.world_size_declared = true;
  // Two files of one world load.
  other.world_size = 2;
  writeTraceFile(other, (dir / "b.json").string());
  EXPECT_EQ(loadRun({(dir / "a.json").string(), (dir / "b.json").string()}).ranks.size(), 2u);
  fs::remove_all(dir);
}

TEST(RunLoader, OtherTracesBesideRankFilesAreListedAsSkipped) {
  const auto dir = freshDir("skipped");
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "rank-0.json.gz").string());
  writeTraceFile(oneKernelRank(1, 0, 0), (dir / "rank-1.json.gz").string());
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "resnet_rank0.json").string());
  writeFileAtomically((dir / "notes.txt").string(), "not a trace");
  const auto run = loadRun({dir.string()});
  EXPECT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.skipped_files, std::vector<std::string>{(dir / "resnet_rank0.json").string()});
  // A folder of rank files only skips nothing.
  fs::remove((dir / "resnet_rank0.json"));
  EXPECT_TRUE(loadRun({dir.string()}).skipped_files.empty());
  fs::remove_all(dir);
}

// A digest kept beside the traces it was made of (plain or gzip, any name) is not a trace of the
// folder: not loaded, not listed as skipped. A folder whose traces are in per-node subfolders
// says which subfolders to give.
TEST(RunLoader, ADigestBesideTheTracesIsPassedOverAndSubfoldersAreNamed) {
  const auto dir = freshDir("digest-beside");
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "rank-0.json.gz").string());
  writeTraceFile(oneKernelRank(1, 0, 0), (dir / "rank-1.json.gz").string());
  const std::string digest = "{\"ddpscope_digest\": 1, \"run\": {}}";
  writeFileAtomically((dir / "run.digest.json.gz").string(), gzipBytes(digest));
  writeFileAtomically((dir / "job.json").string(), "  " + digest);
  EXPECT_TRUE(startsAsRunDigest((dir / "run.digest.json.gz").string()));
  EXPECT_TRUE(startsAsRunDigest((dir / "job.json").string()));
  EXPECT_FALSE(startsAsRunDigest((dir / "rank-0.json.gz").string()));
  const auto run = loadRun({dir.string()});
  EXPECT_EQ(run.ranks.size(), 2u);
  EXPECT_TRUE(run.skipped_files.empty());
  // The same ranks moved into node folders: the top folder names them.
  fs::create_directories(dir / "node0");
  fs::create_directories(dir / "node1");
  fs::rename(dir / "rank-0.json.gz", dir / "node0" / "rank-0.json.gz");
  fs::rename(dir / "rank-1.json.gz", dir / "node1" / "rank-1.json.gz");
  try {
    loadRun({dir.string()});
    ADD_FAILURE() << "a folder without traces loaded";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("the folder contains no trace files"), std::string::npos) << what;
    EXPECT_NE(what.find(std::string("; its subfolders node0, node1 hold some: give them together "
                                    "as one run (e.g. '") +
                        (dir / "node0").string() + "' '" + (dir / "node1").string() + "')"),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(loadRun({(dir / "node0").string(), (dir / "node1").string()}).ranks.size(), 2u);
  // A file given twice, by name and through its folder: said as such (not as two ranks 0).
  const auto r0 = (dir / "node0" / "rank-0.json.gz").string();
  try {
    loadRun({r0, (dir / "node0").string(), (dir / "node1").string()});
    ADD_FAILURE() << "a file given twice loaded";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("this file was given twice"), std::string::npos)
        << e.what();
  }
  fs::remove_all(dir);
}

// A sweep's folder holds runs of their own, each with a rank 0: the hint names one to give, not
// all of them together (which would fail as two ranks 0).
TEST(RunLoader, SubfoldersThatAreRunsOfTheirOwnAreNamedOneAtATime) {
  const auto dir = freshDir("sweep-parent");
  for (const char* sub : {"bucket-1", "bucket-25"}) {
    fs::create_directories(dir / sub);
    writeTraceFile(oneKernelRank(0, 0, 0), (dir / sub / "rank-0.json.gz").string());
    writeTraceFile(oneKernelRank(1, 0, 0), (dir / sub / "rank-1.json.gz").string());
  }
  try {
    loadRun({dir.string()});
    ADD_FAILURE() << "a folder without traces loaded";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("; its subfolders bucket-1, bucket-25 hold some, each with a rank 0 (runs "
                        "of their own): give one of them (e.g. '" +
                        (dir / "bucket-1").string() + "')"),
              std::string::npos)
        << what;
    EXPECT_EQ(what.find("together"), std::string::npos) << what;
  }
  EXPECT_EQ(loadRun({(dir / "bucket-25").string()}).ranks.size(), 2u);
  fs::remove_all(dir);
}

TEST(RunLoader, EmptyFolderAndBadFileAreNamed) {
  const auto dir = freshDir("empty");
  EXPECT_THROW(loadRun({dir.string()}), TraceError);
  writeFileAtomically((dir / "rank-0.json").string(), "{\"traceEvents\": [");
  try {
    loadRun({dir.string()});
    FAIL();
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("rank-0.json"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

TEST(RunLoader, CancelStopsLoading) {
  std::atomic<bool> cancel{true};
  RunLoadOptions o;
  o.cancel = &cancel;
  EXPECT_THROW(loadRun({std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz"}, o),
               LoadCancelled);
}

TEST(RunLoader, PathsWithSpacesQuotesAndNonAsciiWork) {
  const auto dir = freshDir("odd") / "run \"quoted\" ü ünïcødé 'x'";
  fs::create_directories(dir);
  writeTraceFile(oneKernelRank(0, 0, 0), (dir / "rank-0.json.gz").string());
  writeTraceFile(oneKernelRank(1, 0, 0), (dir / "rank-1.json.gz").string());
  const ddpscope::trace::Run run = loadRun({dir.string()});
  EXPECT_EQ(run.ranks.size(), 2u);
  EXPECT_EQ(run.name, dir.filename().string());
  fs::remove_all(dir.parent_path());
}
