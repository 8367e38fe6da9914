#pragma once
// How the agent writes a measured or configured number for people and in its JSON lines: six
// significant digits ("%.6g": 9.2, 0.05, 1.5e+06).

#include <cstdio>
#include <string>

namespace ddpscope::agent {

inline std::string shortNumber(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace ddpscope::agent
