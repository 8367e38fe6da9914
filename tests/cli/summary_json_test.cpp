// The JSON contract of `ddpscope-cli summary --json` (docs: "Command-line contracts"), end to end:
// the command runs as a process, its stdout is parsed with simdjson, and every documented per-rank
// field is checked against the independent reference figures of tests/data/README.md and, field
// by field, against analysis::analyzeRank of the same file (a value written into the wrong field
// fails). Fields the contract may add (a top-level `run`, say) are tolerated, not tested here.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <limits>
#include <optional>
#include <string>
#include <string_view>

#include "app/analysis/analysis.h"
#include "tests/common/kineto_reference.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;
namespace ref = ddpscope::testing::kineto_reference;
namespace dom = simdjson::dom;

namespace {

const std::string kTrace = std::string(DDPSCOPE_TEST_DATA) + "/resnet50_ddp_rank0.json.gz";

struct Process {
  int exit_status = -1;  // -1: did not exit normally
  std::string out;
};

Process runCli(const std::string& args) {
  const std::string command = std::string("'") + DDPSCOPE_CLI + "' " + args;
  Process p;
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) return p;
  char buf[65536];
  std::size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, pipe)) > 0)
    p.out.append(buf, n);
  const int status = ::pclose(pipe);
  if (status != -1 && WIFEXITED(status)) p.exit_status = WEXITSTATUS(status);
  return p;
}

// Field readers: a missing field or one of the wrong type is a test failure naming it.
double number(dom::object o, std::string_view key) {
  double v = 0;
  if (o[key].get_double().get(v) != simdjson::SUCCESS) {
    ADD_FAILURE() << "no number \"" << key << "\"";
    return std::numeric_limits<double>::quiet_NaN();
  }
  return v;
}
std::int64_t integer(dom::object o, std::string_view key) {
  std::int64_t v = 0;
  if (o[key].get_int64().get(v) != simdjson::SUCCESS) {
    ADD_FAILURE() << "no integer \"" << key << "\"";
    return std::numeric_limits<std::int64_t>::min();
  }
  return v;
}
std::string text(dom::object o, std::string_view key) {
  std::string_view v;
  if (o[key].get_string().get(v) != simdjson::SUCCESS) {
    ADD_FAILURE() << "no string \"" << key << "\"";
    return "<missing>";
  }
  return std::string(v);
}
bool boolean(dom::object o, std::string_view key) {
  bool v = false;
  if (o[key].get_bool().get(v) != simdjson::SUCCESS) ADD_FAILURE() << "no bool \"" << key << "\"";
  return v;
}
dom::object object(dom::element e, std::string_view what) {
  dom::object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) ADD_FAILURE() << what << " is not an object";
  return o;
}
dom::array array(dom::object o, std::string_view key) {
  dom::array a;
  if (o[key].get_array().get(a) != simdjson::SUCCESS) ADD_FAILURE() << "no array \"" << key << "\"";
  return a;
}
bool isNull(dom::object o, std::string_view key) {
  dom::element e;
  if (o[key].get(e) != simdjson::SUCCESS) {
    ADD_FAILURE() << "no field \"" << key << "\"";
    return false;
  }
  return e.is_null();
}
// Microseconds with 3 decimals, as the exact ns they were written from.
std::int64_t nanos(dom::object o, std::string_view key) {
  const double us = number(o, key);
  return std::isfinite(us) ? std::llround(us * 1000.0) : std::numeric_limits<std::int64_t>::min();
}

// A figure written with `decimals` decimals: equal to the analysis' within the rounding.
void expectRounded(dom::object o, std::string_view key, double want, int decimals) {
  EXPECT_NEAR(number(o, key), want, 0.5 * std::pow(10.0, -decimals) + 1e-9) << key;
}
void expectOptional(dom::object o, std::string_view key, const std::optional<double>& want,
                    int decimals) {
  if (!want) {
    EXPECT_TRUE(isNull(o, key)) << key << " should be null";
  } else {
    expectRounded(o, key, *want, decimals);
  }
}

// The overlap and temporal-breakdown fields of a rank or a step.
void expectMetrics(dom::object o, const analysis::OverlapMetrics& m) {
  EXPECT_EQ(nanos(o, "comm_us"), m.comm_ns);
  EXPECT_EQ(nanos(o, "compute_us"), m.compute_ns);
  EXPECT_EQ(nanos(o, "overlap_us"), m.overlap_ns);
  expectOptional(o, "overlap_pct", m.overlap_pct, 4);
  EXPECT_EQ(nanos(o, "exposed_comm_us"), m.exposed_ns);
  EXPECT_EQ(nanos(o, "span_us"), m.span_ns);
  EXPECT_EQ(nanos(o, "idle_us"), m.idle_ns);
  expectOptional(o, "idle_pct", m.idle_pct, 4);
  expectOptional(o, "compute_pct", m.compute_pct, 4);
  expectOptional(o, "non_compute_pct", m.non_compute_pct, 4);
}

// Every documented per-rank field (and the others the writer gives) against the analysis.
void expectRankMatches(dom::object j, const analysis::RankReport& r) {
  EXPECT_EQ(integer(j, "rank"), r.rank);
  EXPECT_EQ(integer(j, "world_size"), r.world_size);
  EXPECT_EQ(text(j, "source"), r.source);
  EXPECT_EQ(text(j, "path"), kTrace);
  EXPECT_EQ(boolean(j, "incomplete"), r.incomplete);
  EXPECT_EQ(integer(j, "dropped_records"), r.dropped_records);
  dom::object counts;
  ASSERT_EQ(j["counts"].get_object().get(counts), simdjson::SUCCESS);
  EXPECT_EQ(integer(counts, "communication"), r.counts[0]);
  EXPECT_EQ(integer(counts, "computation"), r.counts[1]);
  EXPECT_EQ(integer(counts, "memory"), r.counts[2]);
  EXPECT_EQ(integer(counts, "other"), r.counts[3]);

  const auto streams = array(j, "streams");
  ASSERT_EQ(streams.size(), r.streams.size());
  std::size_t k = 0;
  for (dom::element e : streams) {
    SCOPED_TRACE("streams[" + std::to_string(k) + "]");
    const auto s = object(e, "a stream");
    const auto& want = r.streams[k++];
    EXPECT_EQ(integer(s, "device"), want.device);
    EXPECT_EQ(integer(s, "stream"), want.stream);
    EXPECT_EQ(text(s, "role"), analysis::streamRoleName(want.role));
    EXPECT_EQ(integer(s, "kernels"), want.counts[0] + want.counts[1]);
    EXPECT_EQ(integer(s, "events"),
              want.counts[0] + want.counts[1] + want.counts[2] + want.counts[3]);
    EXPECT_EQ(nanos(s, "busy_us"), want.busy_ns);
  }

  expectMetrics(j, r.whole);

  const auto steps = array(j, "steps");
  ASSERT_EQ(steps.size(), r.steps.size());
  k = 0;
  for (dom::element e : steps) {
    SCOPED_TRACE("steps[" + std::to_string(k) + "]");
    const auto s = object(e, "a step");
    const auto& want = r.steps[k++];
    EXPECT_EQ(integer(s, "step"), want.step);
    EXPECT_EQ(nanos(s, "start_us"), want.start_ns);
    EXPECT_EQ(nanos(s, "dur_us"), want.dur_ns);
    expectMetrics(s, want.metrics);
    EXPECT_EQ(nanos(s, "exposed_tail_us"), want.exposed_tail_ns);
    EXPECT_EQ(nanos(s, "compute_critical_us"), want.compute_critical_ns);
    expectOptional(s, "dp_efficiency", want.dp_efficiency, 4);
    EXPECT_EQ(integer(s, "allreduces"), want.allreduces);
  }

  EXPECT_EQ(boolean(j, "buckets_inferred"), r.buckets_inferred);
  const auto buckets = array(j, "buckets");
  ASSERT_EQ(buckets.size(), r.buckets.size());
  k = 0;
  for (dom::element e : buckets) {
    SCOPED_TRACE("buckets[" + std::to_string(k) + "]");
    const auto b = object(e, "a bucket");
    const auto& want = r.buckets[k++];
    EXPECT_EQ(integer(b, "step"), want.step);
    EXPECT_EQ(integer(b, "id"), want.id);
    if (want.bytes >= 0) {
      EXPECT_EQ(integer(b, "bytes"), want.bytes);
    } else {
      EXPECT_TRUE(isNull(b, "bytes"));
    }
    if (want.tensors > 0) {
      EXPECT_EQ(integer(b, "tensors"), want.tensors);
    } else {
      EXPECT_TRUE(isNull(b, "tensors"));
    }
    EXPECT_EQ(nanos(b, "ready_us"), want.ready_ns);
    EXPECT_EQ(nanos(b, "start_us"), want.start_ns);
    EXPECT_EQ(nanos(b, "end_us"), want.end_ns);
    EXPECT_EQ(nanos(b, "dur_us"), want.end_ns - want.start_ns);
    EXPECT_EQ(nanos(b, "wait_us"), want.wait_ns);
    EXPECT_EQ(nanos(b, "exposed_us"), want.exposed_ns);
    expectOptional(b, "algbw_gbps", want.algbw_gbps, 4);
    expectOptional(b, "busbw_gbps", want.busbw_gbps, 4);
    EXPECT_EQ(boolean(b, "inferred"), want.inferred);
  }

  const auto violations = array(j, "violations");
  ASSERT_EQ(violations.size(), r.violations.size());
  k = 0;
  for (dom::element e : violations) {
    SCOPED_TRACE("violations[" + std::to_string(k) + "]");
    const auto v = object(e, "a violation");
    const auto& want = r.violations[k++];
    EXPECT_EQ(text(v, "kind"), analysis::violationKindName(want.kind));
    EXPECT_EQ(integer(v, "step"), want.step);
    EXPECT_EQ(integer(v, "bucket"), want.bucket);
    EXPECT_EQ(nanos(v, "at_us"), want.at_ns);
    EXPECT_EQ(nanos(v, "needed_us"), want.needed_ns);
    EXPECT_EQ(text(v, "message"), want.message);
  }
}

class SummaryJson : public ::testing::Test {
 protected:
  // Runs the command and returns its one rank (the test fails if anything else is wrong).
  dom::object rankOf(const std::string& flags) {
    const auto p = runCli("summary --json " + flags + "'" + kTrace + "'");
    EXPECT_EQ(p.exit_status, 0);
    json_ = simdjson::padded_string(p.out);
    dom::element doc;
    const auto error = parser_.parse(json_).get(doc);
    if (error != simdjson::SUCCESS) {
      ADD_FAILURE() << "stdout is not JSON (" << simdjson::error_message(error) << "):\n"
                    << p.out.substr(0, 2000);
      return {};
    }
    dom::array ranks;
    if (object(doc, "the document")["ranks"].get_array().get(ranks) != simdjson::SUCCESS ||
        ranks.size() != 1) {
      ADD_FAILURE() << "no \"ranks\" array of one rank";
      return {};
    }
    return object(ranks.at(0).value_unsafe(), "ranks[0]");
  }

  simdjson::padded_string json_;
  dom::parser parser_;
};

TEST_F(SummaryJson, EveryPerRankFieldIsTheAnalysis) {
  const auto j = rankOf("");
  ASSERT_FALSE(HasFailure());
  const auto r = analysis::analyzeRank(trace::readTraceFile(kTrace));
  expectRankMatches(j, r);
}

TEST_F(SummaryJson, ReferenceFigures) {
  const auto j = rankOf("");
  ASSERT_FALSE(HasFailure());
  EXPECT_EQ(integer(j, "rank"), 0);
  EXPECT_EQ(integer(j, "world_size"), 2);
  dom::object counts;
  ASSERT_EQ(j["counts"].get_object().get(counts), simdjson::SUCCESS);
  EXPECT_EQ(integer(counts, "communication"), ref::kCommunicationKernels);
  EXPECT_EQ(integer(counts, "computation"), ref::kComputationKernels);
  EXPECT_EQ(integer(counts, "memory"), ref::kMemoryEvents);
  EXPECT_NEAR(nanos(j, "comm_us"), ref::kCommNs, ref::kWholeFileToleranceNs);
  EXPECT_NEAR(nanos(j, "compute_us"), ref::kComputeNs, ref::kWholeFileToleranceNs);
  EXPECT_NEAR(nanos(j, "overlap_us"), ref::kOverlapNs, ref::kWholeFileToleranceNs);
  EXPECT_NEAR(number(j, "overlap_pct"), ref::kOverlapPct, 0.005);
  EXPECT_EQ(nanos(j, "exposed_comm_us"), nanos(j, "comm_us") - nanos(j, "overlap_us"));

  const auto steps = array(j, "steps");
  ASSERT_EQ(steps.size(), std::size(ref::kSteps));
  std::size_t k = 0;
  for (dom::element e : steps) {
    const auto& want = ref::kSteps[k++];
    SCOPED_TRACE("step " + std::to_string(want.step));
    const auto s = object(e, "a step");
    EXPECT_EQ(integer(s, "step"), want.step);
    EXPECT_EQ(nanos(s, "dur_us"), want.dur_ns);
    EXPECT_EQ(nanos(s, "comm_us"), want.comm_ns);
    EXPECT_EQ(nanos(s, "overlap_us"), want.overlap_ns);
    EXPECT_EQ(std::llround(number(s, "overlap_pct") * 1e4), want.overlap_pct_e4);
    EXPECT_EQ(nanos(s, "exposed_comm_us"), want.exposed_ns);
  }

  const auto buckets = array(j, "buckets");
  ASSERT_EQ(buckets.size(), std::size(ref::kBuckets));
  k = 0;
  std::int64_t previous_step = -1, id = 0;
  for (dom::element e : buckets) {
    const auto& want = ref::kBuckets[k++];
    SCOPED_TRACE("bucket " + std::to_string(k - 1) + " (step " + std::to_string(want.step) + ")");
    id = want.step == previous_step ? id + 1 : 0;
    previous_step = want.step;
    const auto b = object(e, "a bucket");
    EXPECT_EQ(integer(b, "step"), want.step);
    EXPECT_EQ(integer(b, "id"), id);
    EXPECT_EQ(integer(b, "bytes"), want.bytes);
    EXPECT_EQ(nanos(b, "dur_us"), want.allreduce_ns);
    EXPECT_EQ(nanos(b, "wait_us"), want.wait_ns);
    EXPECT_EQ(nanos(b, "start_us") - nanos(b, "ready_us"), want.wait_ns);
    // World size 2: bus bandwidth = algorithm bandwidth = bytes / duration (GB/s = B/ns).
    EXPECT_NEAR(number(b, "busbw_gbps"),
                static_cast<double>(want.bytes) / static_cast<double>(want.allreduce_ns), 0.5e-4);
  }
  EXPECT_EQ(array(j, "violations").size(), 0u);
}

TEST_F(SummaryJson, HtaCompatWindow) {
  const auto j = rankOf("--hta-compat ");
  ASSERT_FALSE(HasFailure());
  analysis::AnalysisOptions hta;
  hta.hta_compat = true;
  expectRankMatches(j, analysis::analyzeRank(trace::readTraceFile(kTrace), hta));

  dom::object counts;
  ASSERT_EQ(j["counts"].get_object().get(counts), simdjson::SUCCESS);
  EXPECT_EQ(integer(counts, "communication"), ref::hta::kCommunicationKernels);
  EXPECT_EQ(integer(counts, "computation"), ref::hta::kComputationKernels);
  EXPECT_EQ(integer(counts, "memory"), ref::hta::kMemoryEvents);
  EXPECT_NEAR(nanos(j, "comm_us"), ref::hta::kCommNs, ref::kWholeFileToleranceNs);
  EXPECT_NEAR(nanos(j, "overlap_us"), ref::hta::kOverlapNs, ref::kWholeFileToleranceNs);
  EXPECT_NEAR(number(j, "overlap_pct"), ref::hta::kOverlapPct, 0.005);
  EXPECT_NEAR(number(j, "idle_pct"), ref::hta::kIdlePct, 0.005);
  EXPECT_NEAR(number(j, "compute_pct"), ref::hta::kComputePct, 0.005);
  // The window drops the last step, and with it its five buckets.
  const auto steps = array(j, "steps");
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(integer(object(steps.at(0).value_unsafe(), "steps[0]"), "step"), 4);
  EXPECT_EQ(integer(object(steps.at(1).value_unsafe(), "steps[1]"), "step"), 5);
  EXPECT_EQ(array(j, "buckets").size(), 10u);
}

TEST(SummaryJsonExit, BadArgumentsExitTwoAndPrintNoJson) {
  const auto p = runCli("summary --json --no-such-flag '" + kTrace + "' 2>/dev/null");
  EXPECT_EQ(p.exit_status, 2);
  EXPECT_EQ(p.out.find("\"ranks\""), std::string::npos);
}

}  // namespace
