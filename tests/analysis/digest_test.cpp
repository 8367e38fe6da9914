// The run digest (app/analysis/digest.h) holds the numbers `summary` gives for the same files,
// whatever the number of threads, and refuses what loading a run refuses.
#include "app/analysis/digest.h"

#include <gtest/gtest.h>
#include <simdjson.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "agent/run_agent.h"
#include "app/analysis/digest_reader.h"
#include "app/analysis/report_json.h"
#include "tracer/format/file_io.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_writer.h"

namespace fs = std::filesystem;
using namespace ddpscope;

namespace {

// A simulated run of four ranks, rank 2 late, written as rank-<r>.json.gz files; with `hang`,
// rank 1 hangs at the start of its backward in step 2 and the run stops there.
fs::path writeRun(const std::string& name, double bucket_mb = 25, bool hang = false) {
  agent::AgentOptions o;
  if (hang) {
    o.fault = "hang";
    o.fault_rank = 1;
    o.fault_step = 2;
    o.timeout_s = 0.05;
  }
  o.world_size = 4;
  o.bucket_mb = bucket_mb;
  o.first_bucket_mb = 1;
  o.steps = 3;
  o.model.layers = 4;
  o.cost.straggler_rank = 2;
  o.cost.straggler_slowdown = 1.3;
  o.out_dir = "unused";
  const auto result = agent::runSimulation(o);
  const fs::path dir = fs::temp_directory_path() / ("ddpscope_digest_" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const auto& r : result.ranks)
    trace::writeTraceFile(r, (dir / ("rank-" + std::to_string(r.rank) + ".json.gz")).string());
  return dir;
}

// The text of the object after `"key": ` at its first place in `json`.
std::string objectAfter(const std::string& json, const std::string& key) {
  const auto at = json.find("\"" + key + "\": {");
  if (at == std::string::npos) return {};
  const auto open = json.find('{', at);
  int depth = 0;
  for (auto i = open; i < json.size(); ++i) {
    depth += json[i] == '{' ? 1 : json[i] == '}' ? -1 : 0;
    if (depth == 0) return json.substr(open, i - open + 1);
  }
  return {};
}

double number(simdjson::dom::element e, const char* key) {
  simdjson::dom::element v = e[key];
  return v.is_null() ? -1.0 : double(v);
}

}  // namespace

TEST(Digest, HoldsTheSummarysNumbers) {
  const fs::path dir = writeRun("same");
  const std::string digest = analysis::digestRun({dir.string()}, {});
  const auto run = trace::loadRun({dir.string()});
  const std::string summary = analysis::reportToJson(analysis::analyzeRun(run));
  // The run summary, word for word.
  const std::string run_object = objectAfter(summary, "run");
  ASSERT_FALSE(run_object.empty());
  EXPECT_EQ(objectAfter(digest, "run"), run_object);
  // Per rank and per step, every figure the digest has, as the summary states it.
  simdjson::dom::parser p1, p2;
  simdjson::dom::element d = p1.parse(digest), s = p2.parse(summary);
  simdjson::dom::array dr = d["ranks"], sr = s["ranks"];
  ASSERT_EQ(dr.size(), 4u);
  ASSERT_EQ(sr.size(), 4u);
  for (std::size_t i = 0; i < 4; ++i) {
    simdjson::dom::element a = dr.at(i), b = sr.at(i);
    EXPECT_EQ(int64_t(a["rank"]), int64_t(b["rank"]));
    for (const char* key : {"comm_us", "compute_us", "overlap_us", "overlap_pct", "exposed_comm_us",
                            "idle_pct", "exposed_wait_us", "exposed_transfer_us"})
      EXPECT_EQ(number(a, key), number(b, key)) << "rank " << i << " " << key;
    simdjson::dom::array as = a["steps"], bs = b["steps"];
    ASSERT_EQ(as.size(), bs.size());
    for (std::size_t k = 0; k < as.size(); ++k) {
      for (const char* key : {"step", "dur_us", "overlap_pct", "exposed_comm_us", "dp_efficiency",
                              "matched_wait_us", "matched_transfer_us"})
        EXPECT_EQ(number(as.at(k), key), number(bs.at(k), key)) << "rank " << i << " " << key;
    }
    // Rank 2 arrives last: the others wait, it does not.
    if (int64_t(a["rank"]) != 2) {
      EXPECT_GT(number(as.at(1), "matched_wait_us"), 0);
    }
    EXPECT_EQ(std::string_view(a["file"]), "rank-" + std::to_string(i) + ".json.gz");
    EXPECT_EQ(simdjson::dom::array(a["warnings"]).size(),
              simdjson::dom::array(b["warnings"]).size());
  }
  // A few KB per rank.
  EXPECT_LT(digest.size(), 4u * 4096u);
  fs::remove_all(dir);
}

TEST(Digest, TheSameBytesWithAnyNumberOfThreads) {
  const fs::path dir = writeRun("threads");
  analysis::DigestOptions one, three;
  one.threads = 1;
  three.threads = 3;
  EXPECT_EQ(analysis::digestRun({dir.string()}, one), analysis::digestRun({dir.string()}, three));
  fs::remove_all(dir);
}

TEST(Digest, OtherTraceFilesBesideTheRankFilesAreNamedInAWarning) {
  const fs::path dir = writeRun("skipped");
  fs::copy_file(dir / "rank-0.json.gz", dir / "copy-of-rank-0.json.gz");
  const std::string json = analysis::digestRun({dir.string()}, {});
  EXPECT_NE(json.find("1 trace file beside the folder's rank-<r> files was not read "
                      "(copy-of-rank-0.json.gz)"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(Digest, FilesOfOtherRunsAndRepeatedRanksAreRefused) {
  const fs::path a = writeRun("a"), b = writeRun("b", 5);
  // Rank 1 of a 5 MiB run among the ranks of a 25 MiB run.
  fs::copy_file(b / "rank-1.json.gz", a / "rank-1.json.gz", fs::copy_options::overwrite_existing);
  try {
    analysis::digestRun({a.string()}, {});
    ADD_FAILURE() << "a mixed run was digested";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not of the same run"), std::string::npos) << e.what();
  }
  // The same rank in two files (the same file given twice is read once: expandTracePaths).
  fs::create_directories(b / "copy");
  fs::copy_file(b / "rank-0.json.gz", b / "copy" / "rank-0.json.gz");
  try {
    analysis::digestRun({(b / "rank-0.json.gz").string(), (b / "copy" / "rank-0.json.gz").string()},
                        {});
    ADD_FAILURE() << "a rank given twice was digested";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("rank 0 is in two files"), std::string::npos) << e.what();
  }
  fs::remove_all(a);
  fs::remove_all(b);
}

// A rank's own warnings travel with it (a thousand-rank overview must show the broken trace):
// the empty trace's, as summary --json states them, through the partials' bytes too.
TEST(Digest, ARanksWarningsAreKept) {
  const fs::path dir = fs::temp_directory_path() / "ddpscope_digest_warnings";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const auto file = (dir / "rank-0.json").string();
  std::ofstream(file) << R"({"traceEvents": []})";
  const auto report = analysis::analyzeRun(trace::loadRun({file}));
  ASSERT_EQ(report.ranks.size(), 1u);
  const auto& want = report.ranks[0].warnings;
  ASSERT_FALSE(want.empty());
  EXPECT_NE(want.front().find("no events at all"), std::string::npos);
  const auto d = analysis::parseDigest(analysis::digestRun({file}, {}), "d.json");
  ASSERT_EQ(d.ranks.size(), 1u);
  EXPECT_EQ(d.ranks[0].warnings, want);
  analysis::DigestOptions options;
  auto parts = analysis::digestFiles({file}, options);
  auto back = analysis::decodePartials(analysis::encodePartials(parts));
  EXPECT_EQ(analysis::finishDigest(back, options, {}), analysis::finishDigest(parts, options, {}));
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[0].report.warnings, want);
  fs::remove_all(dir);
}

// A digest of a run with one file cut short: refused naming it; with skip_unreadable, the digest
// of the other ranks with a warning naming the file, the same when the partials travel as bytes
// (an MPI job); none readable: refused.
TEST(Digest, UnreadableFilesAreLeftOutOnlyWhenAsked) {
  const fs::path dir = writeRun("unreadable");
  const std::string cut = (dir / "rank-1.json.gz").string();
  std::ifstream in(cut, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  trace::writeFileAtomically(cut, bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(analysis::digestRun({dir.string()}, {}), trace::TraceError);
  analysis::DigestOptions options;
  options.skip_unreadable = true;
  const auto d = analysis::parseDigest(analysis::digestRun({dir.string()}, options), "d.json");
  ASSERT_EQ(d.ranks.size(), 3u);
  EXPECT_EQ(d.run.missing_ranks, (std::vector<std::int32_t>{1}));
  const auto warned = std::find_if(d.warnings.begin(), d.warnings.end(), [&](const auto& w) {
    return w.find("could not be read and was left out") != std::string::npos &&
           w.find(cut) != std::string::npos;
  });
  EXPECT_NE(warned, d.warnings.end());
  // As bytes between processes: the same digest.
  const auto files = trace::expandTracePaths({dir.string()});
  std::vector<analysis::UnreadableFile> unreadable;
  auto parts = analysis::digestFiles(files, options, {}, &unreadable);
  ASSERT_EQ(unreadable.size(), 1u);
  EXPECT_EQ(unreadable[0].index, 1u);
  std::vector<analysis::UnreadableFile> back_unreadable;
  auto back =
      analysis::decodePartials(analysis::encodePartials(parts, unreadable), &back_unreadable);
  ASSERT_EQ(back_unreadable.size(), 1u);
  EXPECT_EQ(back_unreadable[0].index, 1u);
  EXPECT_EQ(back_unreadable[0].why, unreadable[0].why);
  EXPECT_EQ(analysis::finishDigest(back, options, {}, back_unreadable),
            analysis::digestRun({dir.string()}, options));
  // No file readable: refused.
  for (const auto& f : files)
    trace::writeFileAtomically(f, "{\"trace");
  EXPECT_THROW(analysis::digestRun({dir.string()}, options), std::runtime_error);
  fs::remove_all(dir);
}

// The digest's ranks (made file by file, matched in absolute time) have the bandwidths a run's
// analysis gives: over the transfer, bucket by bucket, the same figures; also as bytes.
TEST(Digest, BucketBandwidthsAreTheRunsOverTheTransfer) {
  const fs::path dir = writeRun("bandwidth");
  const auto run = trace::loadRun({dir.string()});
  ASSERT_NE(run.ranks.front().base_time_ns, 0) << "the test needs a clock base";
  const auto report = analysis::analyzeRun(run);
  const auto files = trace::expandTracePaths({dir.string()});
  analysis::DigestOptions options;
  auto parts = analysis::digestFiles(files, options);
  auto bytes = analysis::decodePartials(analysis::encodePartials(parts));
  for (auto* p : {&parts, &bytes}) {
    const auto merged = analysis::mergePartials(*p);
    ASSERT_EQ(merged.ranks.size(), report.ranks.size());
    for (std::size_t r = 0; r < report.ranks.size(); ++r) {
      const auto& want = report.ranks[r].buckets;
      const auto& got = merged.ranks[r].buckets;
      ASSERT_EQ(got.size(), want.size());
      ASSERT_FALSE(want.empty());
      for (std::size_t b = 0; b < want.size(); ++b) {
        EXPECT_EQ(want[b].bw_basis, analysis::BandwidthBasis::Transfer);
        EXPECT_EQ(got[b].bw_basis, want[b].bw_basis) << "rank " << r << ", bucket " << b;
        EXPECT_EQ(got[b].busbw_gbps, want[b].busbw_gbps) << "rank " << r << ", bucket " << b;
      }
    }
  }
  fs::remove_all(dir);
}

// What processes of an MPI job send each other: the partials, as bytes, give the same digest; a
// truncated message is refused.
TEST(Digest, PartialsAsBytesGiveTheSameDigest) {
  const fs::path dir = writeRun("bytes");
  const auto files = trace::expandTracePaths({dir.string()});
  analysis::DigestOptions options;
  auto parts = analysis::digestFiles(files, options);
  // Split as three processes would: files 0 and 3, 1, 2.
  std::vector<analysis::RankPartial> a, b;
  for (std::size_t i = 0; i < parts.size(); ++i)
    (i % 3 == 0 ? a : b).push_back(parts[i]);
  auto back = analysis::decodePartials(analysis::encodePartials(a));
  auto more = analysis::decodePartials(analysis::encodePartials(b));
  for (auto& p : more)
    back.push_back(std::move(p));
  EXPECT_EQ(analysis::finishDigest(back, options, {}), analysis::finishDigest(parts, options, {}));
  const std::string bytes = analysis::encodePartials(a);
  EXPECT_THROW(analysis::decodePartials(std::string_view(bytes).substr(0, bytes.size() / 2)),
               std::runtime_error);
  fs::remove_all(dir);
}

// A run cut short by a hung rank: the rank that went quiet first is named, as `summary` names it
// (the run object word for word). Rank 1 stops at the start of its backward in step 2; the others
// run their backward of step 2 (four layers of it) before waiting in the allreduce that never
// comes: rank 1's GPU work ends first, by more than the least lead.
TEST(Digest, TheRankThatWentQuietFirstIsNamedAsTheSummaryNamesIt) {
  const fs::path dir = writeRun("hang", 25, /*hang=*/true);
  const std::string digest = analysis::digestRun({dir.string()}, {});
  const auto run = trace::loadRun({dir.string()});
  const auto report = analysis::analyzeRun(run);
  EXPECT_EQ(report.completeness.first_quiet_rank, 1);
  EXPECT_GE(report.completeness.first_quiet_ahead_ns, analysis::kFirstQuietMinNs);
  const std::string summary = analysis::reportToJson(report);
  EXPECT_NE(summary.find("\"first_quiet_rank\": 1, \"first_quiet_ahead_us\": "), std::string::npos);
  EXPECT_EQ(objectAfter(digest, "run"), objectAfter(summary, "run"));
  const auto read = analysis::parseDigest(digest, "hang.json");
  EXPECT_EQ(read.run.first_quiet_rank, 1);
  EXPECT_EQ(read.run.first_quiet_ahead_ns, report.completeness.first_quiet_ahead_ns);
  fs::remove_all(dir);
}
