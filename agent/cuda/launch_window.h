#pragma once

#include <cstdint>

#include "agent/device.h"

namespace ddpscope::agent::cuda {

// One launch the training loop made: the host-time window of its API calls and its labels.
struct LaunchWindow {
  std::uint64_t begin = 0, end = 0;  // the launch clock (CUPTI time) before and after
  std::int32_t step = -1;
  Tags tags;
};

}  // namespace ddpscope::agent::cuda
