#include "trace_json_values.h"

#include "json_text.h"

namespace ddpscope::trace::reader {

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

}  // namespace ddpscope::trace::reader
