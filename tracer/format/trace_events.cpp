// Kineto / Chrome trace events -> rows of the model's tracks: an event's keys and args, its
// track (GPU kinds by device and stream, the rest by pid and tid), names interned, flows paired.
// The loop every event of a trace goes through: keep it lean (docs/PERFORMANCE.md "Loading").
#include <algorithm>
#include <cstring>
#include <limits>

#include "json_text.h"
#include "trace_json_values.h"
#include "trace_parser.h"

namespace ddpscope::trace::reader {

namespace {

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

// Keys of an event whose repetition is noticed (the last value is used), as bits.
constexpr unsigned kKeyPh = 1u << 0;
constexpr unsigned kKeyTs = 1u << 1;
constexpr unsigned kKeyDur = 1u << 2;
constexpr unsigned kKeyName = 1u << 3;
constexpr unsigned kKeyCat = 1u << 4;
constexpr unsigned kKeyPid = 1u << 5;
constexpr unsigned kKeyTid = 1u << 6;
constexpr unsigned kKeyId = 1u << 7;
constexpr unsigned kKeyArgs = 1u << 8;

std::string repeatedKeyNames(unsigned bits) {
  static constexpr std::pair<unsigned, const char*> kNames[] = {
      {kKeyPh, "ph"},   {kKeyTs, "ts"},   {kKeyDur, "dur"}, {kKeyName, "name"}, {kKeyCat, "cat"},
      {kKeyPid, "pid"}, {kKeyTid, "tid"}, {kKeyId, "id"},   {kKeyArgs, "args"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if (!(bits & bit)) continue;
    if (!out.empty()) out += ", ";
    out += '"';
    out += name;
    out += '"';
  }
  return out + " given more than once";
}

}  // namespace

NameId TraceParser::internCached(std::string_view s) {
  const std::size_t n = s.size();
  std::uint64_t head = 0, middle = 0, tail = 0;
  if (n >= 8) {
    std::memcpy(&head, s.data(), 8);
    std::memcpy(&middle, s.data() + n / 2 - 4, 8);
    std::memcpy(&tail, s.data() + n - 8, 8);
  } else if (n > 0) {
    std::memcpy(&head, s.data(), n);
  }
  const std::uint64_t h = (head * 0x9E3779B97F4A7C15ull) ^ (middle * 0xC2B2AE3D27D4EB4Full) ^
                          ((tail + n) * 0x165667B19E3779F9ull);
  NameId& slot = name_cache_[(h ^ (h >> 29)) % name_cache_.size()];
  if (slot != StringTable::npos && out_.names[slot] == s) return slot;
  slot = out_.names.intern(s);
  return slot;
}

inline EventKind TraceParser::kindOfCategory(NameId cat, std::string_view text) {
  if (cat >= cat_kind_.size()) cat_kind_.resize(std::size_t{cat} + 1, 0);
  if (cat_kind_[cat] == 0) {
    cat_kind_[cat] = static_cast<std::uint8_t>(1 + static_cast<int>(eventKindFromCategory(text)));
  }
  return static_cast<EventKind>(cat_kind_[cat] - 1);
}

std::int32_t TraceParser::trackFor(TrackKind kind, std::int64_t pid, std::int64_t tid) {
  TrackSlot& slot =
      track_cache_[(TrackKeyHash{}(TrackKey{pid, tid, kind}) * 0x9E3779B97F4A7C15ull) >> 58];
  if (slot.track >= 0 && slot.pid == pid && slot.tid == tid && slot.kind == kind) {
    return slot.track;
  }
  // Exact keys: a trace with a track per event must not make each new track scan the others.
  auto [it, inserted] = track_lookup_.try_emplace(TrackKey{pid, tid, kind}, 0);
  if (inserted) {
    it->second = static_cast<std::int32_t>(out_.tracks.size());
    Track t;
    t.kind = kind;
    t.pid = pid;
    t.tid = tid;
    out_.tracks.push_back(std::move(t));
  }
  slot = {pid, tid, kind, it->second};
  return it->second;
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

inline void TraceParser::parseArgs(od::object args) {
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
          if (n >= 0 && n < kMaxId) {
            args_.step = static_cast<std::int32_t>(n);
          } else if (n != kNoStep) {
            args_.outOfRange("args.step", n);
          }
        } else if (key == "short name") {
          stringOf(v, args_.short_name);
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
          if (n >= 0 && n < kMaxId) {
            args_.bucket = static_cast<std::int32_t>(n);
          } else if (n != kNoBucket) {
            args_.outOfRange("args.bucket", n);
          }
        }
        break;
      case 'I':
        if (key == "In msg nelems" && intFrom(v, n)) args_.nelems = n;
        break;
      case 'C':
        if (key == "Collective name") stringOf(v, args_.coll_name);
        break;
      case 'O':
        if (key == "Out msg nelems" && intFrom(v, n)) args_.out_nelems = n;
        break;
      case 'G':
        if (key == "Group size" && intFrom(v, n)) args_.group_size = n;
        break;
      case 'S':
        if (key == "Seq" && intFrom(v, n)) args_.seq = n;
        break;
      case 'P':
        if (key == "Process Group Name") {
          stringOf(v, args_.pg_name);
        } else if (key == "Process Group ID") {  // older profilers: a number (or its text)
          if (args_.pg_name.empty() && !stringOf(v, args_.pg_name))
            args_.pg_name = trimToken(v.raw_json_token());
        } else if (key == "Process Group Description") {
          stringOf(v, args_.pg_desc);
        } else if (key == "Process Group Ranks") {
          stringOf(v, args_.pg_ranks);
        }
        break;
      case 'n':
        if (key == "name") stringOf(v, args_.name);
        break;
      default:
        break;
    }
  }
}

void TraceParser::keepCollectiveArgs() {
  CollectiveArgs c;
  c.correlation = args_.correlation;
  c.name = args_.coll_name;
  c.group = args_.pg_name;
  c.group_desc = args_.pg_desc;
  c.group_ranks = args_.pg_ranks;
  c.seq = args_.seq;
  c.in_nelems = args_.nelems;
  c.out_nelems = args_.out_nelems;
  c.group_size = args_.group_size >= 0 && args_.group_size <= kMaxId
                     ? static_cast<std::int32_t>(args_.group_size)
                     : -1;
  c.dtype = args_.dtype;
  out_.collective_args.push_back(std::move(c));
}

inline void TraceParser::parseEvent(od::object ev) {
  std::string_view ph, cat, name;
  TimeNs ts = 0, dur = 0;
  bool has_ts = false, has_dur = false, has_id = false, pid_numeric = true, tid_numeric = true;
  bool dur_in_range = true;
  const char* bad_id_key = nullptr;  // "pid" or "tid" when it is neither an integer nor a name
  od::json_type bad_id_type = od::json_type::null;
  std::int64_t pid = 0, tid = 0;
  std::uint64_t id = 0;
  unsigned seen = 0, repeated = 0;  // kKey* bits
  args_ = Args{};
  for (od::field field : ev) {
    const auto key = keyOf(field);
    od::value v = field.value();
    unsigned bit = 0;
    // By length first: each comparison is then of a few constant bytes.
    switch (key.size()) {
      case 2:
        bit = key == "ph" ? kKeyPh : key == "ts" ? kKeyTs : key == "id" ? kKeyId : 0u;
        break;
      case 3:
        bit = key == "dur"   ? kKeyDur
              : key == "cat" ? kKeyCat
              : key == "pid" ? kKeyPid
              : key == "tid" ? kKeyTid
                             : 0u;
        break;
      case 4:
        bit = key == "name" ? kKeyName : key == "args" ? kKeyArgs : 0u;
        break;
      default:
        break;
    }
    switch (bit) {
      case kKeyPh:
        if (!stringOf(v, ph)) fail("\"ph\" must be a string");
        break;
      case kKeyTs: {
        if (v.type() != od::json_type::number) fail("\"ts\" must be a number (microseconds)");
        const std::string_view token = v.raw_json_token();
        if (!plainMicros(token, ts) && !parseMicrosToNs(token, ts)) {
          if (!isJsonNumber(token)) throw simdjson::simdjson_error(simdjson::NUMBER_ERROR);
          fail("\"ts\" is not a finite number of microseconds in range");
        }
        has_ts = true;
        break;
      }
      case kKeyDur: {
        // A duration of the right type but an impossible value skips the event (see below).
        if (v.type() != od::json_type::number) fail("\"dur\" must be a number (microseconds)");
        const std::string_view token = v.raw_json_token();
        dur_in_range = plainMicros(token, dur) || parseMicrosToNs(token, dur);
        if (!dur_in_range && !isJsonNumber(token)) {
          throw simdjson::simdjson_error(simdjson::NUMBER_ERROR);
        }
        has_dur = true;
        break;
      }
      case kKeyName:
        if (!stringOf(v, name)) fail("\"name\" must be a string");
        break;
      case kKeyCat:
        if (!stringOf(v, cat)) fail("\"cat\" must be a string");
        break;
      case kKeyPid:
      case kKeyTid: {
        const bool is_pid = bit == kKeyPid;
        const od::json_type type = v.type();
        const bool numeric = intFrom(v, is_pid ? pid : tid);
        (is_pid ? pid_numeric : tid_numeric) = numeric;
        // A string names a process (Kineto's "Spans" rows); anything else is a broken id.
        if (!numeric && type != od::json_type::string) {
          bad_id_key = is_pid ? "pid" : "tid";
          bad_id_type = type;
        }
        break;
      }
      case kKeyId: {
        std::int64_t n = 0;
        has_id = intFrom(v, n);
        id = static_cast<std::uint64_t>(n);
        break;
      }
      case kKeyArgs: {
        const od::json_type type = v.type();
        if (type == od::json_type::object) {
          parseArgs(v.get_object());
        } else if (type != od::json_type::null) {
          tally(tallies_.args_not_object,
                [&] { return std::string("\"args\" is ") + typeName(type); });
        }
        break;
      }
      default:
        break;
    }
    repeated |= seen & bit;
    seen |= bit;
  }
  if (repeated != 0) [[unlikely]] {
    tally(tallies_.repeated_keys, [&] { return repeatedKeyNames(repeated); });
  }
  if (!(seen & kKeyPh)) fail("missing \"ph\" (event phase)");
  if (ph.empty()) fail("\"ph\" is empty; it must name the event's phase (\"X\", \"i\", ...)");
  if (ph.size() != 1) {  // "Xylophone" is not "X"
    ++tallies_.skipped_other_phase;
    return;
  }
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
    ++tallies_.skipped_other_phase;
    return;
  }
  if (!has_ts) fail("missing \"ts\"");
  if (!pid_numeric || !tid_numeric) {
    // Kineto's "Spans"/"Traces" rows name no process: not timeline data. Other ids are broken.
    if (bad_id_key != nullptr) {
      tally(tallies_.bad_ids,
            [&] { return "\"" + std::string(bad_id_key) + "\" is " + typeName(bad_id_type); });
    }
    return;
  }
  if (phase == 's' || phase == 'f') {
    if (!has_id) return;  // a flow without id cannot be paired
    const bool gpu = args_.has_device || args_.has_stream;
    addFlowEnd(phase, id, out_.names.intern(cat), out_.names.intern(name), ts,
               args_.has_device ? args_.device : pid, args_.has_stream ? args_.stream : tid, gpu);
    return;
  }
  if (phase == 'X') {
    if (!has_dur) fail("a complete event (ph \"X\") needs \"dur\"");
    // Negative, unparseable, or ending past what int64 ns hold: skipped, and said once.
    if (!dur_in_range || dur < 0 || dur > kMaxTraceSpanNs ||
        (ts > 0 && dur > std::numeric_limits<TimeNs>::max() - ts)) [[unlikely]] {
      tally(tallies_.bad_duration, [&] {
        if (!dur_in_range) {
          return std::string("\"dur\" is not a finite number of microseconds in range");
        }
        if (dur < 0) return "negative duration " + std::to_string(dur) + " ns";
        if (ts > 0 && dur > std::numeric_limits<TimeNs>::max() - ts) {
          return std::string("ts + dur is past the largest time a trace can hold (year 2262)");
        }
        return "a duration of " + microsText(dur) + " us, longer than a trace may span";
      });
      return;
    }
  } else {
    dur = 0;  // instant events
  }
  const NameId cat_id = internCached(cat);
  const EventKind kind = kindOfCategory(cat_id, cat);
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
    if (size > 0 && args_.nelems <= std::numeric_limits<std::int64_t>::max() / size) {
      bytes = args_.nelems * size;
    } else if (size > 0) {
      args_.outOfRange("args.\"In msg nelems\"", args_.nelems);
    }
  }
  if (args_.out_of_range != nullptr) [[unlikely]] {
    tally(tallies_.bad_args, [&] {
      return std::string(args_.out_of_range) + " " + std::to_string(args_.out_of_range_value) +
             " is out of range";
    });
  }
  if ((!args_.coll_name.empty() || !args_.pg_name.empty()) && isGpuKind(kind) &&
      args_.correlation != kNoCorrelation) {
    keepCollectiveArgs();
  }
  min_start_ = std::min(min_start_, ts);
  max_end_ = std::max(max_end_, ts + dur);
  const NameId name_id = internCached(name);
  if (!args_.short_name.empty() && kind == EventKind::Kernel) [[unlikely]]
    out_.addKernelShortName(name_id, args_.short_name);
  staged_->push_back(
      {ts, dur, args_.correlation, bytes, name_id, cat_id, args_.bucket, args_.step, track, kind});
}

void TraceParser::addFlowEnd(char ph, std::uint64_t id, NameId cat, NameId name, TimeNs ts,
                             std::int64_t pid, std::int64_t tid, bool gpu) {
  (ph == 's' ? flow_starts_ : flow_ends_).push_back({id, cat, name, ts, pid, tid, gpu});
}

std::int32_t TraceParser::flowEndTrack(const PendingFlowEnd& end) const {
  // An end that named its device or stream carries those, not its pid and tid: only that GPU
  // track is its own (a host track with the same numbers is another thread's).
  if (end.gpu) {
    const auto it = track_lookup_.find(TrackKey{end.pid, end.tid, TrackKind::Gpu});
    return it == track_lookup_.end() ? -1 : it->second;
  }
  for (const TrackKind kind : {TrackKind::Host, TrackKind::Gpu}) {
    if (auto it = track_lookup_.find(TrackKey{end.pid, end.tid, kind}); it != track_lookup_.end()) {
      return it->second;
    }
  }
  return -1;
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
    f.from_track = flowEndTrack(start);
    f.to_track = flowEndTrack(end);
    if (f.from_track < 0 || f.to_track < 0) continue;
    out_.flows.push_back(f);
  }
}

}  // namespace ddpscope::trace::reader
