#pragma once
// Where and why a text is not valid JSON, in words a user can act on. The fast parser only says
// which kind of error it met; this walks the text again (linear, only after a parse failed) and
// finds the first offending byte.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ddpscope::trace {

struct JsonProblem {
  std::uint64_t offset = 0;  // the offending byte; the text's size when it ends too early
  std::string what;          // e.g. "a trailing comma before ']'"
  bool truncated = false;    // the text ends inside a value
};

// The first problem that makes `text` something other than exactly one JSON value with optional
// whitespace around it; nullopt when it is valid JSON.
std::optional<JsonProblem> locateJsonProblem(std::string_view text);

// "line 3, column 17" (1-based; the column counts bytes).
std::string lineAndColumn(std::string_view text, std::uint64_t offset);

// A short printable excerpt of the text around offset, for messages: non-printable bytes are
// shown as '?', and it is cut at a line break.
std::string excerptAt(std::string_view text, std::uint64_t offset);

}  // namespace ddpscope::trace
