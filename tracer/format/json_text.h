#pragma once
// Small helpers for writing JSON text quickly and correctly (escaping, exact decimal times).

#include <cstdint>
#include <string>
#include <string_view>

namespace ddpscope::trace {

// Length of the valid UTF-8 sequence starting at s[i] (1 to 4), or 0 when the bytes there are
// not valid UTF-8 (bad lead or continuation byte, overlong form, surrogate, beyond U+10FFFF, cut
// short by the end of s).
std::size_t utf8SequenceLength(std::string_view s, std::size_t i);

// Appends s as a JSON string literal (quoted, escaped; invalid UTF-8 bytes become U+FFFD).
void appendJsonString(std::string& out, std::string_view s);
void appendInt(std::string& out, std::int64_t v);
// Appends ns as microseconds with exactly three decimals ("12.345"), no precision lost.
void appendMicros(std::string& out, std::int64_t ns);
// Appends a double with up to `decimals` decimals, trailing zeros trimmed; NaN/inf as null.
void appendDouble(std::string& out, double v, int decimals = 3);
// The shortest text that reads back as the same double (0.1, not 0.10000000000000001), and of a
// float setting, as the same float (0.05, not the 0.05000000074505806 it widens to). For finite
// values (settings written into a trace's configuration).
std::string shortestNumber(double v);
std::string shortestNumber(float v);

// Parses a JSON number token given in microseconds (e.g. "4458676522690.655", "12", "1.5e3")
// into integer nanoseconds, exactly for plain decimals (rounded half away from zero beyond the
// third decimal). Returns false for anything that is not a finite number in range.
bool parseMicrosToNs(std::string_view token, std::int64_t& ns);

}  // namespace ddpscope::trace
