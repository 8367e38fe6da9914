#include "report_json.h"

#include <simdjson.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "app/analysis/bucket_steps.h"
#include "app/analysis/digest.h"
#include "app/analysis/run_summary.h"
#include "app/analysis/stragglers.h"
#include "tracer/format/file_io.h"
#include "tracer/format/json_text.h"

namespace ddpscope::analysis {

using trace::appendDouble;
using trace::appendInt;
using trace::appendJsonString;

namespace {

class JsonOut {
 public:
  explicit JsonOut(std::string& s) : s_(s) {}
  void key(const char* k) {
    comma();
    appendJsonString(s_, k);
    s_ += ": ";
    first_ = true;  // the value that follows needs no comma
    pending_value_ = true;
  }
  void open(char c) {
    comma();
    s_ += c;
    first_ = true;
    pending_value_ = false;
  }
  void close(char c) {
    s_ += c;
    first_ = false;
  }
  void num(double v, int decimals = 3) {
    comma();
    appendDouble(s_, v, decimals);
    first_ = false;
  }
  void integer(std::int64_t v) {
    comma();
    appendInt(s_, v);
    first_ = false;
  }
  void micros(TimeNs ns) { num(static_cast<double>(ns) / 1000.0, 3); }
  // v when known, else null.
  void integerOrNull(bool known, std::int64_t v) {
    if (known) {
      integer(v);
    } else {
      optional(std::nullopt);
    }
  }
  void str(std::string_view v) {
    comma();
    appendJsonString(s_, v);
    first_ = false;
  }
  void null() { optional(std::nullopt); }
  // A value already in JSON: `json` when it is exactly one JSON value, else it as a string.
  void rawOrString(std::string_view json) {
    simdjson::dom::parser parser;
    simdjson::dom::element value;
    if (parser.parse(simdjson::padded_string(json)).get(value) != simdjson::SUCCESS) {
      str(json);
      return;
    }
    comma();
    s_ += json;
    first_ = false;
  }
  // Microseconds of ns when known, else null.
  void microsOrNull(const std::optional<TimeNs>& ns) {
    optional(ns ? std::optional(static_cast<double>(*ns) / 1000.0) : std::nullopt);
  }
  // v when known, else null.
  void strOrNull(bool known, std::string_view v) {
    if (known) {
      str(v);
    } else {
      null();
    }
  }
  void boolean(bool v) {
    comma();
    s_ += v ? "true" : "false";
    first_ = false;
  }
  void optional(const std::optional<double>& v, int decimals = 3) {
    if (v) {
      num(*v, decimals);
    } else {
      comma();
      s_ += "null";
      first_ = false;
    }
  }

 private:
  void comma() {
    if (pending_value_) {
      pending_value_ = false;
      return;
    }
    if (!first_) s_ += ", ";
    first_ = false;
  }
  std::string& s_;
  bool first_ = true;
  bool pending_value_ = false;
};

void writeMetrics(JsonOut& j, const OverlapMetrics& m) {
  j.key("comm_us");
  j.micros(m.comm_ns);
  j.key("compute_us");
  j.micros(m.compute_ns);
  j.key("overlap_us");
  j.micros(m.overlap_ns);
  j.key("overlap_pct");
  j.optional(m.overlap_pct, 4);
  j.key("exposed_comm_us");
  j.micros(m.exposed_ns);
  j.key("span_us");
  j.micros(m.span_ns);
  j.key("idle_us");
  j.micros(m.idle_ns);
  j.key("idle_pct");
  j.optional(m.idle_pct, 4);
  j.key("compute_pct");
  j.optional(m.compute_pct, 4);
  j.key("non_compute_pct");
  j.optional(m.non_compute_pct, 4);
}

// A step's breakdown (docs/METRICS.md "Step breakdown"): its parts, in µs.
void writeBreakdown(JsonOut& j, const StepBreakdown& b) {
  j.open('{');
  j.key("compute_us");
  j.micros(b.compute_ns);
  j.key("hidden_comm_us");
  j.micros(b.hidden_comm_ns);
  j.key("exposed_comm_us");
  j.micros(b.exposed_comm_ns);
  j.key("exposed_wait_us");  // null when no collective of the rank was matched
  j.microsOrNull(b.exposed_wait_ns);
  j.key("exposed_transfer_us");
  j.microsOrNull(b.exposed_transfer_ns);
  j.key("memory_us");
  j.micros(b.memory_ns);
  j.key("other_us");
  j.micros(b.other_ns);
  j.key("idle_us");
  j.micros(b.idle_ns);
  j.key("idle_launch_pending_us");  // the idle split: null when the trace has no host launches
  j.microsOrNull(b.idle_launch_pending_ns);
  j.key("idle_data_loader_us");
  j.microsOrNull(b.idle_data_loader_ns);
  j.key("idle_host_bound_us");
  j.microsOrNull(b.idle_host_bound_ns);
  j.key("outside_us");
  j.micros(b.outside_ns);
  j.close('}');
}

// Per collective kind (allreduce, reduce_scatter, ...): `collectives` (docs/CLI.md). The split of
// exposed communication into waiting and transfer needs collectives matched across ranks; until
// a run has them the two figures are null.
void writeCollectives(JsonOut& j, const RankReport& r) {
  j.key("collectives");
  j.open('[');
  for (const auto& c : r.collectives) {
    j.open('{');
    j.key("kind");
    j.str(collectiveKindName(c.kind));
    j.key("count");
    j.integer(c.count);
    j.key("bytes");  // null when no kernel of this kind says its size
    j.integerOrNull(c.sized > 0, c.bytes);
    j.key("comm_us");
    j.micros(c.comm_ns);
    j.key("hidden_us");
    j.micros(c.hidden_ns);
    j.key("exposed_us");
    j.micros(c.exposed_ns);
    j.key("overlap_pct");
    j.optional(c.overlap_pct, 4);
    j.key("algbw_gbps");
    j.optional(c.algbw_gbps, 3);
    j.key("busbw_gbps");
    j.optional(c.busbw_gbps, 3);
    j.key("busbw_ranks");  // p of busbw; null when the kernels' process groups differ in size
    j.integerOrNull(c.busbw_gbps.has_value() && c.bw_ranks > 0, c.bw_ranks);
    j.key("bw_basis");  // the time the bandwidth divides by: "transfer" or "kernel"
    j.strOrNull(c.algbw_gbps.has_value(), bandwidthBasisKey(c.bw_basis));
    j.close('}');
  }
  j.close(']');
  j.key("exposed_wait_us");  // exposed communication inside waits for a late rank
  j.microsOrNull(r.exposed_wait_ns);
  j.key("exposed_transfer_us");  // the rest of it
  j.microsOrNull(r.exposed_transfer_ns);
  j.key("comm_wait_us");  // communication inside those waits, exposed or hidden
  j.microsOrNull(r.comm_wait_ns);
  // Collectives that waited for another one of their process group (null: not checked, the
  // trace names no process group or no launch).
  j.key("serialized_collectives");
  if (!r.serialization_checked) {
    j.null();
    return;
  }
  j.open('[');
  for (const auto& sc : r.serialized) {
    j.open('{');
    j.key("kind");
    j.str(collectiveKindName(sc.kind));
    j.key("stream");
    j.integer(sc.stream);
    j.key("group");
    j.str(sc.group);
    j.key("start_us");
    j.micros(sc.start_ns);
    j.key("waited_us");
    j.micros(sc.waited_ns);
    j.key("behind_kind");
    j.str(collectiveKindName(sc.behind_kind));
    j.key("behind_stream");
    j.integer(sc.behind_stream);
    j.close('}');
  }
  j.close(']');
}

// The run's late rank as the text names it (summarizeStragglers), null when none is: in
// summary --json's matched_collectives and at a digest's top level.
void writeLateRank(JsonOut& j, const RunReport& report) {
  const StragglerSummary late = summarizeStragglers(report);
  j.key("late_rank");
  j.integerOrNull(late.late_rank.has_value(), late.late_rank.value_or(0));
  j.key("late_rank_last_in");
  j.integer(late.late_count);
  j.key("collectives_with_skew");
  j.integer(late.skewed);
}

void writeMatched(JsonOut& j, const RunReport& report) {
  j.key("matched_collectives");
  j.open('{');
  j.key("matched_by");
  j.str(report.matched_by);
  writeLateRank(j, report);
  j.key("collectives");
  j.open('[');
  for (const auto& m : report.matched) {
    j.open('{');
    j.key("kind");
    j.str(collectiveKindName(m.kind));
    j.key("group");  // the process group named by the trace, null when it names none
    j.strOrNull(!m.group.empty(), m.group);
    j.key("seq");
    j.integerOrNull(m.seq >= 0, m.seq);
    j.key("index");
    j.integer(m.index);
    j.key("step");
    j.integerOrNull(m.step != trace::kNoStep, m.step);
    j.key("bytes");
    j.integerOrNull(m.bytes >= 0, m.bytes);
    j.key("last_rank");  // null: every rank started together
    j.integerOrNull(m.last_rank >= 0, m.last_rank);
    j.key("start_us");
    j.micros(m.first_start_ns);
    j.key("skew_us");
    j.micros(m.skew_ns);
    // Per rank; null for a rank outside the collective's group.
    for (const auto* key_values : {&m.wait_ns, &m.transfer_ns}) {
      j.key(key_values == &m.wait_ns ? "wait_us" : "transfer_us");
      j.open('[');
      for (std::size_t r = 0; r < key_values->size(); ++r) {
        if (m.involves(r)) {
          j.micros((*key_values)[r]);
        } else {
          j.null();
        }
      }
      j.close(']');
    }
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void writeRank(JsonOut& j, const RankReport& r) {
  j.open('{');
  j.key("rank");
  j.integer(r.rank);
  j.key("world_size");
  j.integer(r.world_size);
  j.key("source");
  j.str(r.source);
  j.key("path");
  j.str(r.path);
  j.key("incomplete");
  j.boolean(r.incomplete);
  j.key("dropped_records");
  j.integer(r.dropped_records);
  j.key("counts");
  j.open('{');
  for (int c = 0; c < kActivityClassCount; ++c) {
    j.key(std::string(className(static_cast<ActivityClass>(c))).c_str());
    j.integer(r.counts[static_cast<std::size_t>(c)]);
  }
  j.close('}');
  j.key("streams");
  j.open('[');
  for (const auto& s : r.streams) {
    j.open('{');
    j.key("device");
    j.integer(s.device);
    j.key("stream");
    j.integer(s.stream);
    j.key("role");
    j.str(streamRoleName(s.role));
    j.key("kernels");
    j.integer(s.counts[0] + s.counts[1]);
    j.key("events");
    j.integer(s.counts[0] + s.counts[1] + s.counts[2] + s.counts[3]);
    j.key("busy_us");
    j.micros(s.busy_ns);
    j.close('}');
  }
  j.close(']');
  writeMetrics(j, r.whole);
  j.key("steps");
  j.open('[');
  for (const auto& s : r.steps) {
    j.open('{');
    j.key("step");
    j.integer(s.step);
    j.key("start_us");
    j.micros(s.start_ns);
    j.key("dur_us");
    j.micros(s.dur_ns);
    writeMetrics(j, s.metrics);
    j.key("exposed_tail_us");
    j.micros(s.exposed_tail_ns);
    j.key("compute_critical_us");
    j.micros(s.compute_critical_ns);
    j.key("dp_efficiency");
    j.optional(s.dp_efficiency, 4);
    j.key("allreduces");
    j.integer(s.allreduces);
    j.key("matched_wait_us");  // null when none of the step's collectives was matched
    j.microsOrNull(s.matched_wait_ns);
    j.key("matched_transfer_us");
    j.microsOrNull(s.matched_transfer_ns);
    j.key("breakdown");
    writeBreakdown(j, s.breakdown);
    j.close('}');
  }
  j.close(']');
  j.key("buckets_inferred");
  j.boolean(r.buckets_inferred);
  j.key("buckets");
  j.open('[');
  for (const auto& b : r.buckets) {
    j.open('{');
    j.key("step");
    j.integer(b.step);
    j.key("id");
    j.integer(b.id);
    j.key("bytes");  // null: the size is unknown
    j.integerOrNull(b.bytes >= 0, b.bytes);
    j.key("tensors");  // null: an inferred bucket, whose tensors the trace does not list
    j.integerOrNull(b.tensors > 0, b.tensors);
    j.key("ready_us");
    j.micros(b.ready_ns);
    j.key("start_us");
    j.micros(b.start_ns);
    j.key("end_us");
    j.micros(b.end_ns);
    j.key("dur_us");
    j.micros(b.end_ns - b.start_ns);
    j.key("wait_us");
    j.micros(b.wait_ns);
    j.key("exposed_us");
    j.micros(b.exposed_ns);
    j.key("algbw_gbps");
    j.optional(b.algbw_gbps, 4);
    j.key("busbw_gbps");
    j.optional(b.busbw_gbps, 4);
    j.key("busbw_ranks");  // p of busbw: its process group's size, else the world's
    j.integerOrNull(b.busbw_gbps.has_value(), b.bw_ranks);
    j.key("bw_basis");
    j.strOrNull(b.algbw_gbps.has_value(), bandwidthBasisKey(b.bw_basis));
    j.key("inferred");
    j.boolean(b.inferred);
    j.close('}');
  }
  j.close(']');
  writeCollectives(j, r);
  j.key("violations");
  j.open('[');
  for (const auto& v : r.violations) {
    j.open('{');
    j.key("kind");
    j.str(violationKindName(v.kind));
    j.key("step");
    j.integer(v.step);
    j.key("bucket");
    j.integer(v.bucket);
    j.key("at_us");
    j.micros(v.at_ns);
    j.key("needed_us");
    j.micros(v.needed_ns);
    j.key("message");
    j.str(v.message);
    j.close('}');
  }
  j.close(']');
  j.key("warnings");
  j.open('[');
  for (const auto& w : r.warnings)
    j.str(w);
  j.close(']');
  j.close('}');
}

// The run summary (run_summary.h): the figures the app's headline and report state.
void writeRunSummary(JsonOut& j, const RunSummary& rs) {
  j.open('{');
  j.key("ranks");
  j.integer(rs.ranks);
  j.key("world_size");
  j.integer(rs.world_size);
  j.key("missing_ranks");
  j.open('[');
  for (auto r : rs.missing_ranks)
    j.integer(r);
  j.close(']');
  j.key("first_quiet_rank");  // with traces cut short: the rank whose GPU work ends first
  j.integerOrNull(rs.first_quiet_rank >= 0, rs.first_quiet_rank);
  j.key("first_quiet_ahead_us");  // ... by this much before any other rank's
  j.microsOrNull(rs.first_quiet_rank >= 0 ? std::optional(rs.first_quiet_ahead_ns) : std::nullopt);
  j.key("steps_used");
  j.open('[');
  for (auto n : rs.selection.used)
    j.integer(n);
  j.close(']');
  j.key("steps_cut_short");
  j.open('[');
  for (auto n : rs.selection.cut_short)
    j.integer(n);
  j.close(']');
  j.key("step_rule");
  j.str(rs.selection.rule);
  j.key("whole_trace");
  j.boolean(rs.selection.whole_trace);
  j.key("step_us");  // null without steps
  j.optional(rs.hasSteps() ? std::optional(static_cast<double>(rs.step_ns) / 1000.0)
                           : std::nullopt);
  j.key("overlap_pct");
  j.optional(rs.overlap_pct, 4);
  j.key("exposed_comm_per_step_us");  // null for a whole-trace summary
  j.optional(rs.hasSteps() ? std::optional(static_cast<double>(rs.exposed_ns_per_step) / 1000.0)
                           : std::nullopt);
  // Of it, waiting for a late rank (matched collectives); null without steps or matching.
  j.key("exposed_wait_per_step_us");
  j.optional(rs.exposed_wait_ns_per_step
                 ? std::optional(static_cast<double>(*rs.exposed_wait_ns_per_step) / 1000.0)
                 : std::nullopt);
  j.key("exposed_comm_us");  // per rank over the whole trace, for a whole-trace summary
  j.optional(rs.hasSteps() ? std::nullopt
                           : std::optional(static_cast<double>(rs.exposed_ns_per_step) / 1000.0));
  j.key("dp_efficiency");
  j.optional(rs.dp_efficiency, 6);
  j.key("gpu_idle_pct");
  j.optional(rs.gpu_idle_pct, 4);
  // Per step: null for a whole-trace summary; the bucket wait is null without buckets.
  j.key("allreduces_per_step");
  j.optional(rs.hasSteps() ? std::optional(rs.allreduces_per_step) : std::nullopt, 3);
  j.key("buckets_per_step");
  j.integerOrNull(rs.hasSteps(), rs.buckets_per_step);
  j.key("mean_bucket_wait_us");
  j.optional(rs.buckets_per_step > 0
                 ? std::optional(static_cast<double>(rs.mean_bucket_wait_ns) / 1000.0)
                 : std::nullopt);
  // What the trace says it was recorded with (bucketSettingText, overlapSetting); null when it
  // does not say (imported traces).
  j.key("bucket_setting");
  j.strOrNull(!rs.bucket_setting.empty(), rs.bucket_setting);
  j.key("overlap_setting");
  if (rs.overlap_setting)
    j.boolean(*rs.overlap_setting);
  else
    j.null();
  j.close('}');
}

}  // namespace

std::string digestToJson(const RunReport& report, const std::vector<DigestFile>& files,
                         const DigestProducer& producer) {
  std::string s;
  JsonOut j(s);
  j.open('{');
  j.key("ddpscope_digest");
  j.integer(kDigestVersion);
  j.key("run");
  writeRunSummary(j, summarizeRun(report));
  j.key("rules");
  j.str(report.rules);
  j.key("matched_by");
  j.str(report.matched_by);
  j.key("matched_collectives");
  j.integer(static_cast<std::int64_t>(report.matched.size()));
  writeLateRank(j, report);  // as summary --json's matched_collectives gives it
  j.key("producer");
  j.open('{');
  j.key("distributed_backend");
  j.strOrNull(!producer.distributed_backend.empty(), producer.distributed_backend);
  j.key("config");
  j.open('{');
  for (const auto& [key, value] : producer.block.config) {
    j.key(key.c_str());
    j.rawOrString(value);
  }
  j.close('}');
  j.close('}');
  j.key("warnings");
  j.open('[');
  for (const auto& w : report.warnings)
    j.str(w);
  j.close(']');
  j.key("ranks");
  j.open('[');
  for (std::size_t i = 0; i < report.ranks.size(); ++i) {
    const RankReport& r = report.ranks[i];
    s += "\n  ";  // a rank per line: the file stays readable and diffable
    j.open('{');
    j.key("rank");
    j.integer(r.rank);
    j.key("world_size");
    j.integer(r.world_size);
    j.key("source");
    j.str(r.source);
    j.key("incomplete");
    j.boolean(r.incomplete);
    if (i < files.size()) {
      j.key("file");
      j.str(files[i].name);
      j.key("file_bytes");
      j.integer(static_cast<std::int64_t>(files[i].bytes));
      j.key(fileHashKey(files[i].hash_kind));
      j.str(trace::hashHex(files[i].hash));
    }
    writeMetrics(j, r.whole);
    j.key("exposed_wait_us");
    j.microsOrNull(r.exposed_wait_ns);
    j.key("exposed_transfer_us");
    j.microsOrNull(r.exposed_transfer_ns);
    j.key("steps");
    j.open('[');
    for (const auto& st : r.steps) {
      j.open('{');
      j.key("step");
      j.integer(st.step);
      j.key("dur_us");
      j.micros(st.dur_ns);
      j.key("overlap_pct");
      j.optional(st.metrics.overlap_pct, 4);
      j.key("exposed_comm_us");
      j.micros(st.metrics.exposed_ns);
      j.key("dp_efficiency");
      j.optional(st.dp_efficiency, 4);
      j.key("matched_wait_us");
      j.microsOrNull(st.matched_wait_ns);
      j.key("matched_transfer_us");
      j.microsOrNull(st.matched_transfer_ns);
      j.close('}');
    }
    j.close(']');
    j.key("warnings");
    j.open('[');
    for (const auto& w : r.warnings)
      j.str(w);
    j.close(']');
    j.close('}');
  }
  s += "\n";
  j.close(']');
  j.close('}');
  s += '\n';
  return s;
}

std::string reportToJson(const RunReport& report) {
  std::string s;
  JsonOut j(s);
  j.open('{');
  j.key("run");
  writeRunSummary(j, summarizeRun(report));
  j.key("rules");  // how GPU activity was classified (docs/RULES.md)
  j.str(report.rules);
  j.key("window");  // what the per-rank figures cover
  j.str(report.hta_window ? "hta" : "whole trace");
  j.key("ranks");
  j.open('[');
  for (const auto& r : report.ranks)
    writeRank(j, r);
  j.close(']');
  j.key("warnings");  // about the files as a run (each rank has its own too)
  j.open('[');
  for (const auto& w : report.warnings)
    j.str(w);
  j.close(']');
  j.key("missing_ranks");
  j.open('[');
  for (auto r : report.completeness.missing_ranks)
    j.integer(r);
  j.close(']');
  writeMatched(j, report);
  j.key("stragglers");
  j.open('[');
  for (const auto& st : report.stragglers) {
    j.open('{');
    j.key("step");
    j.integer(st.step);
    j.key("bucket");
    j.integer(st.bucket);
    j.key("last_rank");
    j.integer(st.last_rank);
    j.key("spread_us");
    j.micros(st.spread_ns);
    j.key("margin_us");
    j.micros(st.margin_ns);
    j.close('}');
  }
  j.close(']');
  j.key("step_spread");
  j.open('[');
  for (const auto& sp : report.step_spread) {
    j.open('{');
    j.key("step");
    j.integer(sp.step);
    j.key("min_us");
    j.micros(sp.min_ns);
    j.key("max_us");
    j.micros(sp.max_ns);
    j.key("mean_us");
    j.micros(sp.mean_ns);
    j.key("slowest_rank");  // null: every rank took the same time
    j.integerOrNull(sp.slowest_rank >= 0, sp.slowest_rank);
    j.close('}');
  }
  j.close(']');
  j.close('}');
  s += '\n';
  return s;
}

std::string formatDuration(TimeNs ns) {
  return formatDuration(ns, 0);
}

std::vector<std::string> distinctDurations(const std::vector<TimeNs>& ns) {
  std::vector<std::string> out;
  for (int extra = 0; extra <= 3; ++extra) {
    out.clear();
    for (const TimeNs v : ns)
      out.push_back(formatDuration(v, extra));
    bool clash = false;
    for (std::size_t i = 0; i < ns.size() && !clash; ++i)
      for (std::size_t j = i + 1; j < ns.size() && !clash; ++j)
        clash = ns[i] != ns[j] && out[i] == out[j];
    if (!clash) break;
  }
  return out;
}

std::string formatDuration(TimeNs ns, int extra) {
  const double v = static_cast<double>(ns);
  const double a = std::fabs(v);
  const char* unit = "ns";
  double scaled = v;
  if (a >= 1e9) {
    unit = "s";
    scaled = v / 1e9;
  } else if (a >= 1e6) {
    unit = "ms";
    scaled = v / 1e6;
  } else if (a >= 1e3) {
    unit = "µs";
    scaled = v / 1e3;
  }
  char buf[64];
  const double as = std::fabs(scaled);
  const int decimals = unit[0] == 'n' && unit[1] == 's' ? 0
                                                        : (as >= 100  ? 0
                                                           : as >= 10 ? 1
                                                                      : 2) +
                                                              extra;
  std::snprintf(buf, sizeof buf, "%.*f %s", decimals, scaled, unit);
  return buf;
}

namespace {
std::string pctText(const std::optional<double>& v) {
  if (!v) return "n/a";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f %%", *v);
  return buf;
}
}  // namespace

std::string runSummaryText(const RunSummary& rs) {
  const RunFigureText t = runFigureText(rs);
  std::string s = "run: " + t.ranks + ", " + t.scope + "\n";
  if (!rs.bucket_setting.empty())
    s += "  recorded with buckets " + rs.bucket_setting +
         (rs.overlap_setting == false  ? ", not overlapped"
          : rs.overlap_setting == true ? ", overlapped with backward"
                                       : "") +
         "\n";
  s += "  step " + t.step + " (slowest rank, mean) · overlap " + t.overlap + " · exposed " +
       t.exposed + " · DP efficiency " + t.dp_efficiency + " · GPU idle " + t.gpu_idle + "\n";
  if (const auto why = overlapReading(rs); !why.empty()) s += "  " + why + "\n";
  return s;
}

std::size_t textColumns(std::string_view s) {
  std::size_t columns = 0;
  for (unsigned char c : s)
    columns += (c & 0xC0) != 0x80;
  return columns;
}

std::string padded(const std::string& s, std::size_t width) {
  const std::size_t columns = textColumns(s);
  return columns >= width ? s : s + std::string(width - columns, ' ');
}

namespace {

// Rows keyed by step, consecutive steps with the same text folded into one: (first step, last
// step, text). A run of identical steps reads as one row ("0–5"), a change as a row of its own.
struct FoldedRow {
  std::int32_t first, last;
  std::string text;
};
std::vector<FoldedRow> foldSteps(const std::vector<std::pair<std::int32_t, std::string>>& rows) {
  std::vector<FoldedRow> out;
  for (const auto& [step, text] : rows) {
    if (!out.empty() && out.back().text == text && out.back().last + 1 == step)
      out.back().last = step;
    else
      out.push_back({step, step, text});
  }
  return out;
}
std::string stepRangeText(const FoldedRow& r) {
  return r.first == r.last ? std::to_string(r.first)
                           : std::to_string(r.first) + "–" + std::to_string(r.last);
}

std::string fixed(double v, int decimals) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

// Per kind: count, bytes, time, overlap and bus bandwidth; then the serialisation check.
std::string collectivesText(const RankReport& r) {
  std::string s;
  for (const auto& c : r.collectives) {
    std::string bw;
    if (c.busbw_gbps) {
      const std::string ranks = busbwRanksNote(c.bw_ranks, r.world_size);
      bw = ", busbw " + fixed(*c.busbw_gbps, 1) + " GB/s (" +
           std::string(bandwidthBasisText(c.bw_basis)) + (ranks.empty() ? "" : "; " + ranks) + ")";
    }
    std::string bytes =
        c.sized > 0 ? fixed(static_cast<double>(c.bytes) / (1 << 20), 1) + " MiB, " : "";
    s += "  " + padded(std::string(collectiveKindName(c.kind)), 14) + "  " +
         std::to_string(c.count) + " kernels, " + bytes + formatDuration(c.comm_ns) + ", overlap " +
         pctText(c.overlap_pct) + ", exposed " + formatDuration(c.exposed_ns) + bw + "\n";
  }
  if (r.serialization_checked) {
    TimeNs waited = 0;
    for (const auto& sc : r.serialized)
      waited += sc.waited_ns;
    s += r.serialized.empty()
             ? "  serialisation   no collective waited for another of its process group\n"
             : "  serialisation   " + std::to_string(r.serialized.size()) +
                   " collectives waited for another of their process group on another stream (" +
                   formatDuration(waited) + " in all)\n";
  }
  return s;
}

// How the collectives were matched across ranks, their skew, and the late rank
// (summarizeStragglers: the one that started last at more than half of the skewed ones).
std::string matchedText(const RunReport& report) {
  if (report.matched.empty()) return {};
  TimeNs skew_sum = 0, skew_max = 0;
  for (const auto& m : report.matched) {
    skew_sum += m.skew_ns;
    skew_max = std::max(skew_max, m.skew_ns);
  }
  std::string s = "matched collectives: " + std::to_string(report.matched.size()) + ", by " +
                  report.matched_by + "; arrival skew mean " +
                  formatDuration(skew_sum / static_cast<TimeNs>(report.matched.size())) + ", max " +
                  formatDuration(skew_max) + "\n";
  const StragglerSummary st = summarizeStragglers(report);
  if (st.late_rank) {
    s += "  late rank: " + std::to_string(*st.late_rank) + ", last at " +
         std::to_string(st.late_count) + " of the " + std::to_string(st.skewed) +
         " collectives with a skew\n";
  } else if (st.skewed > 0) {
    s += "  no rank was last at more than half of the " + std::to_string(st.skewed) +
         " collectives with a skew\n";
  }
  // The skews are those among the ranks with a trace: a late rank among those missing shows in
  // none of them.
  if (const auto& missing = report.completeness.missing_ranks; !missing.empty())
    s += std::string("  the skews and the late rank are among the ranks with a trace; ") +
         (missing.size() == 1 ? "rank " : "ranks ") + rankRanges(missing) +
         (missing.size() == 1 ? " has no trace, and may have started later\n"
                              : " have no trace, and a later rank may be among them\n");
  if (st.wait_pct && st.transfer_pct) {
    s += "  exposed communication (whole trace): waiting for a late rank " +
         fixed(*st.wait_pct, 1) + " %, transfer not hidden " + fixed(*st.transfer_pct, 1) + " %\n";
  }
  if (st.transfer_overlap_pct && st.hidden_wait_ns && *st.hidden_wait_ns > 0) {
    s += "  transfers alone (whole trace, waits for a late rank left out): " +
         fixed(*st.transfer_overlap_pct, 2) + " % overlapped, against " +
         pctText(st.whole_overlap_pct) + " with the waits over the same traces; " +
         formatDuration(*st.hidden_wait_ns) +
         " of waiting (summed over the ranks) ran under compute and counts as hidden\n";
  }
  return s;
}

// One row per bucket id: the mean over the ranks and the run summary's steps (bucketMeans).
std::string bucketMeansText(const RunReport& report, const RunSummary& summary) {
  const auto means = bucketMeans(report, summary.selection);
  if (means.empty()) return {};
  const bool inferred = std::any_of(report.ranks.begin(), report.ranks.end(),
                                    [](const RankReport& r) { return r.buckets_inferred; });
  std::string s = std::string("buckets") + (inferred ? " (inferred from allreduce kernels)" : "") +
                  ": mean per bucket over the ranks and " +
                  (summary.selection.whole_trace ? "the whole trace" : "the run's steps") +
                  " (--bucket-steps: each rank's and step's)\n";
  s += "  id    MiB       samples  queued     allreduce  hidden     exposed\n";
  for (const auto& m : means) {
    char mib[32] = "n/a";
    if (m.bytes >= 0)
      std::snprintf(mib, sizeof mib, "%.3f", static_cast<double>(m.bytes) / (1 << 20));
    const auto ns = [](double v) { return formatDuration(static_cast<TimeNs>(std::llround(v))); };
    s += "  " + padded(std::to_string(m.id), 4) + "  " + padded(mib, 8) + "  " +
         padded(std::to_string(m.samples), 7) + "  " + padded(ns(m.wait_ns), 9) + "  " +
         padded(ns(m.hidden_ns + m.exposed_ns), 9) + "  " + padded(ns(m.hidden_ns), 9) + "  " +
         ns(m.exposed_ns) + "\n";
  }
  return s + "\n";
}

}  // namespace

std::string reportToText(const RunReport& report, const TextOptions& options) {
  std::string s;
  char line[512];
  for (const auto& w : report.warnings)
    s += "warning: " + w + "\n";
  if (!report.warnings.empty()) s += "\n";
  const RunSummary summary = summarizeRun(report);
  s += runSummaryText(summary);
  if (report.hta_window)
    s += "  in Holistic Trace Analysis's window (--hta-compat): work launched from the last "
         "ProfilerStep#'s start on is left out, so that step is not covered (and with under 3 "
         "steps left, none is dropped as warm-up)\n";
  // The late rank belongs to the run's reading, not only to the matched-collectives section.
  if (const StragglerSummary st = summarizeStragglers(report); st.late_rank) {
    s += "  late rank " + std::to_string(*st.late_rank) + ": the last to start " +
         std::to_string(st.late_count) + " of the " + std::to_string(st.skewed) +
         " collectives with a skew (matched collectives, below" +
         (report.completeness.missing_ranks.empty() ? ")\n"
                                                    : "; among the ranks with a trace only)\n");
  }
  s += "\n";
  if (!options.bucket_steps) s += bucketMeansText(report, summary);
  if (report.rules != "built-in") s += "classification rules: " + report.rules + "\n\n";
  if (!report.ranks.empty()) {
    s += report.hta_window
             ? "per rank, in Holistic Trace Analysis's window (--hta-compat: the events launched "
               "before the last ProfilerStep# begins; steps: each step's own figures)\n\n"
             : "per rank, over the whole trace (steps: each step's own figures)\n\n";
  }
  for (const auto& r : report.ranks) {
    std::snprintf(line, sizeof line, "rank %d of %d  [%s]%s  %s\n", r.rank, r.world_size,
                  r.source == "sim"         ? "SIMULATED"
                  : r.source == "cuda"      ? "CUDA"
                  : r.source == "predicted" ? "PREDICTED"
                                            : "IMPORTED",
                  r.incomplete ? "  INCOMPLETE" : "", r.path.c_str());
    s += line;
    std::snprintf(
        line, sizeof line,
        "  GPU events      communication %lld, computation %lld, memory %lld, other %lld\n",
        static_cast<long long>(r.counts[0]), static_cast<long long>(r.counts[1]),
        static_cast<long long>(r.counts[2]), static_cast<long long>(r.counts[3]));
    s += line;
    for (const auto& st : r.streams) {
      std::snprintf(line, sizeof line, "  stream %-8s device %lld, %s, busy %s\n",
                    streamText(st.stream).c_str(), static_cast<long long>(st.device),
                    std::string(streamRoleName(st.role)).c_str(),
                    formatDuration(st.busy_ns).c_str());
      s += line;
    }
    const auto& m = r.whole;
    std::snprintf(line, sizeof line,
                  "  overlap         %s  (communication %s, hidden %s, exposed %s)\n",
                  pctText(m.overlap_pct).c_str(), formatDuration(m.comm_ns).c_str(),
                  formatDuration(m.overlap_ns).c_str(), formatDuration(m.exposed_ns).c_str());
    s += line;
    if (r.exposed_wait_ns && r.exposed_transfer_ns) {
      s += "  exposed split   waiting for a late rank " + formatDuration(*r.exposed_wait_ns) +
           ", transfer not hidden " + formatDuration(*r.exposed_transfer_ns) + "\n";
    }
    if (const auto h = hiddenSplit(r); h && h->hidden_wait_ns > 0) {
      // The overlap counts a wait under compute as hidden: the transfers' own overlap beside it.
      s += "  hidden split    waiting for a late rank " + formatDuration(h->hidden_wait_ns) +
           ", transfer " + formatDuration(h->hidden_transfer_ns) +
           (h->transfer_overlap_pct
                ? "; transfers alone " + pctText(h->transfer_overlap_pct) + " overlapped"
                : std::string()) +
           "\n";
    }
    s += collectivesText(r);
    if (m.idle_pct && m.compute_pct && m.non_compute_pct) {
      std::snprintf(line, sizeof line,
                    "  time breakdown  gaps %.2f %%, compute %.2f %%, non-compute %.2f %% of %s "
                    "(first to last GPU activity)\n",
                    *m.idle_pct, *m.compute_pct, *m.non_compute_pct,
                    formatDuration(m.span_ns).c_str());
      s += line;
    } else {
      s += "  time breakdown  n/a (no GPU activity)\n";
    }
    if (!r.steps.empty()) {
      std::vector<std::pair<std::int32_t, std::string>> rows;
      for (const auto& st : r.steps)
        rows.emplace_back(
            st.step, padded(formatDuration(st.dur_ns), 10) + "  " +
                         padded(pctText(st.metrics.overlap_pct), 10) + "  " +
                         padded(formatDuration(st.metrics.exposed_ns), 9) + "  " +
                         padded(formatDuration(st.exposed_tail_ns), 9) + "  " +
                         padded(st.dp_efficiency ? pctText(*st.dp_efficiency * 100) : "n/a", 8) +
                         "  " + std::to_string(st.allreduces));
      // Steps whose figures print the same are one row: "0–5". The step column is as wide as
      // its widest range ("1000–1999"), 8 at least.
      const auto folded = foldSteps(rows);
      std::size_t width = 8;
      for (const auto& f : folded)
        width = std::max(width, textColumns(stepRangeText(f)));
      s += "  " + padded("step", width) +
           "  time        overlap     exposed    tail       DP eff.   allreduces\n";
      for (const auto& f : folded)
        s += "  " + padded(stepRangeText(f), width) + "  " + f.text + "\n";
    }
    if (!r.buckets.empty() && options.bucket_steps) {
      s += r.buckets_inferred ? "  buckets (inferred from allreduce kernels)\n" : "  buckets\n";
      s += "  step  id    MiB       queued     duration   exposed    busbw\n";
      bool kernel_time = false, transfer = false;
      for (const auto& b : r.buckets) {
        char bw[32] = "n/a";
        if (b.busbw_gbps) {
          const bool waits = b.bw_basis == BandwidthBasis::Kernel;
          kernel_time = kernel_time || waits;
          transfer = transfer || !waits;
          std::snprintf(bw, sizeof bw, "%.1f GB/s%s", *b.busbw_gbps, waits ? " *" : "");
        }
        char mib[32] = "n/a";
        if (b.bytes >= 0) {
          std::snprintf(mib, sizeof mib, "%.3f", static_cast<double>(b.bytes) / (1 << 20));
        }
        s += "  " + padded(b.step == trace::kNoStep ? "-" : std::to_string(b.step), 4) + "  " +
             padded(std::to_string(b.id), 4) + "  " + padded(mib, 8) + "  " +
             padded(formatDuration(b.wait_ns), 9) + "  " +
             padded(formatDuration(b.end_ns - b.start_ns), 9) + "  " +
             padded(formatDuration(b.exposed_ns), 9) + "  " + bw + "\n";
      }
      if (transfer) s += "  " + std::string(kTransferBandwidthNote) + "\n";
      if (kernel_time) {
        s += "  " + std::string(kKernelTimeBandwidthNote) + "\n";
      }
    }
    if (!r.violations.empty()) {
      s += "  dependency violations:\n";
      for (const auto& v : r.violations)
        s += "    " + v.message + "\n";
    } else if (!r.buckets.empty() && !r.buckets_inferred) {
      s += "  dependency check: no violations\n";
    }
    for (const auto& w : r.warnings)
      s += "  warning: " + w + "\n";
    s += "\n";
  }
  // Who made the others wait: per rank, the allreduces it reached last.
  std::map<std::int32_t, std::pair<std::int32_t, TimeNs>> last;  // rank -> (count, margin sum)
  for (const auto& st : report.stragglers) {
    auto& [count, margin] = last[st.last_rank];
    ++count;
    margin += st.margin_ns;
  }
  if (!last.empty()) {
    std::vector<std::pair<std::int32_t, std::int32_t>> by_count;  // (count, rank)
    for (const auto& [rank, cm] : last)
      by_count.emplace_back(cm.first, rank);
    std::sort(by_count.begin(), by_count.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first > b.first : a.second < b.second;
    });
    // By when each rank's bucket was ready (every step with buckets), not by when its allreduce
    // started: the matched collectives below measure that, over their own set.
    std::snprintf(line, sizeof line,
                  "stragglers: in %zu bucket allreduces one rank's bucket was ready last\n",
                  report.stragglers.size());
    s += line;
    for (std::size_t i = 0; i < by_count.size() && i < 5; ++i) {
      const auto [count, rank] = by_count[i];
      std::snprintf(line, sizeof line,
                    "  rank %d: %d times, ready %s after the next rank on average\n", rank, count,
                    formatDuration(last[rank].second / count).c_str());
      s += line;
    }
  }
  s += matchedText(report);
  std::vector<std::pair<std::int32_t, std::string>> spread;
  for (const auto& sp : report.step_spread) {
    if (sp.slowest_rank >= 0) {
      // As many digits as it takes for a min and max that differ not to read the same.
      const auto both = distinctDurations({sp.min_ns, sp.max_ns});
      std::snprintf(line, sizeof line, "min %s, max %s (rank %d)", both[0].c_str(), both[1].c_str(),
                    sp.slowest_rank);
    } else {
      std::snprintf(line, sizeof line, "%s on every rank", formatDuration(sp.min_ns).c_str());
    }
    spread.emplace_back(sp.step, line);
  }
  for (const auto& f : foldSteps(spread))
    s += (f.first == f.last ? "step " : "steps ") + stepRangeText(f) + " across ranks: " + f.text +
         "\n";
  return s;
}

}  // namespace ddpscope::analysis
