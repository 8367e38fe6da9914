#pragma once
// Values of a JSON trace as the reader takes them from simdjson's on-demand parser: keys,
// strings, integers and microsecond times, read from the raw tokens where that is faster than the
// parser's own conversion (the same values). Shared by the reader's files; not an interface of
// the library.

#include <simdjson.h>

#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "trace_model.h"

namespace ddpscope::trace::reader {

namespace od = simdjson::ondemand;

// The reader's words for the parser's error codes ("a string is not closed (truncated file?)").
std::string describeJsonError(simdjson::error_code code);

// A key written with escapes ("\u0070h" is "ph"), decoded into thread-local storage; `p` is the
// first byte after the opening quote. Empty when an escape is invalid.
[[gnu::noinline, gnu::cold]] std::string_view unescapedKey(const char* p);

inline bool isJsonSpace(char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

inline std::string_view trimToken(std::string_view t) {
  while (!t.empty() && isJsonSpace(t.back()))
    t.remove_suffix(1);
  return t;
}

// A field's key. The field itself is not handed to the parser again for escaped keys (rare): its
// address escaping would keep the hot loop's iterator out of registers (measured: a third slower
// loading).
inline std::string_view keyOf(od::field& field) {
  const char* p = field.key().raw();
  const char* q = p;
  while (*q != '"') {
    if (*q == '\\') return unescapedKey(p);
    ++q;
  }
  return {p, static_cast<std::size_t>(q - p)};
}

// The text of a string value. Without escapes (nearly always) it is a view into the document,
// which saves the parser's copy into its string buffer; with escapes it is unescaped there.
// False when the value is not a string.
inline bool stringOf(od::value v, std::string_view& out) {
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
inline bool isJsonNumber(std::string_view token) {
  const std::size_t i = !token.empty() && token[0] == '-' ? 1 : 0;
  return i < token.size() && token[i] >= '0' && token[i] <= '9';
}

// Raw JSON text of any value (objects and arrays whole, scalars as their token).
std::string rawJson(od::value v);

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
inline bool intFrom(od::value v, std::int64_t& out) {
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

// What a value that should have been an integer is instead ("a string", "null", ...).
const char* typeName(od::json_type type);

// ns as microseconds with three decimals ("12.345").
std::string microsText(TimeNs ns);

}  // namespace ddpscope::trace::reader
