// Simulated agent faults (--fault die|hang): the other ranks abort within --timeout-s of virtual
// time, name the faulted rank, and write valid traces flagged incomplete; a dead rank writes none.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "agent/run_agent.h"
#include "app/analysis/analysis.h"
#include "app/analysis/report_json.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

namespace ddpscope::agent {
namespace {

namespace fs = std::filesystem;
using trace::TimeNs;

// A small model so that many runs stay fast.
AgentOptions small(std::int32_t world, std::int32_t steps = 4) {
  AgentOptions o;
  o.world_size = world;
  o.model.kind = "mlp";
  o.model.layers = 4;
  o.model.hidden = 256;
  o.model.batch = 64;
  o.bucket_mb = 0.25;
  o.first_bucket_mb = 0.25;
  o.steps = steps;
  o.timeout_s = 5;
  o.out_dir = "unused";
  return o;
}

AgentOptions withFault(AgentOptions o, const char* kind, std::int32_t rank, std::int32_t step) {
  o.fault = kind;
  o.fault_rank = rank;
  o.fault_step = step;
  return o;
}

TimeNs lastEnd(const trace::RankTrace& t) {
  TimeNs end = -1;
  for (const auto& track : t.tracks)
    for (std::size_t i = 0; i < track.size(); ++i)
      end = std::max(end, track.end(i));
  return end;
}

std::vector<std::int32_t> ranksOf(const std::vector<trace::RankTrace>& ranks) {
  std::vector<std::int32_t> out;
  for (const auto& t : ranks)
    out.push_back(t.rank);
  return out;
}

// The end of the "bucket B ready" marker of a step on a rank (-1 when absent), and the end of
// the last communication kernel: the communication stream cannot reach the allreduce earlier.
TimeNs readyMarker(const trace::RankTrace& t, std::int32_t step, std::int32_t bucket) {
  for (const auto& track : t.tracks)
    for (std::size_t i = 0; i < track.size(); ++i)
      if (track.kind_of[i] == trace::EventKind::GpuAnnotation && track.step[i] == step &&
          track.bucket[i] == bucket)
        return track.end(i);
  return -1;
}
TimeNs lastCommEnd(const trace::RankTrace& t) {
  TimeNs end = -1;
  for (const auto& track : t.tracks)
    for (std::size_t i = 0; i < track.size(); ++i)
      if (track.kind_of[i] == trace::EventKind::Kernel &&
          t.names[track.name[i]].starts_with("nccl"))
        end = std::max(end, track.end(i));
  return end;
}

// Everything the requirement asks of one faulted run, in virtual time.
void checkFaultedRun(const AgentOptions& o, const SimRunResult& r) {
  SCOPED_TRACE(o.fault + " rank " + std::to_string(o.fault_rank) + " step " +
               std::to_string(o.fault_step) + " of " + std::to_string(o.world_size));
  ASSERT_TRUE(r.fault.has_value());
  const auto& a = *r.fault;
  const bool died = o.fault == "die";
  EXPECT_EQ(a.fault.rank, o.fault_rank);
  EXPECT_EQ(a.step, o.fault_step);
  EXPECT_EQ(a.bucket, 0);  // it stopped before its backward: it never joins the first bucket
  const TimeNs timeout = std::llround(o.timeout_s * 1e9);
  std::vector<std::int32_t> others, expected_files;
  for (std::int32_t k = 0; k < o.world_size; ++k) {
    if (k != o.fault_rank) others.push_back(k);
    if (k != o.fault_rank || !died) expected_files.push_back(k);
  }
  EXPECT_EQ(a.waiting_ranks, others);
  EXPECT_EQ(ranksOf(r.ranks), expected_files);
  EXPECT_EQ(r.step_ms.size(), static_cast<std::size_t>(o.fault_step));  // completed steps
  for (const auto& t : r.ranks) {
    SCOPED_TRACE("rank " + std::to_string(t.rank));
    EXPECT_TRUE(t.ddpscope.incomplete);
    EXPECT_EQ(t.ddpscope.configValue("fault"), "\"" + o.fault + "\"");
    EXPECT_EQ(t.ddpscope.configValue("fault_rank"), std::to_string(o.fault_rank));
    EXPECT_EQ(t.ddpscope.configValue("fault_step"), std::to_string(o.fault_step));
    EXPECT_EQ(t.steps.size(), static_cast<std::size_t>(o.fault_step));  // the cut step is open
    const auto ri = static_cast<std::size_t>(t.rank);
    const TimeNs end = lastEnd(t);
    if (t.rank == o.fault_rank) {  // hung: its own watchdog fires timeout after it stopped
      EXPECT_EQ(a.wait_start_ns[ri], -1);
      EXPECT_GT(end, a.stop_ns);
      EXPECT_LE(end, a.stop_ns + timeout);
      continue;
    }
    const TimeNs wait = a.wait_start_ns[ri];
    // The communication stream reached the allreduce after the bucket was ready and after its
    // earlier collectives ended.
    EXPECT_GE(wait, readyMarker(t, o.fault_step, 0));
    EXPECT_GE(wait, lastCommEnd(t));
    EXPECT_EQ(a.abort_ns[ri], wait + timeout);
    EXPECT_GT(end, wait);
    EXPECT_LE(end, wait + timeout);
  }
  if (died) {
    EXPECT_EQ(a.abort_ns[static_cast<std::size_t>(o.fault_rank)], -1);
  }
}

TEST(Fault, DieAndHangAbortTheOthersWithinTheTimeout) {
  struct Case {
    std::int32_t world, rank, step;
  };
  for (const char* kind : {"die", "hang"}) {
    for (const auto& c :
         {Case{2, 0, 0}, Case{2, 1, 2}, Case{4, 2, 1}, Case{4, 0, 3}, Case{4, 3, 0}}) {
      const auto o = withFault(small(c.world), kind, c.rank, c.step);
      checkFaultedRun(o, runSimulation(o));
    }
  }
}

TEST(Fault, OtherLoopVariantsAbortToo) {
  auto o = withFault(small(4), "die", 1, 2);
  o.overlap = false;
  o.fusion = Fusion::Copy;
  checkFaultedRun(o, runSimulation(o));
  o = withFault(small(2), "hang", 1, 1);
  o.sim_math = true;
  o.rebuild_buckets = true;
  o.cost.jitter = 0.2;
  o.cost.straggler_rank = 0;
  o.cost.straggler_slowdown = 1.5;
  const auto r = runSimulation(o);
  checkFaultedRun(o, r);
  EXPECT_EQ(r.losses.size(), 1u);
}

// A timeout shorter than the work still queued: what would still run at the abort is cut.
TEST(Fault, TinyTimeoutCutsWorkStillInFlight) {
  auto o = withFault(small(4), "hang", 2, 1);
  const auto long_run = runSimulation(o);
  o.timeout_s = 1e-6;
  const auto short_run = runSimulation(o);
  checkFaultedRun(o, short_run);
  std::size_t long_events = 0, short_events = 0;
  for (const auto& t : long_run.ranks)
    long_events += t.eventCount();
  for (const auto& t : short_run.ranks)
    short_events += t.eventCount();
  EXPECT_LT(short_events, long_events);
}

TEST(Fault, SameSeedSameBytesAndUnfaultedRunsCarryNoFault) {
  auto o = withFault(small(4), "die", 3, 2);
  o.cost.jitter = 0.3;
  const auto a = runSimulation(o);
  const auto b = runSimulation(o);
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (std::size_t r = 0; r < a.ranks.size(); ++r)
    EXPECT_EQ(trace::serializeTrace(a.ranks[r]), trace::serializeTrace(b.ranks[r]));
  o.fault.clear();
  const auto clean = runSimulation(o);
  EXPECT_FALSE(clean.fault.has_value());
  ASSERT_EQ(clean.ranks.size(), 4u);
  for (const auto& t : clean.ranks) {
    EXPECT_FALSE(t.ddpscope.incomplete);
    EXPECT_EQ(t.ddpscope.configValue("fault"), "");
    EXPECT_EQ(t.ddpscope.configValue("timeout_s"), "");
  }
}

fs::path freshDir(const std::string& name) {
  auto d =
      fs::temp_directory_path() / ("ddpscope-fault-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

struct AgentCall {
  int code = 0;
  std::string out, err;
};
AgentCall callAgent(std::vector<std::string> args) {
  args.insert(args.begin(), "ddpscope-agent");
  std::vector<const char*> argv;
  for (const auto& a : args)
    argv.push_back(a.c_str());
  std::ostringstream out, err;
  const int code = agentMain(static_cast<int>(argv.size()), argv.data(), out, err);
  return {code, out.str(), err.str()};
}

std::set<std::string> filesIn(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    names.insert(e.path().filename().string());
  return names;
}

std::string lastLine(const std::string& s) {
  const auto end = s.find_last_not_of('\n');
  const auto begin = s.rfind('\n', end);
  return s.substr(begin == std::string::npos ? 0 : begin + 1, end - begin);
}

// The agent as the command line runs it: exit 1, the error names the rank, the written files
// load as one run that the summary calls incomplete. The default --timeout-s (300 s) is virtual
// time: the process itself ends promptly.
TEST(Fault, AgentReportsADeadRankAndWritesIncompleteTraces) {
  const auto dir = freshDir("die");
  const auto wall = std::chrono::steady_clock::now();
  const auto call = callAgent(
      {"--world-size", "4",  "--model",      "mlp",  "--layers", "4",         "--hidden", "256",
       "--batch",      "64", "--bucket-mb",  "0.25", "--steps",  "5",         "--fault",  "die",
       "--fault-rank", "2",  "--fault-step", "3",    "--out",    dir.string()});
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - wall).count(), 60.0);
  EXPECT_EQ(call.code, kExitFailed);
  const auto line = lastLine(call.out);
  EXPECT_TRUE(line.starts_with("{\"event\":\"error\"")) << line;
  EXPECT_NE(line.find("\"fault\":\"die\",\"rank\":2,\"step\":3,\"bucket\":0"), std::string::npos)
      << line;
  EXPECT_NE(line.find("\"written_ranks\":[0,1,3]"), std::string::npos) << line;
  EXPECT_NE(call.out.find("{\"event\":\"progress\",\"step\":3,"), std::string::npos);
  EXPECT_EQ(call.out.find("\"event\":\"done\""), std::string::npos);
  EXPECT_EQ(call.err,
            "ddpscope-agent: rank 2 did not join the allreduce of bucket 0 in step 3 within "
            "--timeout-s 300 (simulated fault: rank 2 died at the start of its backward in step "
            "3); ranks 0,1,3 aborted and wrote incomplete traces to " +
                dir.string() + " (rank 2 wrote none)\n");
  EXPECT_EQ(filesIn(dir),
            (std::set<std::string>{"rank-0.json.gz", "rank-1.json.gz", "rank-3.json.gz"}));
  for (const auto& name : filesIn(dir)) {
    const auto t = trace::readTraceFile((dir / name).string());
    EXPECT_TRUE(t.ddpscope.incomplete) << name;
    EXPECT_EQ(t.ddpscope.configValue("fault"), "\"die\"");
    EXPECT_EQ(t.ddpscope.configValue("timeout_s"), "300");
    EXPECT_EQ(t.steps.size(), 3u);
    EXPECT_TRUE(t.warnings.empty()) << name;
  }
  const auto run = trace::loadRun({dir.string()});
  ASSERT_EQ(run.ranks.size(), 3u);
  const auto report = analysis::analyzeRun(run);
  for (const auto& rr : report.ranks) {
    EXPECT_TRUE(rr.incomplete);
    EXPECT_TRUE(rr.violations.empty()) << rr.rank;
    EXPECT_EQ(rr.steps.size(), 3u);
  }
  EXPECT_NE(analysis::reportToText(report).find("INCOMPLETE"), std::string::npos);
  // Said of the run too, first thing (the CLI's text and JSON warnings).
  EXPECT_EQ(analysis::reportToText(report).rfind(
                "warning: the traces of ranks 0-1, 3 are cut short (their producer stopped before "
                "the run finished); the numbers cover only what was recorded",
                0),
            0u)
      << analysis::reportToText(report).substr(0, 300);
  fs::remove_all(dir);
}

TEST(Fault, AgentReportsAHungRankThatWritesItsOwnTrace) {
  const auto dir = freshDir("hang");
  const auto call = callAgent(
      {"--world-size", "2",  "--model",     "mlp", "--layers", "4",         "--hidden",     "256",
       "--batch",      "64", "--steps",     "3",   "--fault",  "hang",      "--fault-rank", "0",
       "--fault-step", "0",  "--timeout-s", "2.5", "--out",    dir.string()});
  EXPECT_EQ(call.code, kExitFailed);
  EXPECT_NE(call.err.find("rank 0 did not join the allreduce of bucket 0 in step 0 within "
                          "--timeout-s 2.5 (simulated fault: rank 0 hangs"),
            std::string::npos)
      << call.err;
  EXPECT_NE(call.err.find("ranks 0,1 wrote incomplete traces"), std::string::npos) << call.err;
  EXPECT_NE(lastLine(call.out).find("\"fault\":\"hang\",\"rank\":0,"), std::string::npos);
  EXPECT_EQ(filesIn(dir), (std::set<std::string>{"rank-0.json.gz", "rank-1.json.gz"}));
  const auto run = trace::loadRun({dir.string()});
  ASSERT_EQ(run.ranks.size(), 2u);
  for (const auto& t : run.ranks) {
    EXPECT_TRUE(t.ddpscope.incomplete);
    EXPECT_TRUE(t.steps.empty());  // it stopped in step 0
  }
  fs::remove_all(dir);
}

TEST(Fault, BadCombinationsExitTwoWithAClearMessage) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--backend", "cuda", "--fault", "die", "--fault-rank", "0", "--fault-step", "0"},
       "--fault injects a simulated fault and needs --backend sim"},
      {{"--world-size", "4", "--fault", "die", "--fault-rank", "4", "--fault-step", "0"},
       "--fault-rank must be a rank from 0 to --world-size - 1 = 3, got 4"},
      {{"--world-size", "4", "--fault", "die", "--fault-rank", "-1", "--fault-step", "0"},
       "--fault-rank must be a rank from 0 to --world-size - 1 = 3, got -1"},
      {{"--steps", "5", "--fault", "hang", "--fault-rank", "0", "--fault-step", "5"},
       "--fault-step must be a step from 0 to --steps - 1 = 4, got 5"},
      {{"--fault", "die"}, "--fault needs --fault-rank N and --fault-step S"},
      {{"--fault-rank", "1"}, "--fault-rank and --fault-step need --fault die|hang"},
      {{"--fault", "crash", "--fault-rank", "0", "--fault-step", "0"}, "--fault"},
      {{"--world-size", "1", "--fault", "die", "--fault-rank", "0", "--fault-step", "0"},
       "--fault needs --world-size of at least 2"},
      {{"--fault", "die", "--fault-rank", "0", "--fault-step", "0", "--timeout-s", "1e7"},
       "--timeout-s with --fault must be at most"},
      // Bucket caps whose bytes would not fit (they wrapped to a negative cap and exit 1).
      {{"--bucket-mb", "1e13"}, "--bucket-mb: must be at most 1048576, got 1e13"},
      {{"--bucket-mb", "inf"}, "--bucket-mb: must be a finite number, got inf"},
      {{"--bucket-mb", "nan"}, "--bucket-mb: must be a finite number"},
      {{"--first-bucket-mb", "1e300"}, "--first-bucket-mb: must be at most 1048576"},
      {{"--bucket-mb", "-0.5"}, "--bucket-mb: must be >= 0, got -0.5"},
      {{"--jitter", "inf"}, "--jitter: must be a finite number"},
      {{"--straggler-slowdown", "1.5"},
       "--straggler-slowdown slows one rank down and needs --straggler-rank N"},
      {{"--backend", "cuda", "--straggler-rank", "0", "--straggler-slowdown", "1.5"},
       "--straggler-rank slows a simulated rank down and needs --backend sim"},
  };
  for (const auto& c : cases) {
    auto args = c.args;
    args.insert(args.end(), {"--out", "never-written"});
    const auto call = callAgent(args);
    EXPECT_EQ(call.code, kExitBadArguments) << c.message;
    EXPECT_NE(call.err.find(c.message), std::string::npos) << call.err;
  }
  EXPECT_FALSE(fs::exists("never-written"));
}

TEST(Fault, HelpDocumentsTheOptions) {
  const auto call = callAgent({"--help"});
  EXPECT_EQ(call.code, 0);
  for (const char* option : {"--fault", "--fault-rank", "--fault-step", "--timeout-s"})
    EXPECT_NE(call.out.find(option), std::string::npos) << option;
}

}  // namespace
}  // namespace ddpscope::agent
