#include "trace_reader.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>

#include "importer.h"
#include "json_locate.h"
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

// Rare: a key written with escapes ("\u0070h" is "ph"), decoded here. The field itself is not
// handed to the parser again: its address escaping would keep the hot loop's iterator out of
// registers (measured: a third slower loading).
[[gnu::noinline, gnu::cold]] std::string_view unescapedKey(const char* p) {
  thread_local std::string key;
  key.clear();
  auto hex4 = [&p](std::uint32_t& cp) {
    cp = 0;
    for (int k = 0; k < 4; ++k, ++p) {
      const char c = *p;
      const int h = c >= '0' && c <= '9'   ? c - '0'
                    : c >= 'a' && c <= 'f' ? c - 'a' + 10
                    : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                           : -1;
      if (h < 0) return false;
      cp = cp * 16 + static_cast<std::uint32_t>(h);
    }
    return true;
  };
  for (;;) {
    const char c = *p++;
    if (c == '"') return key;
    if (c != '\\') {
      key.push_back(c);
      continue;
    }
    const char e = *p++;
    switch (e) {
      case 'b':
        key.push_back('\b');
        break;
      case 'f':
        key.push_back('\f');
        break;
      case 'n':
        key.push_back('\n');
        break;
      case 'r':
        key.push_back('\r');
        break;
      case 't':
        key.push_back('\t');
        break;
      case 'u': {
        std::uint32_t cp = 0;
        if (!hex4(cp)) return {};
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t low = 0;
          if (p[0] != '\\' || p[1] != 'u') return {};
          p += 2;
          if (!hex4(low) || low < 0xDC00 || low > 0xDFFF) return {};
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return {};
        }
        if (cp < 0x80) {
          key.push_back(static_cast<char>(cp));
        } else if (cp < 0x800) {
          key.push_back(static_cast<char>(0xC0 | (cp >> 6)));
          key.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else if (cp < 0x10000) {
          key.push_back(static_cast<char>(0xE0 | (cp >> 12)));
          key.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          key.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        } else {
          key.push_back(static_cast<char>(0xF0 | (cp >> 18)));
          key.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
          key.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
          key.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
        }
        break;
      }
      case '"':
      case '\\':
      case '/':
        key.push_back(e);
        break;
      default:
        return {};  // not an escape (the parser reports it where it matters)
    }
  }
}

std::string_view keyOf(od::field& field) {
  const char* p = field.key().raw();
  const char* q = p;
  while (*q != '"') {
    if (*q == '\\') return unescapedKey(p);
    ++q;
  }
  return {p, static_cast<std::size_t>(q - p)};
}

bool isJsonSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string_view trimToken(std::string_view t) {
  while (!t.empty() && isJsonSpace(t.back()))
    t.remove_suffix(1);
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
  // A bad escape is a JSON error (located and explained by the caller), not a wrong type.
  const auto error = v.get_string().get(out);
  if (error != simdjson::SUCCESS) throw simdjson::simdjson_error(error);
  return true;
}

// Whether a number token is a JSON number at all: the parser types a value by its first byte,
// so "-Infinity" reaches us as a number.
bool isJsonNumber(std::string_view token) {
  const std::size_t i = !token.empty() && token[0] == '-' ? 1 : 0;
  return i < token.size() && token[i] >= '0' && token[i] <= '9';
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

// A raw integer token of at most 18 digits (optional minus, trailing JSON whitespace), which
// cannot overflow; false for anything else, which from_chars then takes. The same values as
// from_chars, several times faster on the short ids every event carries.
inline bool plainInt(std::string_view token, std::int64_t& out) {
  const char* p = token.data();
  const char* const end = p + token.size();
  const bool negative = p < end && *p == '-';
  p += negative ? 1 : 0;
  const char* const digits = p;
  std::uint64_t v = 0;
  while (p < end && static_cast<unsigned char>(*p - '0') < 10) {
    v = v * 10 + static_cast<std::uint64_t>(*p - '0');
    ++p;
  }
  if (p == digits || p - digits > 18) return false;
  while (p < end && isJsonSpace(*p))
    ++p;
  if (p != end) return false;
  out = negative ? -static_cast<std::int64_t>(v) : static_cast<std::int64_t>(v);
  return true;
}

// parseMicrosToNs for the form nearly every time takes ("5247.995": up to 15 digits, a point
// and three decimals, or digits alone); false for anything else, which parseMicrosToNs then
// takes. The same values, at a third of its cost.
inline bool plainMicros(std::string_view token, std::int64_t& ns) {
  const char* p = token.data();
  const char* const end = p + token.size();
  const char* const digits = p;
  std::uint64_t whole = 0;
  while (p < end && static_cast<unsigned char>(*p - '0') < 10) {
    whole = whole * 10 + static_cast<std::uint64_t>(*p - '0');
    ++p;
  }
  if (p == digits || p - digits > 15) return false;
  std::uint64_t frac = 0;
  if (p < end && *p == '.') {
    if (end - p < 4) return false;
    const auto a = static_cast<unsigned char>(p[1] - '0');
    const auto b = static_cast<unsigned char>(p[2] - '0');
    const auto c = static_cast<unsigned char>(p[3] - '0');
    if (a > 9 || b > 9 || c > 9) return false;
    frac = a * 100u + b * 10u + c;
    p += 4;
  }
  while (p < end && isJsonSpace(*p))
    ++p;
  if (p != end) return false;  // more decimals, an exponent, a sign: the general parse
  ns = static_cast<std::int64_t>(whole * 1000 + frac);
  return true;
}

// Integer from a number or a numeric string ("7", "0x1f"); false when neither.
bool intFrom(od::value v, std::int64_t& out) {
  switch (v.type()) {
    case od::json_type::number: {
      const std::string_view raw = v.raw_json_token();
      if (plainInt(raw, out)) return true;  // nearly every id: up to 18 digits
      const auto token = trimToken(raw);
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
  PaddedBuffer piece;
};

// Offset of the '[' that opens the events: the document's own for a bare array, else the value
// of the top-level "traceEvents" key, found by a string-aware scan of at most `limit` bytes.
// npos when not found.
std::size_t findEventArray(std::string_view json, std::size_t limit) {
  std::size_t i = 0;
  while (i < json.size() && isJsonSpace(json[i]))
    ++i;
  if (i < json.size() && json[i] == '[') return i;
  if (i >= json.size() || json[i] != '{') return std::string_view::npos;
  constexpr std::string_view kKey = "\"traceEvents\"";
  std::int64_t depth = 0;
  limit = std::min(limit, json.size());
  for (; i < limit; ++i) {
    const char c = json[i];
    if (c == '"') {
      if (depth == 1 && json.substr(i, kKey.size()) == kKey) {
        std::size_t j = i + kKey.size();
        while (j < json.size() && isJsonSpace(json[j]))
          ++j;
        if (j < json.size() && json[j] == ':') {
          ++j;
          while (j < json.size() && isJsonSpace(json[j]))
            ++j;
          return j < json.size() && json[j] == '[' ? j : std::string_view::npos;
        }
      }
      for (++i; i < limit && json[i] != '"'; ++i) {
        if (json[i] == '\\') ++i;
      }
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// The first place at or after `from` (and before `limit`) where an event ends and the next
// begins on a new line: ",<space>\n<space>{". JSON strings cannot hold a raw newline, so such a
// place is never inside a string; whether it is between two events of the array (and not inside
// an event) is checked by parsing the piece it ends. When `indent` is given, the line must
// begin with exactly that whitespace (the first event's), which skips most places inside events
// (nested lists are indented deeper). Returns {offset of ',', offset of '{'}.
std::pair<std::size_t, std::size_t> nextEventBoundary(std::string_view json, std::size_t from,
                                                      std::size_t limit,
                                                      std::optional<std::string_view> indent) {
  constexpr auto npos = std::string_view::npos;
  limit = std::min(limit, json.size());
  while (from < limit) {
    const void* hit = std::memchr(json.data() + from, '\n', limit - from);
    if (hit == nullptr) return {npos, npos};
    const std::size_t nl = static_cast<std::size_t>(static_cast<const char*>(hit) - json.data());
    std::size_t after = nl + 1;
    while (after < json.size() && isJsonSpace(json[after]))
      ++after;
    std::size_t before = nl;
    while (before > 0 && isJsonSpace(json[before - 1]))
      --before;
    if (after < json.size() && json[after] == '{' && before > 0 && json[before - 1] == ',' &&
        (!indent || json.substr(nl + 1, after - nl - 1) == *indent)) {
      return {before - 1, after};
    }
    from = nl + 1;
  }
  return {npos, npos};
}

ReaderScratch& threadScratch() {
  thread_local ReaderScratch scratch;
  return scratch;
}

thread_local ReadStats last_read_stats;

// Events tolerated by skipping them or ignoring one of their fields: counted, with the first one
// described, so that a million of them make one warning.
struct Tally {
  std::size_t count = 0;
  std::size_t first_index = 0;
  std::uint64_t first_offset = kNoOffset;
  std::string first_detail;
};

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

const char* typeName(od::json_type type) {
  switch (type) {
    case od::json_type::array:
      return "an array";
    case od::json_type::object:
      return "an object";
    case od::json_type::number:
      return "a number out of the integer range";
    case od::json_type::string:
      return "a string";
    case od::json_type::boolean:
      return "true or false";
    case od::json_type::null:
      return "null";
  }
  return "not an integer";
}

std::string microsText(TimeNs ns) {
  std::string out;
  appendMicros(out, ns);
  return out;
}

constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max();  // exclusive

struct TrackKey {
  std::int64_t pid;
  std::int64_t tid;
  TrackKind kind;
  bool operator==(const TrackKey&) const = default;
};

struct TrackKeyHash {
  std::size_t operator()(const TrackKey& k) const noexcept {
    std::uint64_t h = static_cast<std::uint64_t>(k.pid) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<std::uint64_t>(k.tid) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h ^ static_cast<std::uint64_t>(k.kind));
  }
};

std::array<NameId, 512> filledNameCache() {
  std::array<NameId, 512> cache;
  cache.fill(StringTable::npos);
  return cache;
}

class TraceParser {
 public:
  TraceParser(const PaddedBuffer& json, const std::string& name, const ReadOptions& options)
      : json_(json), name_(name), options_(options) {}

  RankTrace parse();
  // The same result, parsing the event array in pieces of about options.piece_bytes so the parser's
  // index stays small and warm (see parseTrace). nullopt when the layout does not allow it;
  // throws on any problem, and the caller then parses the whole document for the exact error.
  std::optional<RankTrace> parseInPieces();

 private:
  // Offset in the file of a position in the text being parsed (the document, or a piece of it
  // with a made-up prefix: see parseInPieces).
  std::uint64_t offsetOf(const char* p) const {
    if (p < text_begin_ || p > text_end_) return kNoOffset;
    if (p < piece_start_) return piece_offset_;
    return piece_offset_ + static_cast<std::uint64_t>(p - piece_start_);
  }
  std::uint64_t locationOf(od::value& v) const {
    const char* p = nullptr;
    if (v.current_location().get(p) != simdjson::SUCCESS) return kNoOffset;
    return offsetOf(p);
  }
  // The parser only knows the kind of a syntax error: find where it is and say what is wrong.
  TraceError jsonError(simdjson::error_code code) const;
  [[noreturn]] void fail(std::string what) { throw FormatProblem{event_offset_, std::move(what)}; }
  template <typename Detail>
  void tally(Tally& t, Detail&& detail) {
    if (t.count++ == 0) {
      t.first_index = event_index_;
      t.first_offset = event_offset_;
      t.first_detail = detail();
    }
  }
  void warnAbout(const Tally& t, std::string_view what);
  void checkTimes();

  void parseTopLevel(od::object top);
  void parseEvents(od::array events);
  void parseEvent(od::object ev);
  void parseArgs(od::object args);
  void keepCollectiveArgs();
  void parseDistributedInfo(od::object info);
  void parseDdpscopeBlock(od::object block);
  void addFlowEnd(char ph, std::uint64_t id, NameId cat, NameId name, TimeNs ts, std::int64_t pid,
                  std::int64_t tid);
  void resolveFlows();
  std::int32_t hostOrGpuTrack(std::int64_t pid, std::int64_t tid) const;
  std::int32_t trackFor(TrackKind kind, std::int64_t pid, std::int64_t tid);
  // out_.names.intern(s) behind a small direct-mapped cache: events repeat a few names.
  NameId internCached(std::string_view s);
  EventKind kindOfCategory(NameId cat, std::string_view text);
  void checkCancel(const char* where);
  void prepareScratch(std::size_t parser_bytes, std::size_t json_bytes);
  // Parses pieces [begin, end) of `middle` (offsets [from, to) in the document) as the middle of
  // the event array.
  // When the last piece of all does not parse (a cut inside an event), it is left for the rest
  // of the document to take: returns its start then.
  std::optional<std::size_t> parseMiddlePieces(
      const std::vector<std::pair<std::size_t, std::size_t>>& middle, std::size_t begin,
      std::size_t end, bool bare_array);
  // What a failed piece may have added, to take it back before the piece is parsed again (names,
  // tracks and metadata it added are the ones the retry adds first, in the same order).
  struct Checkpoint {
    std::size_t staged, flow_starts, flow_ends, event_index, skipped_other_phase;
    TimeNs min_start, max_end;
    std::array<Tally, 5> tallies;
  };
  Checkpoint checkpoint() const;
  void restore(const Checkpoint& mark);
  // Takes over what a helper parsed from the pieces right after this parser's: names, tracks,
  // rows, flows, metadata, counts; first occurrences keep their place in the document.
  void absorb(TraceParser& helper);
  void parseDocument(const char* begin, std::size_t size, std::size_t capacity);
  void parsePiece(std::string_view prefix, std::size_t from, std::size_t to,
                  std::string_view suffix);
  RankTrace finish();
  void moveStagedIntoTracks();

  const PaddedBuffer& json_;
  const std::string& name_;
  const ReadOptions& options_;
  RankTrace out_;
  bool saw_events_ = false;
  bool saw_rank_ = false;
  bool saw_world_size_ = false;
  std::uint64_t event_offset_ = kNoOffset;
  std::size_t event_index_ = 0;
  std::size_t skipped_other_phase_ = 0;
  Tally bad_duration_, bad_ids_, bad_args_, args_not_object_, repeated_keys_;
  // Earliest start and latest end of the events kept (ts + dur cannot overflow: checked).
  TimeNs min_start_ = std::numeric_limits<TimeNs>::max();
  TimeNs max_end_ = std::numeric_limits<TimeNs>::min();

  // Per-event args, reset for each event.
  struct Args {
    std::int64_t stream = 0, device = 0, correlation = kNoCorrelation, bytes = kNoBytes;
    std::int64_t nelems = -1;
    std::int32_t bucket = kNoBucket, step = kNoStep;
    std::string_view dtype, name;
    // A collective's arguments (Kineto's "Collective name", "Process Group Name", ...).
    std::string_view coll_name, pg_name, pg_desc, pg_ranks;
    std::int64_t seq = -1, out_nelems = -1, group_size = -1;
    bool has_stream = false, has_device = false;
    const char* out_of_range = nullptr;  // the first value ignored for being out of range
    std::int64_t out_of_range_value = 0;
    void outOfRange(const char* what, std::int64_t value) {
      if (out_of_range == nullptr) {
        out_of_range = what;
        out_of_range_value = value;
      }
    }
  } args_;

  ReaderScratch* scratch_ = nullptr;
  std::unique_ptr<ReaderScratch> owned_scratch_;  // helpers on threads of their own
  std::vector<StagedEvent>* staged_ = nullptr;
  // The text being parsed: the document itself, or a piece of it copied after a prefix.
  const char* text_begin_ = json_.data();
  const char* text_end_ = json_.data() + json_.size();
  const char* piece_start_ = json_.data();  // the first byte copied from the document
  std::uint64_t piece_offset_ = 0;          // its offset in the document
  std::unordered_map<TrackKey, std::int32_t, TrackKeyHash> track_lookup_;
  // Caches in front of the string table and the track map (a slot is checked before it is
  // used, so a collision costs a lookup, never a wrong id).
  std::array<NameId, 512> name_cache_ = filledNameCache();
  std::vector<std::uint8_t> cat_kind_;  // by category id: 1 + EventKind, 0 when not known yet
  struct TrackSlot {
    std::int64_t pid = 0, tid = 0;
    TrackKind kind = TrackKind::Host;
    std::int32_t track = -1;
  };
  std::array<TrackSlot, 64> track_cache_{};
  std::vector<PendingFlowEnd> flow_starts_;
  std::vector<PendingFlowEnd> flow_ends_;
  std::optional<std::size_t> rest_from_;  // a helper's parseMiddlePieces result
  // Helpers whose rows come after this parser's first absorbed_after_ rows, in document order.
  std::vector<std::unique_ptr<TraceParser>> absorbed_;
  std::size_t absorbed_after_ = 0;
};

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

EventKind TraceParser::kindOfCategory(NameId cat, std::string_view text) {
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

void TraceParser::warnAbout(const Tally& t, std::string_view what) {
  if (t.count == 0) return;
  std::string w = std::to_string(t.count) + " " + std::string(what) +
                  "; the first is traceEvents[" + std::to_string(t.first_index) + "]";
  if (t.first_offset != kNoOffset) w += " (byte " + std::to_string(t.first_offset) + ")";
  out_.warnings.push_back(w + ": " + t.first_detail);
}

TraceError TraceParser::jsonError(simdjson::error_code code) const {
  const std::string_view text = json_.view();
  std::string context;
  if (event_offset_ != kNoOffset) context = " in traceEvents[" + std::to_string(event_index_) + "]";
  if (const auto problem = locateJsonProblem(text)) {
    std::string what = "invalid JSON" + context + " at " + lineAndColumn(text, problem->offset) +
                       ": " + problem->what;
    if (!problem->truncated) {
      const auto near = excerptAt(text, problem->offset);
      if (!near.empty()) what += " (near \"" + near + "\")";
    }
    return TraceError(name_, problem->offset, what);
  }
  return TraceError(name_, event_offset_, describeJsonError(code) + context);
}

void TraceParser::checkTimes() {
  for (const auto& f : out_.flows) {
    min_start_ = std::min({min_start_, f.from_ts, f.to_ts});
    max_end_ = std::max({max_end_, f.from_ts, f.to_ts});
  }
  if (min_start_ > max_end_) return;  // no timed events
  // Exact even when the signed difference would overflow.
  const std::uint64_t span =
      static_cast<std::uint64_t>(max_end_) - static_cast<std::uint64_t>(min_start_);
  if (span > static_cast<std::uint64_t>(kMaxTraceSpanNs)) {
    throw TraceError(name_, kNoOffset,
                     "the events span more than 146 years (from ts " + microsText(min_start_) +
                         " to " + microsText(max_end_) +
                         " us): some timestamps are corrupt or come from different clocks");
  }
  const TimeNs base = out_.base_time_ns;
  if ((min_start_ > 0 && base > std::numeric_limits<TimeNs>::max() - min_start_) ||
      (min_start_ < 0 && base < std::numeric_limits<TimeNs>::min() - min_start_)) {
    throw TraceError(name_, kNoOffset,
                     "baseTimeNanoseconds (" + std::to_string(base) + ") plus the earliest ts (" +
                         microsText(min_start_) +
                         " us) is outside the times a trace can hold (years 1678 to 2261)");
  }
}

void TraceParser::checkCancel(const char* where) {
  if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) throw LoadCancelled();
  if (options_.progress && json_.size() > 0) {
    const auto off = offsetOf(where);
    if (off != kNoOffset)
      options_.progress(static_cast<double>(off) / static_cast<double>(json_.size()));
  }
}

void TraceParser::prepareScratch(std::size_t parser_bytes, std::size_t json_bytes) {
  out_.path = name_;
  // Fresh parser memory costs a page fault per 4 KiB touched, which dominated loading: reuse
  // one parser per thread, sized with some headroom so the next rank's file of a run usually
  // fits. releaseReaderMemory() gives it back. A helper parsing pieces on a thread of its own
  // has its own, which outlives that thread until its rows are merged.
  scratch_ = owned_scratch_ ? owned_scratch_.get() : &threadScratch();
  if (scratch_->parser.capacity() < parser_bytes) {
    scratch_->parser = od::parser();
    const std::size_t want = std::max(parser_bytes + parser_bytes / 8, kMinParserBytes);
    if (scratch_->parser.allocate(want) != simdjson::SUCCESS) {
      throw TraceError(
          name_, kNoOffset,
          "not enough memory to parse a " + std::to_string(json_.size() >> 20) + " MiB trace");
    }
  }
  staged_ = &scratch_->staged;
  staged_->clear();
  // Our events are about 200 bytes of JSON and Kineto's more: this rarely has to grow.
  const std::size_t estimate = json_bytes / 128 + 1024;
  if (staged_->capacity() < estimate) {
    staged_->reserve(estimate);
    adviseHugePages(staged_->data(), estimate * sizeof(StagedEvent));
  }
}

void TraceParser::parseDocument(const char* begin, std::size_t size, std::size_t capacity) {
  od::document doc = scratch_->parser.iterate(begin, size, capacity);
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
}

RankTrace TraceParser::parse() {
  prepareScratch(json_.size(), json_.size());
  // A UTF-8 byte-order mark is not JSON but harmless (some Windows editors write one): skip it.
  const std::size_t bom =
      json_.size() >= 3 && std::memcmp(json_.data(), "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  try {
    parseDocument(json_.data() + bom, json_.size() - bom, json_.capacity() - bom);
  } catch (const simdjson::simdjson_error& e) {
    throw jsonError(e.error());
  } catch (const FormatProblem& p) {
    throw TraceError(name_, p.offset,
                     "traceEvents[" + std::to_string(event_index_) + "]: " + p.what);
  }
  return finish();
}

void TraceParser::parsePiece(std::string_view prefix, std::size_t from, std::size_t to,
                             std::string_view suffix) {
  auto& buf = scratch_->piece;
  const std::size_t piece_bytes = options_.piece_bytes;
  if (buf.capacity() == 0) buf.reserveMore(piece_bytes + (piece_bytes >> 2));
  buf.setSize(0);
  buf.append(prefix.data(), prefix.size());
  buf.append(json_.data() + from, to - from);
  buf.append(suffix.data(), suffix.size());
  text_begin_ = buf.data();
  text_end_ = buf.data() + buf.size();
  piece_start_ = buf.data() + prefix.size();
  piece_offset_ = from;
  parseDocument(buf.data(), buf.size(), buf.capacity());
}

std::optional<std::size_t> TraceParser::parseMiddlePieces(
    const std::vector<std::pair<std::size_t, std::size_t>>& middle, std::size_t begin,
    std::size_t end, bool bare_array) {
  // Wrapped so that the events sit as deep as in the whole document (the parser's depth limit
  // must give the same verdict either way).
  const std::string_view open = bare_array ? "[" : "{\"traceEvents\":[";
  const std::string_view close = bare_array ? "]" : "]}";
  // A cut can fall inside an event (a comma, a newline and '{' in a list of objects in its
  // args): neither side then parses alone. A piece that fails is joined with the next ones until
  // they parse (the events read from the failed attempt are taken back and read again). The last
  // piece of all is left to the rest of the document. Anything else still fails, and the
  // whole-document parse gives the exact message.
  const std::size_t most = scratch_->parser.capacity() - open.size() - close.size();
  for (std::size_t i = begin; i < end; ++i) {
    const Checkpoint mark = checkpoint();
    for (std::size_t last = i;; ++last) {
      saw_events_ = false;  // each wrapper names the one event array again
      try {
        parsePiece(open, middle[i].first, middle[last].second, close);
        i = last;
        break;
      } catch (const LoadCancelled&) {
        throw;
      } catch (const std::bad_alloc&) {
        throw;
      } catch (...) {
        restore(mark);
        if (last + 1 >= end) {
          if (last == i && end == middle.size()) return middle[i].first;
          throw;
        }
        if (last > i && middle[last + 1].second - middle[i].first > most) throw;
      }
    }
  }
  return std::nullopt;
}

TraceParser::Checkpoint TraceParser::checkpoint() const {
  return {staged_->size(),
          flow_starts_.size(),
          flow_ends_.size(),
          event_index_,
          skipped_other_phase_,
          min_start_,
          max_end_,
          {bad_duration_, bad_ids_, bad_args_, args_not_object_, repeated_keys_}};
}

void TraceParser::restore(const Checkpoint& mark) {
  staged_->resize(mark.staged);
  flow_starts_.resize(mark.flow_starts);
  flow_ends_.resize(mark.flow_ends);
  event_index_ = mark.event_index;
  skipped_other_phase_ = mark.skipped_other_phase;
  min_start_ = mark.min_start;
  max_end_ = mark.max_end;
  bad_duration_ = mark.tallies[0];
  bad_ids_ = mark.tallies[1];
  bad_args_ = mark.tallies[2];
  args_not_object_ = mark.tallies[3];
  repeated_keys_ = mark.tallies[4];
}

namespace {
void mergeTally(Tally& into, const Tally& from, std::size_t index_base) {
  if (from.count == 0) return;
  if (into.count == 0) {
    into.first_index = from.first_index + index_base;
    into.first_offset = from.first_offset;
    into.first_detail = from.first_detail;
  }
  into.count += from.count;
}
}  // namespace

void TraceParser::absorb(TraceParser& h) {
  std::vector<NameId> name_of(h.out_.names.size());
  for (std::size_t i = 0; i < name_of.size(); ++i)
    name_of[i] = out_.names.intern(h.out_.names[static_cast<NameId>(i)]);
  std::vector<std::int32_t> track_of(h.out_.tracks.size());
  for (std::size_t j = 0; j < track_of.size(); ++j) {
    const auto& t = h.out_.tracks[j];
    track_of[j] = trackFor(t.kind, t.pid, t.tid);
  }
  // The helper's rows stay where it staged them (copying them here made a big file's peak
  // 28 B/event higher); they are renumbered in place and written after this parser's rows so far.
  for (auto& e : *h.staged_) {
    e.name = name_of[e.name];
    e.cat = name_of[e.cat];
    e.track = track_of[static_cast<std::size_t>(e.track)];
  }
  if (absorbed_.empty()) absorbed_after_ = staged_->size();
  for (auto* list : {&h.flow_starts_, &h.flow_ends_}) {
    auto& into = list == &h.flow_starts_ ? flow_starts_ : flow_ends_;
    for (auto f : *list) {
      f.cat = name_of[f.cat];
      f.name = name_of[f.name];
      into.push_back(f);
    }
  }
  for (auto& c : h.out_.collective_args)
    out_.collective_args.push_back(std::move(c));
  for (const auto& [pid, n] : h.out_.process_names)
    out_.process_names[pid] = n;
  for (const auto& [key, n] : h.out_.thread_names)
    out_.thread_names[key] = n;
  skipped_other_phase_ += h.skipped_other_phase_;
  mergeTally(bad_duration_, h.bad_duration_, event_index_);
  mergeTally(bad_ids_, h.bad_ids_, event_index_);
  mergeTally(bad_args_, h.bad_args_, event_index_);
  mergeTally(args_not_object_, h.args_not_object_, event_index_);
  mergeTally(repeated_keys_, h.repeated_keys_, event_index_);
  event_index_ += h.event_index_;
}

std::optional<RankTrace> TraceParser::parseInPieces() {
  const std::string_view json = json_.view();
  const std::size_t piece_bytes = options_.piece_bytes;
  const std::size_t events = findEventArray(json, std::max(piece_bytes * 4, std::size_t{16} << 20));
  if (events == std::string_view::npos) return std::nullopt;
  std::size_t from = events + 1;
  // The whitespace the first event's line begins with, when it begins a line of its own.
  std::optional<std::string_view> indent;
  if (const auto first = json.find_first_not_of(" \n\r\t", from);
      first != std::string_view::npos && json[first] == '{') {
    const auto nl = json.find_last_of('\n', first);
    if (nl != std::string_view::npos && nl >= from) indent = json.substr(nl + 1, first - nl - 1);
  }
  auto boundary = nextEventBoundary(json, from + piece_bytes, json.size(), indent);
  if (boundary.first == std::string_view::npos) return std::nullopt;  // e.g. all on one line
  prepareScratch(piece_bytes + (piece_bytes >> 2), json.size());
  const bool bare_array = json.find_first_not_of(" \n\r\t") == events;
  if (!bare_array) {
    // The keys before the events, as a document of their own: {..., "traceEvents": []}.
    parsePiece({}, 0, events, "[]}");
  }
  std::vector<std::pair<std::size_t, std::size_t>> middle;  // [from, to) of each piece
  while (boundary.first != std::string_view::npos) {
    middle.emplace_back(from, boundary.first);
    from = boundary.second;
    boundary = nextEventBoundary(json, from + piece_bytes, json.size(), indent);
  }
  // Several threads when allowed and worth it (at least 8 pieces each: a helper's fresh memory
  // and its start cost more than a few pieces take): contiguous runs of pieces, the first on
  // this thread; the others' results are merged in document order.
  const std::size_t threads =
      std::max<std::size_t>(1, std::min<std::size_t>(options_.threads, middle.size() / 8));
  if (threads == 1) {
    if (const auto rest = parseMiddlePieces(middle, 0, middle.size(), bare_array)) from = *rest;
  } else {
    ReadOptions helper_options = options_;
    helper_options.progress = nullptr;  // reported by this thread alone
    std::vector<std::unique_ptr<TraceParser>> helpers;
    std::vector<std::exception_ptr> errors(threads);
    std::vector<std::thread> pool;
    auto first_of = [&](std::size_t g) { return middle.size() * g / threads; };
    for (std::size_t g = 1; g < threads; ++g) {
      helpers.push_back(std::make_unique<TraceParser>(json_, name_, helper_options));
      helpers.back()->owned_scratch_ = std::make_unique<ReaderScratch>();
    }
    auto join = [&pool] {
      for (auto& t : pool)
        t.join();
    };
    try {
      for (std::size_t g = 1; g < threads; ++g) {
        pool.emplace_back([&, g] {
          try {
            auto& h = *helpers[g - 1];
            const auto begin = first_of(g), end = first_of(g + 1);
            h.prepareScratch(piece_bytes + (piece_bytes >> 2),
                             middle[end - 1].second - middle[begin].first);
            if (const auto rest = h.parseMiddlePieces(middle, begin, end, bare_array)) {
              h.rest_from_ = *rest;
            }
          } catch (...) {
            errors[g] = std::current_exception();
          }
        });
      }
    } catch (...) {  // no thread to be had: stop the ones started, then parse whole
      join();
      throw;
    }
    try {
      parseMiddlePieces(middle, 0, first_of(1), bare_array);
    } catch (...) {
      errors[0] = std::current_exception();
    }
    join();
    for (const auto& e : errors) {
      if (e) std::rethrow_exception(e);
    }
    for (auto& h : helpers)
      absorb(*h);
    if (helpers.back()->rest_from_) from = *helpers.back()->rest_from_;
    absorbed_ = std::move(helpers);  // their rows are written into the columns by finish()
  }
  const std::size_t pieces = middle.size() + 1;
  // The rest: the last events, the end of the array and the keys after it. Its "traceEvents"
  // is the one already begun; a second one after it is still an error.
  saw_events_ = false;
  parsePiece(bare_array ? "[" : "{\"traceEvents\":[", from, json.size(), {});
  text_begin_ = piece_start_ = json_.data();
  text_end_ = json_.data() + json_.size();
  piece_offset_ = 0;
  auto trace = finish();
  last_read_stats.pieces = pieces;
  last_read_stats.threads = threads;
  return trace;
}

RankTrace TraceParser::finish() {
  if (!saw_events_) {
    throw TraceError(name_, kNoOffset,
                     "no \"traceEvents\" array: this is not a Chrome/Kineto trace");
  }
  moveStagedIntoTracks();
  resolveFlows();
  out_.sortCollectiveArgs();
  if (skipped_other_phase_ > 0) {
    out_.warnings.push_back(std::to_string(skipped_other_phase_) +
                            " events of unsupported phases (counters, async, ...) were skipped");
  }
  warnAbout(bad_duration_, "events with a negative or impossible duration were skipped");
  warnAbout(bad_ids_, "events with a pid or tid that is not an integer were skipped");
  warnAbout(bad_args_, "events have args out of range (step, bucket, message size), ignored");
  warnAbout(args_not_object_, "events have an \"args\" that is not an object, ignored");
  warnAbout(repeated_keys_, "events repeat a key (the last value was used)");
  if (!saw_rank_) {
    // Fall back to the file name: rank-<r>.json[.gz] (the rule every importer shares).
    if (const auto r = rankFromFileName(name_)) out_.rank = *r;
  }
  if (out_.world_size < 1) out_.world_size = 1;
  out_.world_size_declared = saw_world_size_;
  checkTimes();
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
      // Any integer: events before the base make it negative when written back.
      const auto at = locationOf(v);
      std::int64_t base = 0;
      if (!intFrom(v, base)) {
        throw TraceError(name_, at,
                         "\"baseTimeNanoseconds\" must be an integer (ns since the epoch)");
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
      if (out_.ddpscope.present) {
        out_.warnings.push_back("the \"ddpscope\" block appears twice; the last one was used");
        out_.ddpscope = DdpscopeBlock{};
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
    const auto at = locationOf(v);
    std::int64_t n = 0;
    if (key == "rank" && intFrom(v, n)) {
      if (n < 0 || n > 1'000'000) {
        throw TraceError(
            name_, at,
            "distributedInfo.rank out of range (" + std::to_string(n) + "; 0 to 1000000)");
      }
      out_.rank = static_cast<std::int32_t>(n);
      saw_rank_ = true;
    } else if (key == "world_size" && intFrom(v, n)) {
      if (n < 1 || n > 1'000'000) {
        throw TraceError(
            name_, at,
            "distributedInfo.world_size out of range (" + std::to_string(n) + "; 1 to 1000000)");
      }
      out_.world_size = static_cast<std::int32_t>(n);
      saw_world_size_ = true;
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
      std::int64_t n = 0;
      if (intFrom(v, n)) {
        if (n < 0) {
          out_.warnings.push_back("ddpscope.dropped_records " + std::to_string(n) +
                                  " is negative; taken as 0");
          n = 0;
        }
        b.dropped_records = n;
      }
    } else if (key == "buckets" && v.type() == od::json_type::array) {
      // A bucket with an impossible id or size is left out (one warning for all of them).
      std::size_t index = 0, ignored = 0;
      std::string first_problem;
      for (auto item : v.get_array()) {
        od::value bv = item.value();
        const auto at = locationOf(bv);
        if (bv.type() != od::json_type::object) {
          throw TraceError(name_, at, "ddpscope.buckets entries must be objects");
        }
        BucketDef def;
        std::string problem;
        for (od::field bf : bv.get_object()) {
          const auto bk = keyOf(bf);
          od::value x = bf.value();
          std::int64_t n = 0;
          if (bk == "id" && intFrom(x, n)) {
            if (n >= 0 && n < kMaxId) {
              def.id = static_cast<std::int32_t>(n);
            } else if (problem.empty()) {
              problem = "id " + std::to_string(n) + " is out of range (0 to " +
                        std::to_string(kMaxId - 1) + ")";
            }
          } else if (bk == "bytes" && intFrom(x, n)) {
            if (n >= 0) {
              def.bytes = n;
            } else if (problem.empty()) {
              problem = "bytes " + std::to_string(n) + " is negative";
            }
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
        if (problem.empty()) {
          b.buckets.push_back(std::move(def));
        } else if (ignored++ == 0) {
          first_problem = "ddpscope.buckets[" + std::to_string(index) + "]: " + problem +
                          "; the bucket definition was ignored" +
                          (at != kNoOffset ? " (byte " + std::to_string(at) + ")" : "");
        }
        ++index;
      }
      if (ignored > 0) {
        out_.warnings.push_back(
            first_problem +
            (ignored > 1 ? " (and " + std::to_string(ignored - 1) + " more buckets like it)" : ""));
      }
      std::set<std::int32_t> ids;
      for (const auto& def : b.buckets) {
        if (!ids.insert(def.id).second) {
          out_.warnings.push_back("ddpscope.buckets: bucket id " + std::to_string(def.id) +
                                  " is defined more than once; the first definition is used");
          break;
        }
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
          if (n >= 0 && n < kMaxId) {
            args_.step = static_cast<std::int32_t>(n);
          } else if (n != kNoStep) {
            args_.outOfRange("args.step", n);
          }
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

void TraceParser::parseEvent(od::object ev) {
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
          tally(args_not_object_, [&] { return std::string("\"args\" is ") + typeName(type); });
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
    tally(repeated_keys_, [&] { return repeatedKeyNames(repeated); });
  }
  if (!(seen & kKeyPh)) fail("missing \"ph\" (event phase)");
  if (ph.empty()) fail("\"ph\" is empty; it must name the event's phase (\"X\", \"i\", ...)");
  if (ph.size() != 1) {  // "Xylophone" is not "X"
    ++skipped_other_phase_;
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
    ++skipped_other_phase_;
    return;
  }
  if (!has_ts) fail("missing \"ts\"");
  if (!pid_numeric || !tid_numeric) {
    // Kineto's "Spans"/"Traces" rows name no process: not timeline data. Other ids are broken.
    if (bad_id_key != nullptr) {
      tally(bad_ids_,
            [&] { return "\"" + std::string(bad_id_key) + "\" is " + typeName(bad_id_type); });
    }
    return;
  }
  if (phase == 's' || phase == 'f') {
    if (!has_id) return;  // a flow without id cannot be paired
    addFlowEnd(phase, id, out_.names.intern(cat), out_.names.intern(name), ts, pid, tid);
    return;
  }
  if (phase == 'X') {
    if (!has_dur) fail("a complete event (ph \"X\") needs \"dur\"");
    // Negative, unparseable, or ending past what int64 ns hold: skipped, and said once.
    if (!dur_in_range || dur < 0 || dur > kMaxTraceSpanNs ||
        (ts > 0 && dur > std::numeric_limits<TimeNs>::max() - ts)) [[unlikely]] {
      tally(bad_duration_, [&] {
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
    tally(bad_args_, [&] {
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
  staged_->push_back({ts, dur, args_.correlation, bytes, internCached(name), cat_id, args_.bucket,
                      args_.step, track, kind});
}

void TraceParser::moveStagedIntoTracks() {
  // The rows in document order: this parser's first ones, the helpers', then the rest of ours.
  const StagedEvent* const own = staged_->data();
  const std::size_t split = absorbed_.empty() ? staged_->size() : absorbed_after_;
  std::vector<std::pair<const StagedEvent*, const StagedEvent*>> segments;
  segments.emplace_back(own, own + split);
  for (const auto& h : absorbed_)
    segments.emplace_back(h->staged_->data(), h->staged_->data() + h->staged_->size());
  segments.emplace_back(own + split, own + staged_->size());

  std::vector<std::size_t> count(out_.tracks.size(), 0);
  for (const auto& [begin, end] : segments) {
    for (const StagedEvent* e = begin; e != end; ++e)
      ++count[static_cast<std::size_t>(e->track)];
  }
  // Each column sized once, then written by index (no capacity check per value).
  std::vector<std::size_t> next(out_.tracks.size());
  for (std::size_t i = 0; i < out_.tracks.size(); ++i) {
    auto& t = out_.tracks[i];
    next[i] = t.size();
    t.resize(t.size() + count[i]);
  }
  for (const auto& [begin, end] : segments) {
    for (const StagedEvent* e = begin; e != end; ++e) {
      const auto ti = static_cast<std::size_t>(e->track);
      out_.tracks[ti].setRow(next[ti]++, {e->start, e->dur, e->name, e->cat, e->kind,
                                          e->correlation, e->bucket, e->step, e->bytes});
    }
  }
  staged_->clear();
  absorbed_.clear();  // the helpers' staging memory with them
}

void TraceParser::addFlowEnd(char ph, std::uint64_t id, NameId cat, NameId name, TimeNs ts,
                             std::int64_t pid, std::int64_t tid) {
  (ph == 's' ? flow_starts_ : flow_ends_).push_back({id, cat, name, ts, pid, tid});
}

std::int32_t TraceParser::hostOrGpuTrack(std::int64_t pid, std::int64_t tid) const {
  for (const TrackKind kind : {TrackKind::Host, TrackKind::Gpu}) {
    if (auto it = track_lookup_.find(TrackKey{pid, tid, kind}); it != track_lookup_.end()) {
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
  // Big documents are parsed a piece of the event array at a time (bounded, warm parser
  // memory). Whatever that path cannot take, and every error, goes through the whole-document
  // parse, which gives the exact message.
  if (options.piece_bytes > 0 && json.size() >= 4 * options.piece_bytes) {
    try {
      TraceParser pieces(json, name, options);
      if (auto trace = pieces.parseInPieces()) return std::move(*trace);
    } catch (const LoadCancelled&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (...) {
    }
  }
  TraceParser parser(json, name, options);
  auto trace = parser.parse();
  last_read_stats.pieces = 0;
  last_read_stats.threads = 1;
  return trace;
}

ReadStats lastReadStats() {
  return last_read_stats;
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
