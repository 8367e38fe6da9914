#include "app/analysis/digest_reader.h"

#include <simdjson.h>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <stdexcept>

#include "tracer/format/file_io.h"
#include "tracer/format/json_locate.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"

namespace ddpscope::analysis {

namespace {

using simdjson::dom::element;

// Where a field sits, for messages: "rank 3, step 5: ".
class Reader {
 public:
  Reader(std::string name, std::string where) : name_(std::move(name)), where_(std::move(where)) {}

  [[noreturn]] void fail(const std::string& what) const {
    throw trace::TraceError(name_, trace::kNoOffset, where_ + what);
  }
  element field(element obj, const char* key) const {
    element v;
    if (obj[key].get(v) != simdjson::SUCCESS) fail(std::string("no \"") + key + "\" field");
    return v;
  }
  std::int64_t integer(element obj, const char* key) const {
    std::int64_t v = 0;
    if (field(obj, key).get_int64().get(v) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not an integer");
    return v;
  }
  std::int32_t int32(element obj, const char* key) const {
    const std::int64_t v = integer(obj, key);
    if (v < INT32_MIN || v > INT32_MAX) fail(std::string("\"") + key + "\" is out of range");
    return static_cast<std::int32_t>(v);
  }
  std::optional<double> number(element obj, const char* key) const {
    const element v = field(obj, key);
    if (v.is_null()) return std::nullopt;
    double d = 0;
    if (v.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d))
      fail(std::string("\"") + key + "\" is not a number or null");
    return d;
  }
  double required(element obj, const char* key) const {
    const auto v = number(obj, key);
    if (!v) fail(std::string("\"") + key + "\" is null");
    return *v;
  }
  // Microseconds with three decimals, as the digest writes them, back to nanoseconds. Every
  // duration a digest keeps is at least 0 (a bucket's queued time aside: `may_be_negative`).
  std::optional<TimeNs> micros(element obj, const char* key, bool may_be_negative = false) const {
    const auto us = number(obj, key);
    if (!us) return std::nullopt;
    if (std::fabs(*us) > 9.0e12) fail(std::string("\"") + key + "\" is out of range");
    if (*us < 0 && !may_be_negative)
      fail(std::string("\"") + key + "\" is negative (a duration; was the file edited?)");
    return static_cast<TimeNs>(std::llround(*us * 1000.0));
  }
  TimeNs requiredMicros(element obj, const char* key) const {
    const auto ns = micros(obj, key);
    if (!ns) fail(std::string("\"") + key + "\" is null");
    return *ns;
  }
  std::string text(element obj, const char* key) const {
    std::string_view s;
    if (field(obj, key).get_string().get(s) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not a string");
    return std::string(s);
  }
  // A field a digest may lack (added to the format later; absent reads as null).
  bool has(element obj, const char* key) const {
    element v;
    return obj[key].get(v) == simdjson::SUCCESS && !v.is_null();
  }
  bool boolean(element obj, const char* key) const {
    bool b = false;
    if (field(obj, key).get_bool().get(b) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not true or false");
    return b;
  }
  simdjson::dom::array array(element obj, const char* key) const {
    simdjson::dom::array a;
    if (field(obj, key).get_array().get(a) != simdjson::SUCCESS)
      fail(std::string("\"") + key + "\" is not an array");
    return a;
  }
  simdjson::dom::object object(element v, const char* what) const {
    simdjson::dom::object o;
    if (v.get_object().get(o) != simdjson::SUCCESS) fail(std::string(what) + " is not an object");
    return o;
  }
  std::vector<std::string> strings(element obj, const char* key) const {
    std::vector<std::string> out;
    for (element v : array(obj, key)) {
      std::string_view s;
      if (v.get_string().get(s) != simdjson::SUCCESS)
        fail(std::string("\"") + key + "\" holds a non-string");
      out.emplace_back(s);
    }
    return out;
  }
  std::vector<std::int32_t> integers(element obj, const char* key) const {
    std::vector<std::int32_t> out;
    for (element v : array(obj, key)) {
      std::int64_t n = 0;
      if (v.get_int64().get(n) != simdjson::SUCCESS || n < INT32_MIN || n > INT32_MAX)
        fail(std::string("\"") + key + "\" holds something other than integers");
      out.push_back(static_cast<std::int32_t>(n));
    }
    return out;
  }

 private:
  std::string name_;
  std::string where_;
};

// Version 3's producer: its distributed backend and its block's run settings, each setting as
// JSON text (a number as simdjson writes it back: compared by value, as settings are).
DigestProducer readProducer(const Reader& r, element producer) {
  r.object(producer, "\"producer\"");
  DigestProducer p;
  if (r.has(producer, "distributed_backend"))
    p.distributed_backend = r.text(producer, "distributed_backend");
  for (const auto [key, value] : r.object(r.field(producer, "config"), "\"config\""))
    p.block.config.emplace_back(std::string(key), simdjson::minify(value));
  p.block.present = !p.block.config.empty();
  return p;
}

RunSummary readRun(const Reader& r, element run) {
  r.object(run, "\"run\"");
  RunSummary s;
  s.ranks = r.int32(run, "ranks");
  s.world_size = r.int32(run, "world_size");
  s.missing_ranks = r.integers(run, "missing_ranks");
  if (r.has(run, "first_quiet_rank")) {  // added within version 3
    const auto ahead = r.micros(run, "first_quiet_ahead_us");
    if (ahead) {
      s.first_quiet_rank = r.int32(run, "first_quiet_rank");
      s.first_quiet_ahead_ns = *ahead;
    }
  }
  s.selection.used = r.integers(run, "steps_used");
  s.steps_used = static_cast<std::int32_t>(s.selection.used.size());
  s.selection.rule = r.text(run, "step_rule");
  s.selection.whole_trace = r.boolean(run, "whole_trace");
  s.step_ns = r.micros(run, "step_us").value_or(0);
  s.overlap_pct = r.number(run, "overlap_pct");
  // Per step with steps; per rank over the whole trace without (RunSummary keeps either in one).
  s.exposed_ns_per_step = s.hasSteps() ? r.micros(run, "exposed_comm_per_step_us").value_or(0)
                                       : r.micros(run, "exposed_comm_us").value_or(0);
  // Added within version 2: absent from the digests written before it.
  if (r.has(run, "exposed_wait_per_step_us"))
    s.exposed_wait_ns_per_step = r.micros(run, "exposed_wait_per_step_us");
  s.dp_efficiency = r.number(run, "dp_efficiency");
  s.gpu_idle_pct = r.number(run, "gpu_idle_pct");
  s.allreduces_per_step = r.number(run, "allreduces_per_step").value_or(0);
  const element buckets = r.field(run, "buckets_per_step");
  s.buckets_per_step = buckets.is_null() ? 0 : r.int32(run, "buckets_per_step");
  s.mean_bucket_wait_ns = r.micros(run, "mean_bucket_wait_us", true).value_or(0);
  if (r.has(run, "bucket_setting")) s.bucket_setting = r.text(run, "bucket_setting");
  if (r.has(run, "overlap_setting")) s.overlap_setting = r.boolean(run, "overlap_setting");
  return s;
}

DigestStep readStep(const Reader& r, element st) {
  DigestStep s;
  s.step = r.int32(st, "step");
  s.dur_ns = r.requiredMicros(st, "dur_us");
  s.overlap_pct = r.number(st, "overlap_pct");
  s.exposed_ns = r.requiredMicros(st, "exposed_comm_us");
  s.dp_efficiency = r.number(st, "dp_efficiency");
  s.matched_wait_ns = r.micros(st, "matched_wait_us");
  s.matched_transfer_ns = r.micros(st, "matched_transfer_us");
  return s;
}

std::uint64_t parseHash(const Reader& r, const std::string& hex, const char* key) {
  if (hex.size() != 16 || hex.find_first_not_of("0123456789abcdef") != std::string::npos)
    r.fail(std::string("\"") + key + "\" is not 16 hex digits");
  return std::stoull(hex, nullptr, 16);
}

DigestRank readRank(const std::string& name, element obj, std::size_t index, int version) {
  const Reader at_index(name, "ranks[" + std::to_string(index) + "]: ");
  at_index.object(obj, "the entry");
  DigestRank k;
  k.rank = at_index.int32(obj, "rank");
  const Reader r(name, "rank " + std::to_string(k.rank) + ": ");
  k.world_size = r.int32(obj, "world_size");
  k.source = r.text(obj, "source");
  k.incomplete = r.boolean(obj, "incomplete");
  element file;
  if (obj["file"].get(file) == simdjson::SUCCESS) {
    DigestFile f;
    f.name = r.text(obj, "file");
    if (f.name.empty() || f.name.find('/') != std::string::npos || f.name == "." || f.name == "..")
      r.fail("\"file\" is not a file name: \"" + f.name + "\"");
    const std::int64_t bytes = r.integer(obj, "file_bytes");
    if (bytes < 0) r.fail("\"file_bytes\" is negative");
    f.bytes = static_cast<std::uint64_t>(bytes);
    // Version 1 hashed with FNV-1a.
    f.hash_kind = version == 1 ? FileHashKind::Fnv1a : FileHashKind::Xxh3;
    const char* key = fileHashKey(f.hash_kind);
    f.hash = parseHash(r, r.text(obj, key), key);
    k.file = std::move(f);
  }
  OverlapMetrics& m = k.whole;
  m.comm_ns = r.requiredMicros(obj, "comm_us");
  m.compute_ns = r.requiredMicros(obj, "compute_us");
  m.overlap_ns = r.requiredMicros(obj, "overlap_us");
  m.overlap_pct = r.number(obj, "overlap_pct");
  m.exposed_ns = r.requiredMicros(obj, "exposed_comm_us");
  m.span_ns = r.requiredMicros(obj, "span_us");
  m.idle_ns = r.requiredMicros(obj, "idle_us");
  m.idle_pct = r.number(obj, "idle_pct");
  m.compute_pct = r.number(obj, "compute_pct");
  m.non_compute_pct = r.number(obj, "non_compute_pct");
  k.exposed_wait_ns = r.micros(obj, "exposed_wait_us");
  k.exposed_transfer_ns = r.micros(obj, "exposed_transfer_us");
  for (element st : r.array(obj, "steps")) {
    const Reader rs(name, "rank " + std::to_string(k.rank) + ", step " +
                              std::to_string(k.steps.size()) + " of its list: ");
    rs.object(st, "the step");
    k.steps.push_back(readStep(rs, st));
  }
  // Added within version 2: absent from the digests written before.
  element warnings;
  if (obj["warnings"].get(warnings) == simdjson::SUCCESS) k.warnings = r.strings(obj, "warnings");
  return k;
}

}  // namespace

Digest parseDigest(std::string_view json, const std::string& name) {
  const Reader top(name, "");
  simdjson::dom::parser parser;
  const trace::PaddedBuffer padded(json);
  element doc;
  if (const auto err = parser.parse(padded.data(), padded.size(), false).get(doc); err) {
    // Where and why, as a trace's reader says it: a digest cut short says "truncated?".
    if (const auto problem = trace::locateJsonProblem(json)) {
      std::string what =
          "invalid JSON at " + trace::lineAndColumn(json, problem->offset) + ": " + problem->what;
      if (!problem->truncated) {
        if (const auto near = trace::excerptAt(json, problem->offset); !near.empty())
          what += " (near \"" + near + "\")";
      }
      throw trace::TraceError(name, problem->offset, what);
    }
    top.fail(std::string("not JSON (") + simdjson::error_message(err) + ")");
  }
  if (!doc.is_object()) top.fail("not a run digest: the file is not a JSON object");
  element version;
  if (doc["ddpscope_digest"].get(version) != simdjson::SUCCESS)
    top.fail("not a run digest: no \"ddpscope_digest\" version field");
  Digest d;
  d.version = top.int32(doc, "ddpscope_digest");
  if (d.version < 1 || d.version > kDigestVersion)
    top.fail("digest version " + std::to_string(d.version) + " is not supported (this ddpscope " +
             "reads versions 1 to " + std::to_string(kDigestVersion) + ")");
  d.run = readRun(Reader(name, "run: "), top.field(doc, "run"));
  d.rules = top.text(doc, "rules");
  d.matched_by = top.text(doc, "matched_by");
  d.matched_collectives = top.integer(doc, "matched_collectives");
  if (top.has(doc, "collectives_with_skew")) {
    Digest::LateRank late;
    late.skewed = top.int32(doc, "collectives_with_skew");
    if (top.has(doc, "late_rank")) late.rank = top.int32(doc, "late_rank");
    late.last_in = top.int32(doc, "late_rank_last_in");
    // A named late rank was last at more than half of the collectives with a skew, which are
    // some of those matched.
    if (late.skewed < 0 || late.last_in < 0 || late.last_in > late.skewed ||
        late.skewed > d.matched_collectives || late.rank.has_value() != (late.last_in > 0) ||
        (late.rank && 2 * late.last_in <= late.skewed))
      top.fail("\"late_rank\", \"late_rank_last_in\" and \"collectives_with_skew\" disagree");
    d.late = late;
  }
  if (d.version >= 3)
    d.producer = readProducer(Reader(name, "producer: "), top.field(doc, "producer"));
  d.warnings = top.strings(doc, "warnings");
  std::size_t index = 0;
  std::set<std::int32_t> seen;
  for (element rank : top.array(doc, "ranks")) {
    d.ranks.push_back(readRank(name, rank, index++, d.version));
    if (!seen.insert(d.ranks.back().rank).second)
      top.fail("rank " + std::to_string(d.ranks.back().rank) + " appears twice");
  }
  // What the run summary and the late rank say of the ranks, against the ranks' own rows.
  if (static_cast<std::size_t>(d.run.ranks) != d.ranks.size())
    top.fail("the run summary counts " + std::to_string(d.run.ranks) + " ranks, but " +
             std::to_string(d.ranks.size()) + " rank rows follow (was the file edited?)");
  if (d.late && d.late->rank && !seen.contains(*d.late->rank))
    top.fail("the late rank, " + std::to_string(*d.late->rank) +
             ", is not one of the digest's ranks (was the file edited?)");
  return d;
}

Digest readDigest(const std::string& path) {
  const trace::PaddedBuffer bytes = trace::readTraceBytes(path);
  return parseDigest(bytes.view(), path);
}

std::string digestConfigurationText(const Digest& d, bool with_buckets) {
  std::string s =
      std::string(kFromItsDigest) +
      sourceText(d.ranks.empty() ? std::string_view("imported") : d.ranks.front().source);
  if (d.producer) s += producerText(d.producer->block, d.producer->distributed_backend);
  const auto world = std::max(d.run.world_size, d.run.ranks);
  s += " · " + (d.run.ranks < world ? std::to_string(d.run.ranks) + " of " : std::string()) +
       std::to_string(world) + (world == 1 ? " rank" : " ranks");
  if (!with_buckets) return s;
  if (d.run.bucket_setting.empty()) {
    s += " · bucket size not recorded";
  } else {
    s += " · buckets " + d.run.bucket_setting;
    if (d.run.overlap_setting == false) s += ", not overlapped";
  }
  return s;
}

std::vector<TimeNs> digestStepTimes(const Digest& d) {
  std::vector<std::vector<std::pair<std::int32_t, TimeNs>>> per_rank;
  for (const auto& r : d.ranks) {
    auto& steps = per_rank.emplace_back();
    for (const auto& st : r.steps)
      steps.emplace_back(st.step, st.dur_ns);
  }
  return selectedStepTimes(per_rank, d.run.selection);
}

std::optional<double> digestBucketMb(const Digest& d) {
  const std::string& setting = d.run.bucket_setting;
  if (setting == "per tensor") return 0.0;
  char* end = nullptr;
  const double v = std::strtod(setting.c_str(), &end);
  if (end == setting.c_str() || std::string_view(end).rfind(" MiB", 0) != 0) return std::nullopt;
  return v;
}

MeasuredRun measuredDigest(const Digest& d, const std::string& label, double bucket_mb) {
  MeasuredRun m;
  m.bucket_mb = bucket_mb;
  m.label = label;
  m.configuration = digestConfigurationText(d, false);
  m.summary = d.run;
  m.step_times = digestStepTimes(d);
  m.identity = digestIdentity(d);
  m.settings_known = d.producer.has_value();
  if (d.producer) m.settings = sweepSettings(d.producer->block);
  m.recorded_bucket_mb = digestBucketMb(d);
  return m;
}

RunIdentity digestIdentity(const Digest& d) {
  RunIdentity id;
  id.source = d.ranks.empty() ? "imported" : d.ranks.front().source;
  id.world_size = std::max(d.run.world_size, d.run.ranks);
  if (d.producer) id.model = std::string(d.producer->block.configValue("model"));
  return id;
}

bool isDigestFile(const std::string& path) {
  return trace::startsAsRunDigest(path);
}

std::string_view digestFigureName(DigestFigure f) {
  switch (f) {
    case DigestFigure::StepTime:
      return "step time";
    case DigestFigure::ExposedComm:
      return "exposed communication";
    case DigestFigure::MatchedWait:
      return "waiting for late ranks";
  }
  return "?";
}

std::string_view digestFigureDefinition(DigestFigure f) {
  switch (f) {
    case DigestFigure::StepTime:
      return "Each cell: the rank's time for the step (its step range).";
    case DigestFigure::ExposedComm:
      return "Each cell: the rank's communication in the step not hidden under compute.";
    case DigestFigure::MatchedWait:
      return "Each cell: how long the rank's collectives of the step, matched on every rank, "
             "waited for the last rank to start, hidden under compute or not (the exposed "
             "split above counts only the part not hidden).";
  }
  return "?";
}

namespace {
std::optional<TimeNs> figureOf(const DigestStep& s, DigestFigure f) {
  switch (f) {
    case DigestFigure::StepTime:
      return s.dur_ns;
    case DigestFigure::ExposedComm:
      return s.exposed_ns;
    case DigestFigure::MatchedWait:
      return s.matched_wait_ns;
  }
  return std::nullopt;
}
}  // namespace

DigestGrid digestGrid(const Digest& digest, DigestFigure figure) {
  DigestGrid g;
  g.figure = figure;
  std::set<std::int32_t> steps;
  // Rows in rank order: the digest's ranks (their index) and the world's ranks without a trace
  // (-1), a row of no values each.
  std::vector<std::pair<std::int32_t, std::ptrdiff_t>> rows;
  for (std::size_t i = 0; i < digest.ranks.size(); ++i) {
    rows.emplace_back(digest.ranks[i].rank, static_cast<std::ptrdiff_t>(i));
    for (const auto& s : digest.ranks[i].steps)
      steps.insert(s.step);
  }
  for (const std::int32_t r : digest.run.missing_ranks)
    rows.emplace_back(r, -1);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [rank, index] : rows) {
    g.ranks.push_back(rank);
    g.no_trace.push_back(index < 0 ? 1 : 0);
  }
  g.steps.assign(steps.begin(), steps.end());
  g.cells.assign(g.ranks.size() * g.steps.size(), std::nullopt);
  // The scale spans the steps the run summary covers, when any of them has a value: a warm-up
  // step, one not on every rank or one cut short stays drawn, without stretching the scale.
  const auto& used = digest.run.selection.used;
  bool any_used = false;
  for (const auto& r : digest.ranks)
    for (const auto& s : r.steps)
      any_used = any_used || (std::binary_search(used.begin(), used.end(), s.step) &&
                              figureOf(s, figure).has_value());
  g.left_out.assign(g.steps.size(), 0);
  for (std::size_t column = 0; column < g.steps.size() && any_used; ++column)
    g.left_out[column] = std::binary_search(used.begin(), used.end(), g.steps[column]) ? 0 : 1;
  for (std::size_t row = 0; row < rows.size(); ++row) {
    if (rows[row].second < 0) continue;  // no trace
    for (const auto& s : digest.ranks[static_cast<std::size_t>(rows[row].second)].steps) {
      const auto column = static_cast<std::size_t>(
          std::lower_bound(g.steps.begin(), g.steps.end(), s.step) - g.steps.begin());
      const auto v = figureOf(s, figure);
      g.cells[row * g.steps.size() + column] = v;
      if (!v || (any_used && !std::binary_search(used.begin(), used.end(), s.step))) continue;
      g.min_ns = g.min_ns ? std::min(*g.min_ns, *v) : *v;
      g.max_ns = g.max_ns ? std::max(*g.max_ns, *v) : *v;
    }
  }
  return g;
}

StragglerSummary digestStragglers(const Digest& digest) {
  StragglerSummary s;
  if (digest.late) {
    s.late_known = true;
    s.skewed = digest.late->skewed;
    s.late_rank = digest.late->rank;
    s.late_count = digest.late->last_in;
  }
  for (const auto& r : digest.ranks)
    addExposedSplit(s, r.exposed_wait_ns, r.exposed_transfer_ns);
  setExposedShares(s);
  return s;
}

namespace {

// The existing regular files called `name` in each folder and then in each folder's immediate
// subfolders (sorted by name), each once, in that order.
std::vector<std::string> candidateFiles(const std::vector<std::string>& folders,
                                        const std::string& name) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::set<std::string> seen;
  auto consider = [&](const fs::path& folder) {
    std::error_code ec;
    const fs::path path = folder / name;
    if (fs::is_regular_file(path, ec) &&
        seen.insert(fs::weakly_canonical(path, ec).string()).second)
      out.push_back(path.string());
  };
  for (const auto& f : folders)
    consider(f);
  for (const auto& f : folders) {
    std::error_code ec;
    std::vector<fs::path> subfolders;
    for (fs::directory_iterator it(f, ec), end; !ec && it != end; it.increment(ec)) {
      std::error_code type_ec;
      if (it->is_directory(type_ec)) subfolders.push_back(it->path());
    }
    std::sort(subfolders.begin(), subfolders.end());
    for (const auto& d : subfolders)
      consider(d);
  }
  return out;
}

std::string folderList(const std::vector<std::string>& folders) {
  std::string s;
  for (const auto& f : folders)
    s += (s.empty() ? "" : ", ") + f;
  return s.empty() ? "(no folder)" : s;
}

std::string locateRankFile(const DigestRank& r, const std::vector<std::string>& folders) {
  const DigestFile& want = *r.file;
  const std::string which = "the trace file " + want.name + " of rank " + std::to_string(r.rank);
  const auto found = candidateFiles(folders, want.name);
  if (found.empty())
    throw std::runtime_error(
        which + " is in none of " + folderList(folders) +
        " (nor their subfolders): add the folder that holds it (Trace folders… in the "
        "Digest tab)");
  std::vector<std::string> same_size;
  std::string other;  // the first file of another size, and its size
  std::uint64_t other_size = 0;
  for (const auto& f : found) {
    std::error_code ec;
    const auto size = std::filesystem::file_size(f, ec);
    if (ec) continue;
    if (size == want.bytes)
      same_size.push_back(f);
    else if (other.empty())
      other = f, other_size = size;
  }
  if (same_size.empty() && !other.empty())
    throw std::runtime_error(which + " (" + other + ") has changed since the digest was " +
                             "made (" + std::to_string(other_size) + " bytes; the digest says " +
                             std::to_string(want.bytes) + "): make the digest again");
  if (same_size.empty())
    throw std::runtime_error(which + " cannot be read (" + found.front() + ")");
  if (same_size.size() == 1) return same_size.front();
  // Several files of that name and size (e.g. each node's rank-0.json): the hash tells.
  for (const auto& f : same_size)
    if (fileHash(f, want.hash_kind) == want.hash) return f;
  throw std::runtime_error(which + ": none of the " + std::to_string(same_size.size()) +
                           " files of its name and size (" + folderList(same_size) +
                           ") has the content the digest was made of: make the digest again");
}

}  // namespace

std::vector<std::string> digestRankFiles(const Digest& digest,
                                         const std::vector<std::string>& folders,
                                         const std::vector<std::int32_t>& ranks) {
  const std::set<std::int32_t> wanted(ranks.begin(), ranks.end());
  std::vector<std::string> files;
  std::set<std::string> seen;
  std::set<std::int32_t> found;
  for (const auto& r : digest.ranks) {
    if (!wanted.contains(r.rank)) continue;
    found.insert(r.rank);
    if (!r.file)
      throw std::runtime_error("the digest does not name the trace file of rank " +
                               std::to_string(r.rank));
  }
  for (auto r : wanted)
    if (!found.contains(r)) throw std::runtime_error("the digest has no rank " + std::to_string(r));
  for (const auto& r : digest.ranks) {
    if (!wanted.contains(r.rank)) continue;
    const std::string path = locateRankFile(r, folders);
    if (seen.insert(path).second) files.push_back(path);
  }
  return files;
}

}  // namespace ddpscope::analysis
