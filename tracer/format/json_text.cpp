#include "json_text.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace ddpscope::trace {

std::size_t utf8SequenceLength(std::string_view s, std::size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  std::size_t n = 0;
  std::uint32_t cp = 0;
  if (c < 0x80) return 1;
  if ((c & 0xE0) == 0xC0) {
    n = 2;
    cp = c & 0x1F;
  } else if ((c & 0xF0) == 0xE0) {
    n = 3;
    cp = c & 0x0F;
  } else if ((c & 0xF8) == 0xF0) {
    n = 4;
    cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    const auto cc = static_cast<unsigned char>(s[i + k]);
    if ((cc & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (cc & 0x3F);
  }
  const bool overlong = (n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000);
  if (overlong || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
  return n;
}

void appendJsonString(std::string& out, std::string_view s) {
  out.push_back('"');
  std::size_t i = 0;
  while (i < s.size()) {
    const char c = s[i];
    const auto u = static_cast<unsigned char>(c);
    if (u >= 0x20 && c != '"' && c != '\\' && u < 0x80) {
      out.push_back(c);
      ++i;
      continue;
    }
    switch (c) {
      case '"':
        out += "\\\"";
        ++i;
        continue;
      case '\\':
        out += "\\\\";
        ++i;
        continue;
      case '\n':
        out += "\\n";
        ++i;
        continue;
      case '\r':
        out += "\\r";
        ++i;
        continue;
      case '\t':
        out += "\\t";
        ++i;
        continue;
      default:
        break;
    }
    if (u < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", u);
      out += buf;
      ++i;
      continue;
    }
    const std::size_t n = utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD replacement character
      ++i;
    } else {
      out.append(s.substr(i, n));
      i += n;
    }
  }
  out.push_back('"');
}

void appendInt(std::string& out, std::int64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

void appendMicros(std::string& out, std::int64_t ns) {
  // Unsigned arithmetic so INT64_MIN is handled too.
  std::uint64_t mag = ns < 0 ? 0 - static_cast<std::uint64_t>(ns) : static_cast<std::uint64_t>(ns);
  if (ns < 0) out.push_back('-');
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, mag / 1000);
  (void)ec;
  out.append(buf, end);
  const auto frac = static_cast<unsigned>(mag % 1000);
  out.push_back('.');
  out.push_back(static_cast<char>('0' + frac / 100));
  out.push_back(static_cast<char>('0' + (frac / 10) % 10));
  out.push_back(static_cast<char>('0' + frac % 10));
}

namespace {
template <typename Float>
std::string shortestText(Float v) {
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);  // shortest, fixed or exponent
  return std::string(buf, r.ptr);
}
}  // namespace

std::string shortestNumber(double v) {
  return shortestText(v);
}

std::string shortestNumber(float v) {
  return shortestText(v);
}

void appendDouble(std::string& out, double v, int decimals) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed, decimals);
  if (ec != std::errc()) {
    out += "null";
    return;
  }
  std::string_view text(buf, static_cast<std::size_t>(end - buf));
  if (text.find('.') != std::string_view::npos) {
    while (!text.empty() && text.back() == '0')
      text.remove_suffix(1);
    if (!text.empty() && text.back() == '.') text.remove_suffix(1);
  }
  if (text == "-0") text = "0";
  out.append(text);
}

bool parseMicrosToNs(std::string_view token, std::int64_t& ns) {
  // Trim trailing whitespace that a raw token may carry.
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t' || token.back() == ',' || token.back() == '}' ||
                            token.back() == ']')) {
    token.remove_suffix(1);
  }
  if (token.empty()) return false;
  std::size_t i = 0;
  bool negative = false;
  if (token[0] == '-') {
    negative = true;
    i = 1;
  }
  constexpr std::uint64_t kMaxMicros =
      static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()) / 1000 - 1;
  std::uint64_t whole = 0;
  std::size_t digits = 0;
  while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
    whole = whole * 10 + static_cast<std::uint64_t>(token[i] - '0');
    if (whole > kMaxMicros) return false;
    ++i;
    ++digits;
  }
  if (digits == 0) return false;
  std::uint64_t frac = 0;  // in ns
  bool round_up = false;
  if (i < token.size() && token[i] == '.') {
    ++i;
    std::size_t fdigits = 0;
    while (i < token.size() && token[i] >= '0' && token[i] <= '9') {
      const auto d = static_cast<std::uint64_t>(token[i] - '0');
      if (fdigits < 3) {
        frac = frac * 10 + d;
      } else if (fdigits == 3) {
        round_up = d >= 5;
      }
      ++fdigits;
      ++i;
    }
    if (fdigits == 0) return false;
    for (std::size_t k = fdigits; k < 3; ++k)
      frac *= 10;
  }
  if (i < token.size() && (token[i] == 'e' || token[i] == 'E')) {
    // Exponent form: rare in traces; go through long double, which is exact enough for µs.
    const std::string copy(token);
    char* end = nullptr;
    const long double v = std::strtold(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || !std::isfinite(v)) return false;
    const long double scaled = std::round(v * 1000.0L);
    if (std::fabs(scaled) > 9.2e18L) return false;
    ns = static_cast<std::int64_t>(scaled);
    return true;
  }
  if (i != token.size()) return false;
  std::uint64_t mag = whole * 1000 + frac + (round_up ? 1 : 0);
  ns = negative ? -static_cast<std::int64_t>(mag) : static_cast<std::int64_t>(mag);
  return true;
}

}  // namespace ddpscope::trace
