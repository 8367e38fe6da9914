#include "trace_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>
#include <unordered_map>

#include "json_text.h"
#include "memory.h"
#include "trace_error.h"

namespace ddpscope::trace {

namespace od = simdjson::ondemand;

namespace {

std::string describeJsonError(simdjson::error_code code) {
  switch (code) {
    case simdjson::INCOMPLETE_ARRAY_OR_OBJECT:
      return "the JSON ends before an array or object is closed (truncated file?)";
    case simdjson::UNCLOSED_STRING:
      return "a string is not closed (truncated file?)";
    case simdjson::TAPE_ERROR:
      return "malformed JSON (unexpected character or structure)";
    case simdjson::DEPTH_ERROR:
      return "the JSON is nested too deeply";
    case simdjson::UTF8_ERROR:
      return "the text is not valid UTF-8";
    case simdjson::NUMBER_ERROR:
      return "a malformed number";
    case simdjson::INCORRECT_TYPE:
      return "a value has the wrong type";
    case simdjson::CAPACITY:
      return "the document is too large for the JSON parser (4 GiB)";
    case simdjson::EMPTY:
      return "the file is empty";
    case simdjson::T_ATOM_ERROR:
    case simdjson::F_ATOM_ERROR:
    case simdjson::N_ATOM_ERROR:
      return "an invalid literal (expected true, false or null)";
    case simdjson::STRING_ERROR:
      return "an invalid string (bad escape or control character)";
    case simdjson::UNESCAPED_CHARS:
      return "a control character inside a string";
    case simdjson::TRAILING_CONTENT:
      return "unexpected content after the end of the JSON";
    default:
      return std::string("invalid JSON (") + simdjson::error_message(code) + ")";
  }
}

// A trace-format problem (valid JSON, wrong content), located at an offset.
struct FormatProblem {
  std::uint64_t offset;
  std::string what;
};

std::string_view keyOf(od::field& field) {
  const char* p = field.key().raw();
  const char* q = p;
  while (*q != '"') {
    if (*q == '\\') return {};  // keys we know never contain escapes
    ++q;
  }
  return {p, static_cast<std::size_t>(q - p)};
}

std::string_view trimToken(std::string_view t) {
  while (!t.empty() &&
         (t.back() == ' ' || t.back() == '\n' || t.back() == '\r' || t.back() == '\t')) {
    t.remove_suffix(1);
  }
  return t;
}

// The text of a string value. Without escapes (nearly always) it is a view into the document,
// which saves the parser's copy into its string buffer; with escapes it is unescaped there.
// False when the value is not a string.
bool stringOf(od::value v, std::string_view& out) {
  if (v.type() != od::json_type::string) return false;
  const std::string_view token = trimToken(v.raw_json_token());
  if (token.size() >= 2 && token.back() == '"' && token.find('\\') == std::string_view::npos) {
    out = token.substr(1, token.size() - 2);
    return true;
  }
  return v.get_string().get(out) == simdjson::SUCCESS;
}

// Raw JSON text of any value (objects and arrays whole, scalars as their token).
std::string rawJson(od::value v) {
  switch (v.type()) {
    case od::json_type::object: {
      od::object o = v.get_object();
      return std::string(o.raw_json().value());
    }
    case od::json_type::array: {
      od::array a = v.get_array();
      return std::string(a.raw_json().value());
    }
    default:
      return std::string(trimToken(v.raw_json_token()));
  }
}

// Integer from a number or a numeric string ("7", "0x1f"); false when neither.
bool intFrom(od::value v, std::int64_t& out) {
  switch (v.type()) {
    case od::json_type::number: {
      const auto token = trimToken(v.raw_json_token());
      auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), out);
      if (ec == std::errc() && ptr == token.data() + token.size()) return true;
      double d = 0;
      if (v.get_double().get(d) != simdjson::SUCCESS || !std::isfinite(d) || std::fabs(d) > 9e18) {
        return false;
      }
      out = static_cast<std::int64_t>(d);
      return true;
    }
    case od::json_type::string: {
      std::string_view s;
      if (v.get_string().get(s) != simdjson::SUCCESS) return false;
      int base = 10;
      if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        s.remove_prefix(2);
        base = 16;
      }
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out, base);
      return ec == std::errc() && ptr == s.data() + s.size() && !s.empty();
    }
    default:
      return false;
  }
}

std::int64_t dtypeSize(std::string_view dtype) {
  if (dtype == "Float" || dtype == "Int" || dtype == "float32" || dtype == "f32" ||
      dtype == "int32" || dtype == "UInt32") {
    return 4;
  }
  if (dtype == "Half" || dtype == "BFloat16" || dtype == "float16" || dtype == "bfloat16" ||
      dtype == "f16" || dtype == "bf16" || dtype == "Short") {
    return 2;
  }
  if (dtype == "Double" || dtype == "Long" || dtype == "float64" || dtype == "int64" ||
      dtype == "f64" || dtype == "UInt64") {
    return 8;
  }
  if (dtype == "Byte" || dtype == "Char" || dtype == "Bool" || dtype == "int8" ||
      dtype == "uint8" || dtype.starts_with("Float8")) {
    return 1;
  }
  return 0;
}

struct PendingFlowEnd {
  std::uint64_t id;
  NameId cat;
  NameId name;
  TimeNs ts;
  std::int64_t pid;
  std::int64_t tid;
};

// One event as parsed, before it is moved into its track's columns: collecting rows first lets
// every column be allocated once at its exact size (no growth copies, no slack).
struct StagedEvent {
  TimeNs start;
  TimeNs dur;
  std::int64_t correlation;
  std::int64_t bytes;
  NameId name;
  NameId cat;
  std::int32_t bucket;
  std::int32_t step;
  std::int32_t track;
  EventKind kind;
};

constexpr std::size_t kMinParserBytes = std::size_t{16} << 20;

// Per-thread memory reused from one file to the next.
struct ReaderScratch {
  od::parser parser;
  std::vector<StagedEvent> staged;
};

ReaderScratch& threadScratch() {
  thread_local ReaderScratch scratch;
  return scratch;
}

class TraceParser {
 public:
  TraceParser(const PaddedBuffer& json, const std::string& name, const ReadOptions& options)
      : json_(json), name_(name), options_(options) {}

  RankTrace parse();

 private:
  std::uint64_t offsetOf(const char* p) const {
    if (p < json_.data() || p > json_.data() + json_.size()) return kNoOffset;
    return static_cast<std::uint64_t>(p - json_.data());
  }
  // On a parse error: a document whose brackets never close (or that ends inside a string) was
  // most likely cut short; say so, since that is what the user can fix.
  std::string truncationHint() const {
    std::int64_t depth = 0;
    bool in_string = false;
    const char* p = json_.data();
    const char* end = p + json_.size();
    for (; p < end; ++p) {
      const char c = *p;
      if (in_string) {
        if (c == '\\') {
          ++p;
        } else if (c == '"') {
          in_string = false;
        }
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        ++depth;
      } else if (c == '}' || c == ']') {
        --depth;
      }
    }
    if (in_string || depth > 0) {
      return "; the file ends mid-document (truncated? was it copied completely?)";
    }
    return {};
  }
  [[noreturn]] void fail(std::string what) { throw FormatProblem{event_offset_, std::move(what)}; }

  void parseTopLevel(od::object top);
  void parseEvents(od::array events);
  void parseEvent(od::object ev);
  void parseArgs(od::object args);
  void parseDistributedInfo(od::object info);
  void parseDdpscopeBlock(od::object block);
  void addFlowEnd(char ph, std::uint64_t id, NameId cat, NameId name, TimeNs ts, std::int64_t pid,
                  std::int64_t tid);
  void resolveFlows();
  std::int32_t hostOrGpuTrack(std::int64_t pid, std::int64_t tid) const;
  std::int32_t trackFor(TrackKind kind, std::int64_t pid, std::int64_t tid);
  void checkCancel(const char* where);
  void moveStagedIntoTracks();

  const PaddedBuffer& json_;
  const std::string& name_;
  const ReadOptions& options_;
  RankTrace out_;
  bool saw_events_ = false;
  bool saw_rank_ = false;
  std::uint64_t event_offset_ = kNoOffset;
  std::size_t event_index_ = 0;
  std::size_t skipped_other_phase_ = 0;

  // Per-event args, reset for each event.
  struct Args {
    std::int64_t stream = 0, device = 0, correlation = kNoCorrelation, bytes = kNoBytes;
    std::int64_t nelems = -1;
    std::int32_t bucket = kNoBucket, step = kNoStep;
    std::string_view dtype, name;
    bool has_stream = false, has_device = false;
  } args_;

  std::vector<StagedEvent>* staged_ = nullptr;
  std::unordered_map<std::uint64_t, std::int32_t> track_lookup_;
  std::vector<PendingFlowEnd> flow_starts_;
  std::vector<PendingFlowEnd> flow_ends_;
};

std::uint64_t trackKey(TrackKind kind, std::int64_t pid, std::int64_t tid) {
  // Mixes the three parts; collisions are resolved by checking the track itself.
  std::uint64_t h = static_cast<std::uint64_t>(pid) * 0x9E3779B97F4A7C15ull;
  h ^= static_cast<std::uint64_t>(tid) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
  return h ^ static_cast<std::uint64_t>(kind);
}

std::int32_t TraceParser::trackFor(TrackKind kind, std::int64_t pid, std::int64_t tid) {
  const auto key = trackKey(kind, pid, tid);
  auto it = track_lookup_.find(key);
  if (it != track_lookup_.end()) {
    const auto& t = out_.tracks[static_cast<std::size_t>(it->second)];
    if (t.kind == kind && t.pid == pid && t.tid == tid) return it->second;
    return out_.trackIndex(kind, pid, tid);  // hash collision: slow path
  }
  const auto index = out_.trackIndex(kind, pid, tid);
  track_lookup_.emplace(key, index);
  return index;
}

void TraceParser::checkCancel(const char* where) {
  if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) throw LoadCancelled();
  if (options_.progress && json_.size() > 0) {
    const auto off = offsetOf(where);
    if (off != kNoOffset)
      options_.progress(static_cast<double>(off) / static_cast<double>(json_.size()));
  }
}

RankTrace TraceParser::parse() {
  out_.path = name_;
  // Fresh parser memory costs a page fault per 4 KiB touched (the structural index alone is
  // about 0.8 bytes per byte of JSON), which dominated loading: reuse one parser per thread,
  // sized with some headroom so the next rank's file of a run usually fits.
  // releaseReaderMemory() gives it back.
  ReaderScratch& scratch = threadScratch();
  if (scratch.parser.capacity() < json_.size()) {
    scratch.parser = od::parser();
    const std::size_t want = std::max(json_.size() + json_.size() / 8, kMinParserBytes);
    if (scratch.parser.allocate(want) != simdjson::SUCCESS) {
      throw TraceError(
          name_, kNoOffset,
          "not enough memory to parse a " + std::to_string(json_.size() >> 20) + " MiB trace");
    }
  }
  od::parser& parser = scratch.parser;
  staged_ = &scratch.staged;
  staged_->clear();
  // Our events are about 200 bytes of JSON and Kineto's more: this rarely has to grow.
  const std::size_t estimate = json_.size() / 128 + 1024;
  if (staged_->capacity() < estimate) {
    staged_->reserve(estimate);
    adviseHugePages(staged_->data(), estimate * sizeof(StagedEvent));
  }
  try {
    od::document doc = parser.iterate(json_.data(), json_.size(), json_.capacity());
    od::json_type type = doc.type();
    if (type == od::json_type::array) {
      parseEvents(doc.get_array());  // a bare Chrome-trace event array
    } else if (type == od::json_type::object) {
      parseTopLevel(doc.get_object());
    } else {
      throw TraceError(name_, 0, "expected a JSON object with a \"traceEvents\" array");
    }
    // Anything but whitespace after the document is an error.
    const char* rest = nullptr;
    if (doc.current_location().get(rest) == simdjson::SUCCESS && rest != nullptr) {
      throw TraceError(name_, offsetOf(rest),
                       "unexpected content after the end of the JSON document");
    }
  } catch (const simdjson::simdjson_error& e) {
    std::string where;
    if (event_offset_ != kNoOffset) {
      where = " in traceEvents[" + std::to_string(event_index_) + "]";
    }
    throw TraceError(name_, event_offset_, describeJsonError(e.error()) + where + truncationHint());
  } catch (const FormatProblem& p) {
    throw TraceError(name_, p.offset,
                     "traceEvents[" + std::to_string(event_index_) + "]: " + p.what);
  }
  if (!saw_events_) {
    throw TraceError(name_, kNoOffset,
                     "no \"traceEvents\" array: this is not a Chrome/Kineto trace");
  }
  moveStagedIntoTracks();
  resolveFlows();
  if (skipped_other_phase_ > 0) {
    out_.warnings.push_back(std::to_string(skipped_other_phase_) +
                            " events of unsupported phases (counters, async, ...) were skipped");
  }
  if (!saw_rank_) {
    // Fall back to the file name: rank-<r>.json[.gz].
    const auto slash = name_.find_last_of('/');
    std::string_view base =
        std::string_view(name_).substr(slash == std::string::npos ? 0 : slash + 1);
    if (base.starts_with("rank-") || base.starts_with("rank_")) {
      std::int32_t r = 0;
      auto digits = base.substr(5);
      auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
      if (ec == std::errc() && ptr != digits.data()) out_.rank = r;
    }
  }
  if (out_.world_size < 1) out_.world_size = 1;
  canonicalize(out_);
  out_.rebaseToEarliestEvent();
  return std::move(out_);
}

void TraceParser::parseTopLevel(od::object top) {
  for (od::field field : top) {
    const auto key = keyOf(field);
    od::value v = field.value();
    if (key == "traceEvents") {
      if (v.type() != od::json_type::array) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "\"traceEvents\" must be an array of events");
      }
      if (saw_events_) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "duplicate \"traceEvents\" array");
      }
      parseEvents(v.get_array());
      event_offset_ = kNoOffset;
    } else if (key == "baseTimeNanoseconds") {
      std::int64_t base = 0;
      if (!intFrom(v, base) || base < 0) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "\"baseTimeNanoseconds\" must be a non-negative integer");
      }
      out_.base_time_ns = base;
    } else if (key == "schemaVersion") {
      std::int64_t s = 1;
      if (intFrom(v, s)) out_.schema_version = s;
    } else if (key == "deviceProperties") {
      if (v.type() == od::json_type::array) out_.device_properties_json = rawJson(v);
    } else if (key == "distributedInfo") {
      if (v.type() == od::json_type::object) parseDistributedInfo(v.get_object());
    } else if (key == "ddpscope") {
      if (v.type() != od::json_type::object) {
        throw TraceError(name_, offsetOf(v.current_location().value()),
                         "the \"ddpscope\" block must be an object");
      }
      parseDdpscopeBlock(v.get_object());
    }
    // Anything else (INFO, traceName, displayTimeUnit, ...) is ignored.
  }
}

void TraceParser::parseDistributedInfo(od::object info) {
  for (od::field field : info) {
    const auto key = keyOf(field);
    od::value v = field.value();
    std::int64_t n = 0;
    if (key == "rank" && intFrom(v, n)) {
      if (n < 0 || n > 1'000'000)
        throw TraceError(name_, kNoOffset, "distributedInfo.rank out of range");
      out_.rank = static_cast<std::int32_t>(n);
      saw_rank_ = true;
    } else if (key == "world_size" && intFrom(v, n)) {
      if (n < 1 || n > 1'000'000) {
        throw TraceError(name_, kNoOffset, "distributedInfo.world_size out of range");
      }
      out_.world_size = static_cast<std::int32_t>(n);
    } else if (key == "backend" && v.type() == od::json_type::string) {
      out_.distributed_backend = std::string(v.get_string().value());
    }
  }
}

void TraceParser::parseDdpscopeBlock(od::object block) {
  auto& b = out_.ddpscope;
  b.present = true;
  for (od::field field : block) {
    const auto key = keyOf(field);
    od::value v = field.value();
    if (key == "version") {
      intFrom(v, b.version);
    } else if (key == "source" && v.type() == od::json_type::string) {
      b.source = std::string(v.get_string().value());
    } else if ((key == "config" || key == "clock") && v.type() == od::json_type::object) {
      auto& dest = key == "config" ? b.config : b.clock;
      for (od::field kv : v.get_object()) {
        std::string k(kv.unescaped_key().value());
        dest.emplace_back(std::move(k), rawJson(kv.value()));
      }
    } else if (key == "incomplete" && v.type() == od::json_type::boolean) {
      b.incomplete = v.get_bool().value();
    } else if (key == "dropped_records") {
      intFrom(v, b.dropped_records);
    } else if (key == "buckets" && v.type() == od::json_type::array) {
      for (auto item : v.get_array()) {
        od::value bv = item.value();
        if (bv.type() != od::json_type::object) {
          throw TraceError(name_, offsetOf(bv.current_location().value()),
                           "ddpscope.buckets entries must be objects");
        }
        BucketDef def;
        for (od::field bf : bv.get_object()) {
          const auto bk = keyOf(bf);
          od::value x = bf.value();
          std::int64_t n = 0;
          if (bk == "id" && intFrom(x, n)) {
            def.id = static_cast<std::int32_t>(n);
          } else if (bk == "bytes" && intFrom(x, n)) {
            def.bytes = n;
          } else if (bk == "dtype" && x.type() == od::json_type::string) {
            def.dtype = std::string(x.get_string().value());
          } else if (bk == "params" && x.type() == od::json_type::array) {
            for (auto p : x.get_array()) {
              od::value pv = p.value();
              if (pv.type() != od::json_type::object) continue;
              BucketParam param;
              for (od::field pf : pv.get_object()) {
                const auto pk = keyOf(pf);
                od::value y = pf.value();
                if (pk == "name" && y.type() == od::json_type::string) {
                  param.name = std::string(y.get_string().value());
                } else if (pk == "bytes") {
                  intFrom(y, param.bytes);
                }
              }
              def.params.push_back(std::move(param));
            }
          }
        }
        b.buckets.push_back(std::move(def));
      }
    }
  }
  if (b.source.empty()) b.source = "imported";  // what the writer would say for it
}

void TraceParser::parseEvents(od::array events) {
  saw_events_ = true;
  for (auto item : events) {
    od::value v = item.value();
    event_offset_ = offsetOf(v.current_location().value());
    if ((event_index_ & 0xFFFF) == 0)
      checkCancel(json_.data() + (event_offset_ == kNoOffset ? 0 : event_offset_));
    if (v.type() != od::json_type::object) fail("expected an event object");
    parseEvent(v.get_object());
    ++event_index_;
  }
}

void TraceParser::parseArgs(od::object args) {
  for (od::field field : args) {
    const auto key = keyOf(field);
    if (key.empty()) continue;
    od::value v = field.value();
    std::int64_t n = 0;
    switch (key[0]) {
      case 's':
        if (key == "stream" && intFrom(v, n)) {
          args_.stream = n;
          args_.has_stream = true;
        } else if (key == "step" && intFrom(v, n)) {
          args_.step = static_cast<std::int32_t>(n);
        }
        break;
      case 'd':
        if (key == "device" && intFrom(v, n)) {
          args_.device = n;
          args_.has_device = true;
        } else if (key == "dtype") {
          stringOf(v, args_.dtype);
        }
        break;
      case 'c':
        if (key == "correlation" && intFrom(v, n)) args_.correlation = n;
        break;
      case 'b':
        if (key == "bytes" && intFrom(v, n)) {
          args_.bytes = n;
        } else if (key == "bucket" && intFrom(v, n)) {
          args_.bucket = static_cast<std::int32_t>(n);
        }
        break;
      case 'I':
        if (key == "In msg nelems" && intFrom(v, n)) args_.nelems = n;
        break;
      case 'n':
        if (key == "name") stringOf(v, args_.name);
        break;
      default:
        break;
    }
  }
}

void TraceParser::parseEvent(od::object ev) {
  std::string_view ph, cat, name;
  TimeNs ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, has_id = false, pid_numeric = true, tid_numeric = true;
  std::int64_t pid = 0, tid = 0;
  std::uint64_t id = 0;
  args_ = Args{};
  for (od::field field : ev) {
    const auto key = keyOf(field);
    od::value v = field.value();
    if (key == "ph") {
      if (!stringOf(v, ph)) fail("\"ph\" must be a string");
    } else if (key == "ts" || key == "dur") {
      if (v.type() != od::json_type::number)
        fail("\"" + std::string(key) + "\" must be a number (microseconds)");
      TimeNs ns = 0;
      if (!parseMicrosToNs(v.raw_json_token(), ns)) {
        fail("\"" + std::string(key) + "\" is not a finite number of microseconds in range");
      }
      if (key == "ts") {
        ts = ns;
        has_ts = true;
      } else {
        dur = ns;
        has_dur = true;
      }
    } else if (key == "name") {
      if (!stringOf(v, name)) fail("\"name\" must be a string");
    } else if (key == "cat") {
      if (!stringOf(v, cat)) fail("\"cat\" must be a string");
    } else if (key == "pid") {
      pid_numeric = intFrom(v, pid);
    } else if (key == "tid") {
      tid_numeric = intFrom(v, tid);
    } else if (key == "id") {
      std::int64_t n = 0;
      has_id = intFrom(v, n);
      id = static_cast<std::uint64_t>(n);
    } else if (key == "args") {
      if (v.type() == od::json_type::object) parseArgs(v.get_object());
    }
  }
  if (ph.empty()) fail("missing \"ph\" (event phase)");
  const char phase = ph[0];
  if (phase == 'M') {
    if (!pid_numeric || args_.name.empty()) return;
    if (name == "process_name") {
      out_.process_names[pid] = std::string(args_.name);
    } else if (name == "thread_name" && tid_numeric) {
      out_.thread_names[{pid, tid}] = std::string(args_.name);
    }
    return;
  }
  if (phase != 'X' && phase != 'i' && phase != 'I' && phase != 's' && phase != 'f') {
    ++skipped_other_phase_;
    return;
  }
  if (!has_ts) fail("missing \"ts\"");
  if (!pid_numeric || !tid_numeric) {
    return;  // Kineto's "Spans"/"Traces" rows name no process: not timeline data
  }
  if (phase == 's' || phase == 'f') {
    if (!has_id) return;  // a flow without id cannot be paired
    addFlowEnd(phase, id, out_.names.intern(cat), out_.names.intern(name), ts, pid, tid);
    return;
  }
  if (phase == 'X') {
    if (!has_dur) fail("a complete event (ph \"X\") needs \"dur\"");
    if (dur < 0) fail("negative duration " + std::to_string(dur) + " ns");
    if (ts > 0 && dur > std::numeric_limits<TimeNs>::max() - ts) fail("ts + dur overflows");
  } else {
    dur = 0;  // instant events
  }
  const EventKind kind = eventKindFromCategory(cat);
  std::int32_t track = 0;
  if (isGpuKind(kind)) {
    track = trackFor(TrackKind::Gpu, args_.has_device ? args_.device : pid,
                     args_.has_stream ? args_.stream : tid);
  } else {
    track = trackFor(TrackKind::Host, pid, tid);
  }
  std::int64_t bytes = args_.bytes;
  if (bytes < 0 && args_.nelems >= 0) {
    const auto size = dtypeSize(args_.dtype);
    if (size > 0) bytes = args_.nelems * size;
  }
  staged_->push_back({ts, dur, args_.correlation, bytes, out_.names.intern(name),
                      out_.names.intern(cat), args_.bucket, args_.step, track, kind});
}

void TraceParser::moveStagedIntoTracks() {
  std::vector<std::size_t> count(out_.tracks.size(), 0);
  for (const auto& e : *staged_)
    ++count[static_cast<std::size_t>(e.track)];
  for (std::size_t i = 0; i < out_.tracks.size(); ++i)
    out_.tracks[i].reserve(out_.tracks[i].size() + count[i]);
  for (const auto& e : *staged_) {
    auto& t = out_.tracks[static_cast<std::size_t>(e.track)];
    t.start.push_back(e.start);
    t.dur.push_back(e.dur);
    t.name.push_back(e.name);
    t.cat.push_back(e.cat);
    t.kind_of.push_back(e.kind);
    t.correlation.push_back(e.correlation);
    t.bucket.push_back(e.bucket);
    t.step.push_back(e.step);
    t.bytes.push_back(e.bytes);
  }
  staged_->clear();
}

void TraceParser::addFlowEnd(char ph, std::uint64_t id, NameId cat, NameId name, TimeNs ts,
                             std::int64_t pid, std::int64_t tid) {
  (ph == 's' ? flow_starts_ : flow_ends_).push_back({id, cat, name, ts, pid, tid});
}

std::int32_t TraceParser::hostOrGpuTrack(std::int64_t pid, std::int64_t tid) const {
  auto i = out_.findTrack(TrackKind::Host, pid, tid);
  if (i >= 0) return i;
  return out_.findTrack(TrackKind::Gpu, pid, tid);
}

void TraceParser::resolveFlows() {
  if (flow_starts_.empty() || flow_ends_.empty()) return;
  std::unordered_map<std::uint64_t, std::size_t> start_of;  // (cat,id) -> index in flow_starts_
  auto key = [](const PendingFlowEnd& f) { return f.id * 1000003ull + f.cat; };
  start_of.reserve(flow_starts_.size());
  for (std::size_t i = 0; i < flow_starts_.size(); ++i)
    start_of.emplace(key(flow_starts_[i]), i);
  for (const auto& end : flow_ends_) {
    auto it = start_of.find(key(end));
    if (it == start_of.end()) continue;
    const auto& start = flow_starts_[it->second];
    if (start.id != end.id || start.cat != end.cat) continue;
    Flow f;
    f.id = end.id;
    f.cat = end.cat;
    f.name = start.name;
    f.from_ts = start.ts;
    f.to_ts = end.ts;
    f.from_track = hostOrGpuTrack(start.pid, start.tid);
    f.to_track = hostOrGpuTrack(end.pid, end.tid);
    if (f.from_track < 0 || f.to_track < 0) continue;
    out_.flows.push_back(f);
  }
}

}  // namespace

void releaseReaderMemory() {
  auto& scratch = threadScratch();
  scratch.parser = od::parser();
  std::vector<StagedEvent>().swap(scratch.staged);
}

RankTrace parseTrace(const PaddedBuffer& json, const std::string& name,
                     const ReadOptions& options) {
  if (json.size() == 0) throw TraceError(name, 0, "the file is empty");
  TraceParser parser(json, name, options);
  return parser.parse();
}

RankTrace parseTraceText(std::string_view json, const std::string& name,
                         const ReadOptions& options) {
  PaddedBuffer buffer(json);
  return parseTrace(buffer, name, options);
}

RankTrace readTraceFile(const std::string& path, const ReadOptions& options) {
  const PaddedBuffer bytes = readTraceBytes(path, options.limits);
  return parseTrace(bytes, path, options);
}

}  // namespace ddpscope::trace
