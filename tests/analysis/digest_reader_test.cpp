// Reading a run digest back (app/analysis/digest_reader.h): the numbers the run's analysis gives,
// the grid and late rank the app's Digest view shows, and clear errors for bad files.
#include "app/analysis/digest_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "agent/run_agent.h"
#include "app/analysis/digest.h"
#include "app/analysis/report_json.h"
#include "tracer/format/file_io.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_writer.h"

namespace fs = std::filesystem;
using namespace ddpscope;
using analysis::DigestFigure;

namespace {

// The simulated run of docs/DIGEST.md's example: eight ranks, rank 3 half again as slow.
fs::path writeStragglerRun(const std::string& name) {
  agent::AgentOptions o;
  o.world_size = 8;
  o.steps = 4;
  o.model.layers = 4;
  o.cost.straggler_rank = 3;
  o.cost.straggler_slowdown = 1.5;
  o.out_dir = "unused";
  const auto result = agent::runSimulation(o);
  const fs::path dir = fs::temp_directory_path() / ("ddpscope_digest_reader_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& r : result.ranks)
    trace::writeTraceFile(r, (dir / ("rank-" + std::to_string(r.rank) + ".json.gz")).string());
  return dir;
}

// A digest of two ranks written by hand; `steps0`/`steps1` are the ranks' step lists (and
// `steps2`, when given, a third rank's).
std::string handDigest(const std::string& steps0, const std::string& steps1,
                       const std::string& version = "1", const std::string& steps2 = "") {
  const std::string rank_tail =
      R"(, "world_size": 2, "source": "simulated", "incomplete": false, "comm_us": 10.000,
      "compute_us": 20.000, "overlap_us": 5.000, "overlap_pct": 50.0000,
      "exposed_comm_us": 5.000, "span_us": 40.000, "idle_us": 10.000, "idle_pct": 25.0000,
      "compute_pct": 50.0000, "non_compute_pct": 50.0000, "exposed_wait_us": null,
      "exposed_transfer_us": null, "steps": )";
  return R"({"ddpscope_digest": )" + version +
         R"(, "run": {"ranks": 2, "world_size": 2, "missing_ranks": [], "steps_used": [2, 3],
      "step_rule": "steps 2–3", "whole_trace": false, "step_us": 1500.000, "overlap_pct": 40.0000,
      "exposed_comm_per_step_us": 250.500, "exposed_comm_us": null, "dp_efficiency": 0.800000,
      "gpu_idle_pct": 12.5000, "allreduces_per_step": 3.000, "buckets_per_step": 3,
      "mean_bucket_wait_us": 7.000},
      "rules": "built-in", "matched_by": "sequence number", "matched_collectives": 6,
      "warnings": ["a warning"], "ranks": [
      {"rank": 0, "file": "r0.json", "file_bytes": 12, "fnv1a64": "00000000000000ff")" +
         rank_tail + steps0 + R"(},
      {"rank": 1)" +
         rank_tail + steps1 + "}" +
         (steps2.empty() ? "" : R"(, {"rank": 2)" + rank_tail + steps2 + "}") + "]}";
}

std::string step(int n, const std::string& dur, const std::string& exposed,
                 const std::string& wait) {
  return "{\"step\": " + std::to_string(n) + ", \"dur_us\": " + dur +
         ", \"overlap_pct\": null, \"exposed_comm_us\": " + exposed +
         ", \"dp_efficiency\": null, \"matched_wait_us\": " + wait +
         ", \"matched_transfer_us\": null}";
}

std::string errorOf(const std::string& json) {
  try {
    analysis::parseDigest(json, "d.json");
  } catch (const trace::TraceError& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace

TEST(DigestReader, RoundTripGivesTheRunsNumbers) {
  const fs::path dir = writeStragglerRun("roundtrip");
  // A run id on every rank (beyond a 64-bit number, as some launchers make them): the run's
  // own, so not among the settings a digest keeps.
  std::vector<fs::path> files;  // listed first: rewriting them adds and renames entries
  for (const auto& f : fs::directory_iterator(dir))
    files.push_back(f.path());
  ASSERT_EQ(files.size(), 8u);
  for (const auto& f : files) {
    trace::RankTrace t = trace::readTraceFile(f.string());
    t.ddpscope.config.emplace_back("run_id", "123456789012345678901234567890");
    trace::writeTraceFile(t, f.string());
  }
  const std::string json = analysis::digestRun({dir.string()}, {});
  const analysis::Digest d = analysis::parseDigest(json, "run.digest.json");
  const auto run = trace::loadRun({dir.string()});
  const auto report = analysis::analyzeRun(run);
  const auto summary = analysis::summarizeRun(report);

  EXPECT_EQ(d.version, 3);
  // The producer's configuration, as the traces give it: the settings a sweep compares (the
  // straggler among them), the model, and the configuration line.
  ASSERT_TRUE(d.producer);
  // Numbers compare by value (a digest's 0.1 is the trace's 0.10000000000000001).
  const auto settings = analysis::sweepSettings(d.producer->block);
  const auto from_traces = analysis::sweepSettings(run);
  ASSERT_EQ(settings.size(), from_traces.size());
  for (std::size_t i = 0; i < settings.size(); ++i) {
    EXPECT_EQ(settings[i].first, from_traces[i].first);
    EXPECT_TRUE(trace::sameSettingValue(settings[i].second, from_traces[i].second))
        << settings[i].first << ": " << settings[i].second << " vs " << from_traces[i].second;
  }
  EXPECT_NE(std::find(settings.begin(), settings.end(),
                      std::pair<std::string, std::string>("sim_straggler_rank", "3")),
            settings.end());
  EXPECT_EQ(analysis::digestIdentity(d).model, analysis::runIdentity(run).model);
  EXPECT_EQ(analysis::digestIdentity(d).model, std::optional<std::string>("\"transformer\""));
  EXPECT_EQ(analysis::digestConfigurationText(d),
            "from its digest · " + analysis::runConfigurationText(run));
  ASSERT_EQ(run.ranks.front().ddpscope.configValue("run_id"), "123456789012345678901234567890");
  EXPECT_EQ(d.producer->block.configValue("run_id"), "");  // the run's own, not a setting
  EXPECT_EQ(json.find("123456789012345678901234567890"), std::string::npos);
  EXPECT_NE(json.find("\"xxh3_64\": \""), std::string::npos);
  EXPECT_EQ(json.find("fnv1a64"), std::string::npos);
  EXPECT_EQ(d.matched_collectives, static_cast<std::int64_t>(report.matched.size()));
  EXPECT_EQ(d.matched_by, report.matched_by);
  EXPECT_EQ(d.run.ranks, 8);
  EXPECT_EQ(d.run.world_size, 8);
  EXPECT_EQ(d.run.selection.used, summary.selection.used);
  EXPECT_EQ(d.run.selection.rule, summary.selection.rule);
  EXPECT_EQ(d.run.step_ns, summary.step_ns);
  EXPECT_EQ(d.run.exposed_ns_per_step, summary.exposed_ns_per_step);
  ASSERT_TRUE(d.run.overlap_pct && summary.overlap_pct);
  EXPECT_NEAR(*d.run.overlap_pct, *summary.overlap_pct, 5e-5);  // written with 4 decimals
  ASSERT_TRUE(d.run.dp_efficiency && summary.dp_efficiency);
  EXPECT_NEAR(*d.run.dp_efficiency, *summary.dp_efficiency, 5e-7);
  // The recorded settings, as the summary states them (absent from digests written before).
  EXPECT_FALSE(summary.bucket_setting.empty());
  EXPECT_EQ(d.run.bucket_setting, summary.bucket_setting);
  EXPECT_EQ(d.run.overlap_setting, summary.overlap_setting);
  EXPECT_EQ(analysis::parseDigest(std::string(json).replace(
                                      json.find("\"bucket_setting\""),
                                      std::string("\"bucket_setting\"").size(), "\"another_key\""),
                                  "old.digest.json")
                .run.bucket_setting,
            "");
  // The headline reads the same from the digest as from the run.
  EXPECT_EQ(analysis::runFigureText(d.run).step, analysis::runFigureText(summary).step);
  EXPECT_EQ(analysis::runFigureText(d.run).exposed, analysis::runFigureText(summary).exposed);

  ASSERT_EQ(d.ranks.size(), 8u);
  for (std::size_t i = 0; i < 8; ++i) {
    const auto& a = d.ranks[i];
    const auto& b = report.ranks[i];
    EXPECT_EQ(a.rank, b.rank);
    ASSERT_TRUE(a.file);
    EXPECT_EQ(a.file->name, "rank-" + std::to_string(b.rank) + ".json.gz");
    EXPECT_EQ(a.file->bytes, fs::file_size(dir / a.file->name));
    EXPECT_EQ(a.file->hash, trace::fileContentHash((dir / a.file->name).string()));
    EXPECT_EQ(a.file->hash_kind, analysis::FileHashKind::Xxh3);
    EXPECT_EQ(a.whole.comm_ns, b.whole.comm_ns);
    EXPECT_EQ(a.whole.exposed_ns, b.whole.exposed_ns);
    EXPECT_EQ(a.whole.span_ns, b.whole.span_ns);
    EXPECT_EQ(a.exposed_wait_ns, b.exposed_wait_ns);
    EXPECT_EQ(a.exposed_transfer_ns, b.exposed_transfer_ns);
    ASSERT_EQ(a.steps.size(), b.steps.size());
    for (std::size_t s = 0; s < a.steps.size(); ++s) {
      EXPECT_EQ(a.steps[s].step, b.steps[s].step);
      EXPECT_EQ(a.steps[s].dur_ns, b.steps[s].dur_ns);
      EXPECT_EQ(a.steps[s].exposed_ns, b.steps[s].metrics.exposed_ns);
      EXPECT_EQ(a.steps[s].matched_wait_ns, b.steps[s].matched_wait_ns);
      EXPECT_EQ(a.steps[s].matched_transfer_ns, b.steps[s].matched_transfer_ns);
    }
  }

  // The grid holds the same numbers, rank by rank and step by step.
  const auto grid = analysis::digestGrid(d, DigestFigure::StepTime);
  ASSERT_EQ(grid.ranks.size(), 8u);
  ASSERT_EQ(grid.steps.size(), report.ranks[0].steps.size());
  EXPECT_EQ(grid.at(5, 1), report.ranks[5].steps[1].dur_ns);

  // The simulated straggler is the late rank, as the run's traces name it: the same rank, counts
  // and exposed split (the hidden split is not kept in a digest).
  const auto late = analysis::digestStragglers(d);
  const auto traces_late = analysis::summarizeStragglers(report);
  EXPECT_TRUE(late.late_known);
  ASSERT_TRUE(late.late_rank);
  EXPECT_EQ(*late.late_rank, 3);
  EXPECT_EQ(late.late_rank, traces_late.late_rank);
  EXPECT_EQ(late.late_count, traces_late.late_count);
  EXPECT_EQ(late.skewed, traces_late.skewed);
  EXPECT_GT(late.skewed, 0);
  EXPECT_EQ(late.exposed_wait_ns, traces_late.exposed_wait_ns);
  EXPECT_EQ(late.exposed_transfer_ns, traces_late.exposed_transfer_ns);
  ASSERT_TRUE(late.wait_pct && traces_late.wait_pct);
  EXPECT_DOUBLE_EQ(*late.wait_pct, *traces_late.wait_pct);
  EXPECT_FALSE(late.hidden_wait_ns);

  // Its trace files, next to the digest.
  const std::string digest_path = (dir / "run.digest.json.gz").string();
  trace::writeFileAtomically(digest_path, trace::gzipBytes(json));
  EXPECT_TRUE(analysis::isDigestFile(digest_path));
  EXPECT_FALSE(analysis::isDigestFile((dir / "rank-0.json.gz").string()));
  const analysis::Digest from_file = analysis::readDigest(digest_path);
  EXPECT_EQ(from_file.ranks.size(), 8u);
  EXPECT_EQ(analysis::digestRankFiles(from_file, {dir.string()}, {5, 3}),
            (std::vector<std::string>{(dir / "rank-3.json.gz").string(),
                                      (dir / "rank-5.json.gz").string()}));
}

TEST(DigestReader, GridHasEveryStepAndEmptyCells) {
  const auto d =
      analysis::parseDigest(handDigest("[" + step(1, "100.000", "1.000", "null") + ", " +
                                           step(2, "200.000", "2.000", "0.500") + "]",
                                       "[" + step(2, "300.000", "3.000", "4.000") + ", " +
                                           step(3, "50.250", "0.000", "0.000") + "]"),
                            "d.json");
  const auto g = analysis::digestGrid(d, DigestFigure::StepTime);
  EXPECT_EQ(g.steps, (std::vector<std::int32_t>{1, 2, 3}));
  EXPECT_EQ(g.ranks, (std::vector<std::int32_t>{0, 1}));
  EXPECT_EQ(g.at(0, 0), 100'000);
  EXPECT_EQ(g.at(0, 2), std::nullopt);  // rank 0 has no step 3
  EXPECT_EQ(g.at(1, 0), std::nullopt);
  EXPECT_EQ(g.at(1, 2), 50'250);
  EXPECT_EQ(g.min_ns, 50'250);
  EXPECT_EQ(g.max_ns, 300'000);
  const auto w = analysis::digestGrid(d, DigestFigure::MatchedWait);
  EXPECT_EQ(w.at(0, 0), std::nullopt);  // null in the digest
  EXPECT_EQ(w.at(0, 1), 500);
  EXPECT_EQ(w.min_ns, 0);
  EXPECT_EQ(w.max_ns, 4'000);
  EXPECT_EQ(g.no_trace, (std::vector<char>{0, 0}));  // every rank of the world has a trace
  // The colour scale spans the steps the summary covers (2 and 3 here): a step left out (warm-up,
  // not on every rank, cut short) is drawn, at the scale's end, without stretching it.
  const auto long_first =
      analysis::parseDigest(handDigest("[" + step(1, "900.000", "1.000", "null") + ", " +
                                           step(2, "200.000", "2.000", "0.500") + "]",
                                       "[" + step(2, "300.000", "3.000", "4.000") + ", " +
                                           step(3, "50.250", "0.000", "0.000") + "]"),
                            "d.json");
  const auto scaled = analysis::digestGrid(long_first, DigestFigure::StepTime);
  EXPECT_EQ(scaled.at(0, 0), 900'000);
  EXPECT_EQ(scaled.max_ns, 300'000);
  EXPECT_EQ(scaled.min_ns, 50'250);
  // Step 1 is outside the selection: drawn hatched, its cells kept.
  EXPECT_EQ(scaled.left_out, (std::vector<char>{1, 0, 0}));
  EXPECT_EQ(g.left_out, (std::vector<char>{1, 0, 0}));
  // The headline figures as written.
  EXPECT_EQ(d.run.step_ns, 1'500'000);
  EXPECT_EQ(d.run.exposed_ns_per_step, 250'500);
  EXPECT_EQ(d.run.buckets_per_step, 3);
  EXPECT_EQ(d.warnings, std::vector<std::string>{"a warning"});
  ASSERT_TRUE(d.ranks[0].file);
  EXPECT_EQ(d.ranks[0].file->hash, 0xffu);
  EXPECT_EQ(d.ranks[0].file->hash_kind, analysis::FileHashKind::Fnv1a);  // a version-1 digest
  EXPECT_FALSE(d.ranks[1].file);
  EXPECT_THROW(analysis::digestRankFiles(d, {"/x"}, {1}), std::runtime_error);  // not named
  EXPECT_THROW(analysis::digestRankFiles(d, {"/x"}, {7}), std::runtime_error);  // no rank 7
  EXPECT_THROW(analysis::digestRankFiles(d, {"/x"}, {0}), std::runtime_error);  // not there
}

// A run kept as one folder per node: the ranks' files are found in the folders given and their
// subfolders, told apart by the digest's size and, when sizes agree, its hash.
TEST(DigestReader, RankFilesFromSeveralFolders) {
  const fs::path root =
      fs::temp_directory_path() / ("ddpscope-digest-folders-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto write = [&](const std::string& rel, const std::string& bytes) {
    fs::create_directories((root / rel).parent_path());
    std::ofstream((root / rel).string(), std::ios::binary) << bytes;
    return (root / rel).string();
  };
  const auto a0 = write("nodeA/rank-0.json", "aaaa");
  write("nodeB/rank-0.json", "cc");  // the same name, another size: not rank 0's
  const auto b1 = write("nodeB/rank-1.json", "bbbbbb");
  write("nodeC/rank-2.json", "xyz");  // the same name and size: only the hash tells
  const auto d2 = write("nodeD/rank-2.json", "xyw");
  write("nodeE/rank-4.json", "four");  // rank 4's file has changed (the digest says 9 bytes)
  write("nodeF/rank-5.json", "555");   // rank 5's content is in neither copy
  write("nodeG/rank-5.json", "556");
  analysis::Digest d;
  auto rank = [&](std::int32_t r, const std::string& name, const std::string& bytes) {
    analysis::DigestRank dr;
    dr.rank = r;
    // The size and XXH3 hash of the bytes, as the digest records them (the hash from a copy
    // written elsewhere, so the files above are not what is hashed).
    const auto elsewhere = write("hashes/" + std::to_string(r), bytes);
    dr.file = analysis::DigestFile{name, bytes.size(), analysis::fileHash(elsewhere)};
    d.ranks.push_back(dr);
  };
  rank(0, "rank-0.json", "aaaa");
  rank(1, "rank-1.json", "bbbbbb");
  rank(2, "rank-2.json", "xyw");
  rank(3, "rank-3.json", "333");
  rank(4, "rank-4.json", "123456789");
  rank(5, "rank-5.json", "557");
  // A version-1 digest named its files by FNV-1a: 0xbff4b71980270a37 is that of "xyw"
  // (computed apart from ddpscope), and it still tells nodeD's copy from nodeC's.
  analysis::Digest v1 = d;
  v1.ranks[2].file->hash = 0xbff4b71980270a37u;
  v1.ranks[2].file->hash_kind = analysis::FileHashKind::Fnv1a;
  EXPECT_EQ(analysis::digestRankFiles(v1, {root.string()}, {2}), std::vector<std::string>{d2});
  // Found in subfolders of the folder given, in rank order, each once.
  EXPECT_EQ(analysis::digestRankFiles(d, {root.string()}, {2, 1, 0}),
            (std::vector<std::string>{a0, b1, d2}));
  // Or in the node folders given one by one.
  EXPECT_EQ(
      analysis::digestRankFiles(d, {(root / "nodeB").string(), (root / "nodeA").string()}, {0, 1}),
      (std::vector<std::string>{a0, b1}));
  auto error = [&](std::int32_t r) {
    try {
      analysis::digestRankFiles(d, {root.string()}, {r});
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  EXPECT_EQ(error(3),
            "the trace file rank-3.json of rank 3 is in none of " + root.string() +
                " (nor their subfolders): add the folder that holds it (Trace folders… in the "
                "Digest tab)");
  EXPECT_EQ(error(4), "the trace file rank-4.json of rank 4 (" +
                          (root / "nodeE/rank-4.json").string() +
                          ") has changed since the digest was made (4 bytes; the digest says 9): "
                          "make the digest again");
  EXPECT_EQ(error(5),
            "the trace file rank-5.json of rank 5: none of the 2 files of its name and "
            "size (" +
                (root / "nodeF/rank-5.json").string() + ", " +
                (root / "nodeG/rank-5.json").string() +
                ") has the content the digest was made of: make the digest again");
  fs::remove_all(root);
}

TEST(DigestReader, LateRankAsRecordedOrNotKnown) {
  const std::string steps = "[" + step(2, "1.000", "1.000", "1.000") + "]";
  const std::string json = handDigest(steps, steps);
  const auto with = [&](const std::string& fields) {
    std::string j = json;
    const std::string at = R"("matched_collectives": 6,)";
    return j.replace(j.find(at), at.size(), at + fields);
  };
  // Written before the format kept it: not known, so no rank is named and none is denied.
  const auto before = analysis::digestStragglers(analysis::parseDigest(json, "d.json"));
  EXPECT_FALSE(before.late_known);
  EXPECT_FALSE(before.late_rank);
  EXPECT_EQ(before.skewed, 0);
  // Recorded: as written.
  const auto named = analysis::digestStragglers(analysis::parseDigest(
      with(R"( "late_rank": 1, "late_rank_last_in": 5, "collectives_with_skew": 6,)"), "d.json"));
  EXPECT_TRUE(named.late_known);
  EXPECT_EQ(named.late_rank, 1);
  EXPECT_EQ(named.late_count, 5);
  EXPECT_EQ(named.skewed, 6);
  const auto none = analysis::digestStragglers(analysis::parseDigest(
      with(R"( "late_rank": null, "late_rank_last_in": 0, "collectives_with_skew": 6,)"),
      "d.json"));
  EXPECT_TRUE(none.late_known);
  EXPECT_FALSE(none.late_rank);
  EXPECT_EQ(none.skewed, 6);
  // Fields that contradict each other are refused, naming them.
  for (const char* bad :
       {R"( "late_rank": 1, "late_rank_last_in": 7, "collectives_with_skew": 6,)",
        R"( "late_rank": null, "late_rank_last_in": 4, "collectives_with_skew": 6,)",
        R"( "late_rank": 1, "late_rank_last_in": 0, "collectives_with_skew": 6,)",
        R"( "late_rank": 1, "late_rank_last_in": 3, "collectives_with_skew": 6,)",
        R"( "late_rank": 1, "late_rank_last_in": 7, "collectives_with_skew": 7,)"})
    EXPECT_NE(errorOf(with(bad)).find("\"collectives_with_skew\" disagree"), std::string::npos)
        << bad;
}

// Four of eight ranks, the straggler (rank 3) not among them: the summary's text says the skews
// are those of the ranks with a trace, and which have none, rather than let "max 0 ns" read as
// "no late rank".
TEST(DigestReader, SkewsOfTheRanksLoadedSayWhichAreMissing) {
  const fs::path dir = writeStragglerRun("partial");
  std::vector<std::string> files;
  for (int r : {0, 1, 2, 4})
    files.push_back((dir / ("rank-" + std::to_string(r) + ".json.gz")).string());
  const std::string text = analysis::reportToText(analysis::analyzeRun(trace::loadRun(files)));
  EXPECT_NE(text.find("  the skews and the late rank are among the ranks with a trace; ranks 3, "
                      "5-7 have no trace, and a later rank may be among them\n"),
            std::string::npos)
      << text;
  const std::string whole =
      analysis::reportToText(analysis::analyzeRun(trace::loadRun({dir.string()})));
  EXPECT_EQ(whole.find("the skews and the late rank are among"), std::string::npos);
  fs::remove_all(dir);
}

TEST(DigestReader, ExposedSplitSumsTheRanksThatHaveIt) {
  // Rank 0: 3 µs waiting, 1 µs transfer; rank 1 without the split (its collectives unmatched).
  const std::string steps = "[" + step(2, "1.000", "1.000", "null") + "]";
  std::string json = handDigest(steps, steps);
  const std::string null_split = R"("exposed_wait_us": null,
      "exposed_transfer_us": null)";
  json.replace(json.find(null_split), null_split.size(),
               R"("exposed_wait_us": 3.000, "exposed_transfer_us": 1.000)");
  const auto s = analysis::digestStragglers(analysis::parseDigest(json, "d.json"));
  EXPECT_EQ(s.exposed_wait_ns, 3'000);
  EXPECT_EQ(s.exposed_transfer_ns, 1'000);
  ASSERT_TRUE(s.wait_pct && s.transfer_pct);
  EXPECT_DOUBLE_EQ(*s.wait_pct, 75.0);
  EXPECT_DOUBLE_EQ(*s.transfer_pct, 25.0);
}

// Cancelling a digest: the flag is looked at before each file, so one set after the first file
// (one thread) stops it there: one file read of eight, and DigestCancelled thrown.
TEST(DigestReader, ACancelledDigestStopsBeforeItsNextFile) {
  const fs::path dir = writeStragglerRun("cancel");
  const auto files = trace::expandTracePaths({dir.string()});
  ASSERT_EQ(files.size(), 8u);
  std::atomic<bool> cancel{false};
  std::size_t read = 0;
  analysis::DigestOptions options;
  options.threads = 1;
  options.cancel = &cancel;
  options.progress = [&](std::size_t done, std::size_t) {
    read = done;
    cancel = true;
  };
  EXPECT_THROW(analysis::digestFiles(files, options), analysis::DigestCancelled);
  EXPECT_EQ(read, 1u);
  // Set before it starts: no file is read.
  read = 0;
  EXPECT_THROW(analysis::digestRun({dir.string()}, options), analysis::DigestCancelled);
  EXPECT_EQ(read, 0u);
  // Not set: every file.
  cancel = false;
  options.progress = [&](std::size_t done, std::size_t) { read = done; };
  EXPECT_EQ(analysis::digestFiles(files, options).size(), 8u);
  EXPECT_EQ(read, 8u);
  fs::remove_all(dir);
}

TEST(DigestReader, BadInputNamesWhatIsWrong) {
  const std::string ok_steps = "[" + step(1, "1.000", "1.000", "null") + "]";
  EXPECT_NO_THROW(analysis::parseDigest(handDigest(ok_steps, ok_steps), "d.json"));
  EXPECT_NE(errorOf("{\"ddpscope_digest\": 1, ").find("d.json"), std::string::npos);
  // Cut short: where it ends, and the question a user should ask; a stray byte: where it is.
  const std::string cut = errorOf("{\"ddpscope_digest\": 1, \"run\": {\"ranks\": [1, 2");
  EXPECT_NE(cut.find("invalid JSON at line 1, column 46"), std::string::npos) << cut;
  EXPECT_NE(cut.find("truncated"), std::string::npos) << cut;
  EXPECT_NE(cut.find("(byte 45)"), std::string::npos) << cut;
  const std::string stray = errorOf("{\"ddpscope_digest\": 1,\n \"run\": x}");
  EXPECT_NE(stray.find("line 2, column 9"), std::string::npos) << stray;
  EXPECT_NE(stray.find("unquoted word 'x'"), std::string::npos) << stray;
  EXPECT_NE(errorOf("[1, 2]").find("not a JSON object"), std::string::npos);
  EXPECT_NE(errorOf("{\"traceEvents\": []}").find("no \"ddpscope_digest\""), std::string::npos);
  EXPECT_NE(errorOf(handDigest(ok_steps, ok_steps, "4")).find("digest version 4 is not supported"),
            std::string::npos);
  // A digest edited into saying what no run can: a negative duration, a rank count its rows
  // do not have, a late rank that is none of its ranks.
  const std::string good = handDigest(ok_steps, ok_steps);
  const auto edited = [&](const std::string& from, const std::string& to) {
    std::string j = good;
    return errorOf(j.replace(j.find(from), from.size(), to));
  };
  EXPECT_NE(edited("\"step_us\": 1500.000", "\"step_us\": -5.000")
                .find("run: \"step_us\" is negative (a duration; was the file edited?)"),
            std::string::npos);
  EXPECT_NE(edited("\"ranks\": 2,", "\"ranks\": 8,")
                .find("the run summary counts 8 ranks, but 2 rank rows follow"),
            std::string::npos);
  EXPECT_NE(edited(R"("matched_collectives": 6,)",
                   R"("matched_collectives": 6, "late_rank": 42, "late_rank_last_in": 5,
                      "collectives_with_skew": 6,)")
                .find("the late rank, 42, is not one of the digest's ranks"),
            std::string::npos);
  // A bucket's mean queued time may be below 0 (its allreduce started before its inferred ready).
  std::string queued = good;
  queued.replace(queued.find("\"mean_bucket_wait_us\": 7.000"), 28,
                 "\"mean_bucket_wait_us\": -7.000");
  EXPECT_EQ(analysis::parseDigest(queued, "d.json").run.mean_bucket_wait_ns, -7'000);
  // Version 3 has its producer; versions 1 and 2 are read without.
  EXPECT_FALSE(analysis::parseDigest(handDigest(ok_steps, ok_steps), "d.json").producer);
  EXPECT_NE(errorOf(handDigest(ok_steps, ok_steps, "3")).find("no \"producer\" field"),
            std::string::npos);
  // Version 2 names its files' hash xxh3_64 (an FNV-1a key is not it); a malformed one is named
  // by its key.
  std::string v2 = handDigest(ok_steps, ok_steps, "2");
  EXPECT_NE(errorOf(v2).find("xxh3_64"), std::string::npos) << errorOf(v2);
  v2.replace(v2.find("\"fnv1a64\": \"00000000000000ff\""), 29, "\"xxh3_64\": \"00000000000000fe\"");
  const auto d2 = analysis::parseDigest(v2, "d.json");
  ASSERT_TRUE(d2.ranks[0].file);
  EXPECT_EQ(d2.ranks[0].file->hash, 0xfeu);
  EXPECT_EQ(d2.ranks[0].file->hash_kind, analysis::FileHashKind::Xxh3);
  v2.replace(v2.find("\"xxh3_64\": \"00000000000000fe\""), 29, "\"xxh3_64\": \"0000000000000XYZ\"");
  EXPECT_NE(errorOf(v2).find("\"xxh3_64\" is not 16 hex digits"), std::string::npos);
  EXPECT_NE(errorOf(handDigest(ok_steps, ok_steps, "\"1\"")).find("is not an integer"),
            std::string::npos);
  // A step without its time: the rank and the step are named.
  const std::string no_dur =
      "[{\"step\": 1, \"exposed_comm_us\": 1.0, \"overlap_pct\": null, \"dp_efficiency\": null, "
      "\"matched_wait_us\": null, \"matched_transfer_us\": null}]";
  const std::string e = errorOf(handDigest(ok_steps, no_dur));
  EXPECT_NE(e.find("rank 1, step 0 of its list: no \"dur_us\" field"), std::string::npos) << e;
  // A mistyped figure.
  std::string bad = handDigest(ok_steps, ok_steps);
  bad.replace(bad.find("\"span_us\": 40.000"), 17, "\"span_us\": \"40\"");
  EXPECT_NE(errorOf(bad).find("rank 0: \"span_us\" is not a number or null"), std::string::npos);
  // A file name with a folder in it could point anywhere.
  std::string folder = handDigest(ok_steps, ok_steps);
  folder.replace(folder.find("\"r0.json\""), 9, "\"../r0.json\"");
  EXPECT_NE(errorOf(folder).find("\"file\" is not a file name"), std::string::npos);
  // The same rank twice.
  std::string twice = handDigest(ok_steps, ok_steps);
  twice.replace(twice.find("{\"rank\": 1"), 10, "{\"rank\": 0");
  EXPECT_NE(errorOf(twice).find("rank 0 appears twice"), std::string::npos);
  // Files: a missing one is named; a trace is not a digest.
  EXPECT_THROW(analysis::readDigest("/nonexistent/run.digest.json"), trace::TraceError);
  EXPECT_FALSE(analysis::isDigestFile("/nonexistent/run.digest.json"));
  const fs::path plain = fs::temp_directory_path() / "ddpscope_digest_reader_plain.json";
  std::ofstream(plain) << "  \n" << handDigest(ok_steps, ok_steps);
  EXPECT_TRUE(analysis::isDigestFile(plain.string()));
  EXPECT_EQ(analysis::readDigest(plain.string()).ranks.size(), 2u);
}
