#include "json_locate.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "json_text.h"

namespace ddpscope::trace {

namespace {

bool isSpace(unsigned char c) {
  return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}
bool isDigit(unsigned char c) {
  return c >= '0' && c <= '9';
}
bool isLetter(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
int hexValue(unsigned char c) {
  if (isDigit(c)) return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
std::string hexByte(unsigned char c) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", static_cast<unsigned>(c));
  return buf;
}

constexpr std::string_view kTruncatedHint = "; is the file truncated? was it copied completely?";

// A recursive-descent walk would overflow the stack on hostile nesting, so this is a loop with
// an explicit stack of the open containers.
class Locator {
 public:
  explicit Locator(std::string_view s) : s_(s), n_(s.size()) {}

  std::optional<JsonProblem> run() {
    if (n_ >= 2 && ((u(0) == 0xFF && u(1) == 0xFE) || (u(0) == 0xFE && u(1) == 0xFF))) {
      return at(0,
                "the file is UTF-16 text (it starts with a UTF-16 byte-order mark); save it as "
                "UTF-8");
    }
    if (n_ >= 2 && u(0) < 0x80 && u(0) != 0 && u(1) == 0) {
      return at(1, "a NUL byte: the file looks like UTF-16 text; save it as UTF-8");
    }
    if (n_ >= 3 && u(0) == 0xEF && u(1) == 0xBB && u(2) == 0xBF) i_ = 3;  // UTF-8 BOM: tolerated
    skipSpace();
    if (i_ == n_) return JsonProblem{n_, "the file holds no JSON value (only whitespace)", false};
    if (s_[i_] == '<') {
      return at(i_, "this is HTML or XML, not JSON (a web page saved instead of the trace?)");
    }
    enum class Want { Value, FirstValueOrClose, KeyOrClose, Key, Colon, CommaOrClose };
    Want want = Want::Value;
    bool after_comma = false;
    for (;;) {
      skipSpace();
      if (i_ == n_) {
        if (want == Want::CommaOrClose && stack_.empty()) return std::nullopt;
        std::string what = "the file ends inside ";
        what += stack_.empty() || stack_.back() == '[' ? "an array" : "an object";
        if (stack_.size() > 1) what += " (" + std::to_string(stack_.size()) + " levels still open)";
        what += kTruncatedHint;
        return JsonProblem{n_, what, true};
      }
      const unsigned char c = u(i_);
      switch (want) {
        case Want::CommaOrClose: {
          if (stack_.empty())
            return at(i_, "unexpected content after the end of the JSON document");
          const bool object = stack_.back() == '{';
          const char closer = object ? '}' : ']';
          if (c == ',') {
            ++i_;
            want = object ? Want::Key : Want::Value;
            after_comma = true;
            continue;
          }
          if (c == closer) {
            stack_.pop_back();
            ++i_;
            continue;
          }
          if (c == '}' || c == ']') {
            return at(i_, std::string("a '") + static_cast<char>(c) + "' where '" + closer +
                              "' should close the " + (object ? "object" : "array"));
          }
          return at(i_, std::string("expected ',' or '") + closer + "' after a value in " +
                            (object ? "an object" : "an array") + " (a missing comma?)");
        }
        case Want::Colon:
          if (c != ':') return at(i_, "expected ':' after an object key");
          ++i_;
          want = Want::Value;
          after_comma = false;
          continue;
        case Want::KeyOrClose:
        case Want::Key:
          if (c == '}') {
            if (want == Want::Key) return at(i_, "a trailing comma before '}'");
            stack_.pop_back();
            ++i_;
            want = Want::CommaOrClose;
            continue;
          }
          if (c == '"') {
            if (auto p = string()) return p;
            want = Want::Colon;
            continue;
          }
          if (c == '\'') {
            return at(i_, "an object key in single quotes; JSON strings use double quotes");
          }
          if (c == '/') return at(i_, "a comment; JSON does not allow comments");
          return at(i_, "an object key must be a string in double quotes");
        case Want::Value:
        case Want::FirstValueOrClose:
          if (c == ']' && want == Want::FirstValueOrClose) {
            stack_.pop_back();
            ++i_;
            want = Want::CommaOrClose;
            continue;
          }
          if (c == '{' || c == '[') {
            stack_.push_back(static_cast<char>(c));
            ++i_;
            want = c == '{' ? Want::KeyOrClose : Want::FirstValueOrClose;
            continue;
          }
          if (c == '"') {
            if (auto p = string()) return p;
          } else if (c == '-' || isDigit(c)) {
            if (auto p = number()) return p;
          } else if (isLetter(c)) {
            if (auto p = word(i_)) return p;
          } else {
            return unexpectedValue(c, after_comma);
          }
          want = Want::CommaOrClose;
          continue;
      }
    }
  }

 private:
  unsigned char u(std::size_t i) const { return static_cast<unsigned char>(s_[i]); }
  JsonProblem at(std::size_t i, std::string what) const { return {i, std::move(what), false}; }
  JsonProblem truncated(std::string what) const {
    return {n_, std::move(what) + std::string(kTruncatedHint), true};
  }
  void skipSpace() {
    while (i_ < n_ && isSpace(u(i_)))
      ++i_;
  }

  std::optional<JsonProblem> string() {
    const std::size_t start = i_;
    ++i_;
    while (i_ < n_) {
      const unsigned char c = u(i_);
      if (c == '"') {
        ++i_;
        return std::nullopt;
      }
      if (c == '\\') {
        if (i_ + 1 >= n_) break;
        const unsigned char e = u(i_ + 1);
        if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' ||
            e == 't') {
          i_ += 2;
          continue;
        }
        if (e != 'u') {
          return at(
              i_, std::string("an invalid escape '\\") +
                      (e >= 0x20 && e < 0x7F ? std::string(1, static_cast<char>(e)) : hexByte(e)) +
                      "' in a string (a literal backslash is written '\\\\')");
        }
        std::uint32_t cp = 0;
        if (!hex4(i_ + 2, cp)) {
          if (i_ + 6 > n_) break;
          return at(i_, "a '\\u' escape needs four hexadecimal digits");
        }
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t low = 0;
          if (i_ + 12 <= n_ && s_[i_ + 6] == '\\' && s_[i_ + 7] == 'u' && hex4(i_ + 8, low) &&
              low >= 0xDC00 && low <= 0xDFFF) {
            i_ += 12;
            continue;
          }
          if (i_ + 12 > n_) break;
          return at(i_, "a lone UTF-16 surrogate escape (a high half without its low half)");
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return at(i_, "a lone UTF-16 surrogate escape (a low half without its high half)");
        }
        i_ += 6;
        continue;
      }
      if (c < 0x20) {
        if (c == 0) return at(i_, "a NUL byte inside a string (is this a binary file?)");
        return at(i_, "a raw control character (" + hexByte(c) +
                          ") inside a string; it must be escaped (\\n, \\t, \\u00XX)");
      }
      if (c < 0x80) {
        ++i_;
        continue;
      }
      const std::size_t len = utf8SequenceLength(s_, i_);
      if (len == 0) {
        return at(i_, "invalid UTF-8 (byte " + hexByte(c) +
                          ") inside a string; the file must be UTF-8 text");
      }
      i_ += len;
    }
    return truncated("the file ends inside a string that starts at byte " + std::to_string(start) +
                     " (" + lineAndColumn(s_, start) + ")");
  }

  bool hex4(std::size_t at_index, std::uint32_t& cp) const {
    if (at_index + 4 > n_) return false;
    cp = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const int h = hexValue(u(at_index + k));
      if (h < 0) return false;
      cp = cp * 16 + static_cast<std::uint32_t>(h);
    }
    return true;
  }

  std::optional<JsonProblem> number() {
    const std::size_t start = i_;
    if (u(i_) == '-') {
      ++i_;
      if (i_ == n_) return truncated("the file ends inside a number");
      if (isLetter(u(i_))) return word(start);
      if (!isDigit(u(i_))) return at(start, "a '-' that is not followed by digits");
    }
    if (u(i_) == '0') {
      ++i_;
      if (i_ < n_ && isDigit(u(i_))) {
        return at(start, "a number with a leading zero ('" + token(start) + "')");
      }
      if (i_ < n_ && (u(i_) == 'x' || u(i_) == 'X')) {
        return at(start, "a hexadecimal number ('" + token(start) +
                             "'); JSON numbers are decimal (or write it as a string)");
      }
    } else {
      while (i_ < n_ && isDigit(u(i_)))
        ++i_;
    }
    if (i_ < n_ && u(i_) == '.') {
      ++i_;
      if (i_ == n_) return truncated("the file ends inside a number");
      if (!isDigit(u(i_))) {
        return at(start,
                  "a number ending in '.' ('" + token(start) + "'); digits must follow the point");
      }
      while (i_ < n_ && isDigit(u(i_)))
        ++i_;
    }
    if (i_ < n_ && (u(i_) == 'e' || u(i_) == 'E')) {
      ++i_;
      if (i_ < n_ && (u(i_) == '+' || u(i_) == '-')) ++i_;
      if (i_ == n_) return truncated("the file ends inside a number");
      if (!isDigit(u(i_))) return at(start, "an exponent without digits ('" + token(start) + "')");
      while (i_ < n_ && isDigit(u(i_)))
        ++i_;
    }
    if (i_ < n_ && (isLetter(u(i_)) || isDigit(u(i_)) || u(i_) == '.')) {
      return at(start, "a malformed number ('" + token(start) + "')");
    }
    return std::nullopt;
  }

  // A bare word where a value is expected: true, false, null, or a mistake.
  std::optional<JsonProblem> word(std::size_t start) {
    std::size_t end = start;
    if (end < n_ && u(end) == '-') ++end;
    while (end < n_ && (isLetter(u(end)) || isDigit(u(end)) || u(end) == '_'))
      ++end;
    const std::string_view w = s_.substr(start, end - start);
    if (w == "true" || w == "false" || w == "null") {
      i_ = end;
      return std::nullopt;
    }
    if (end == n_) {
      for (std::string_view lit : {"true", "false", "null"}) {
        if (lit.starts_with(w)) return truncated("the file ends inside '" + std::string(lit) + "'");
      }
    }
    std::string lower;
    for (char ch : w)
      lower.push_back(static_cast<char>(ch >= 'A' && ch <= 'Z' ? ch - 'A' + 'a' : ch));
    if (lower == "nan" || lower == "-nan" || lower == "infinity" || lower == "-infinity" ||
        lower == "inf" || lower == "-inf") {
      return at(start, "'" + std::string(w) +
                           "', which JSON cannot represent (no NaN or Infinity): the producer must "
                           "write a finite number, or null");
    }
    if (lower == "true" || lower == "false" || lower == "null" || lower == "none") {
      return at(start, "'" + std::string(w) +
                           "': JSON literals are lower-case true, false and null (a Python "
                           "repr instead of JSON?)");
    }
    return at(start, "an unquoted word '" + std::string(w.substr(0, 40)) +
                         "' where a value was expected (strings need double quotes)");
  }

  JsonProblem unexpectedValue(unsigned char c, bool after_comma) const {
    switch (c) {
      case ']':
        return at(i_,
                  after_comma ? "a trailing comma before ']'" : "a ']' where a value was expected");
      case '}':
        return at(i_, "a missing value before '}'");
      case ',':
        return at(i_, "a missing value (two commas in a row?)");
      case ':':
        return at(i_, "a ':' where a value was expected");
      case '\'':
        return at(i_, "a string in single quotes; JSON strings use double quotes");
      case '/':
        return at(i_, "a comment; JSON does not allow comments");
      case '+':
        return at(i_, "a number with a leading '+'; JSON numbers have none");
      case '.':
        return at(i_, "a number must start with a digit ('0.5', not '.5')");
      case 0:
        return at(i_, "a NUL byte (is this a binary or UTF-16 file?)");
      default:
        break;
    }
    if (c < 0x20) return at(i_, "a control character (" + hexByte(c) + ") outside a string");
    if (c >= 0x80) {
      if (utf8SequenceLength(s_, i_) == 0) {
        return at(i_, "invalid UTF-8 (byte " + hexByte(c) + "); the file must be UTF-8 text");
      }
      return at(i_, "a non-ASCII character outside a string");
    }
    return at(
        i_, std::string("an unexpected '") + static_cast<char>(c) + "' where a value was expected");
  }

  std::string token(std::size_t start) const {
    std::size_t end = start;
    while (
        end < n_ && end - start < 32 &&
        (isDigit(u(end)) || isLetter(u(end)) || u(end) == '.' || u(end) == '-' || u(end) == '+')) {
      ++end;
    }
    return std::string(s_.substr(start, end - start));
  }

  std::string_view s_;
  std::size_t n_;
  std::size_t i_ = 0;
  std::string stack_;  // the open containers, '{' or '['
};

}  // namespace

std::optional<JsonProblem> locateJsonProblem(std::string_view text) {
  return Locator(text).run();
}

std::string lineAndColumn(std::string_view text, std::uint64_t offset) {
  const std::size_t end = static_cast<std::size_t>(std::min<std::uint64_t>(offset, text.size()));
  const std::string_view before = text.substr(0, end);
  const auto line = std::count(before.begin(), before.end(), '\n') + 1;
  const auto last_nl = before.rfind('\n');
  const std::size_t column = last_nl == std::string_view::npos ? end + 1 : end - last_nl;
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

std::string excerptAt(std::string_view text, std::uint64_t offset) {
  const std::size_t at = static_cast<std::size_t>(std::min<std::uint64_t>(offset, text.size()));
  std::size_t begin = at > 16 ? at - 16 : 0;
  std::size_t end = std::min(text.size(), at + 24);
  for (std::size_t k = at; k > begin; --k) {
    if (text[k - 1] == '\n' || text[k - 1] == '\r') {
      begin = k;
      break;
    }
  }
  for (std::size_t k = at; k < end; ++k) {
    if (text[k] == '\n' || text[k] == '\r') {
      end = k;
      break;
    }
  }
  std::string out;
  for (std::size_t k = begin; k < end; ++k) {
    const auto c = static_cast<unsigned char>(text[k]);
    out.push_back(c >= 0x20 && c < 0x7F ? static_cast<char>(c) : '?');
  }
  return out;
}

}  // namespace ddpscope::trace
