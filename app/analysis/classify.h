#pragma once
// Classification of GPU activity by name (docs/METRICS.md "Classification").

#include <cstdint>
#include <string_view>

#include "tracer/format/trace_model.h"

namespace ddpscope::analysis {

enum class ActivityClass : std::uint8_t {
  Communication,  // NCCL/RCCL/HCCL collectives
  Computation,    // every other kernel
  Memory,         // Memcpy*, Memset*, dma*
  Other,          // synchronisation: cuda_sync, names containing "Sync" or "Stream Wait Event"
  None,           // not a GPU activity (host events, GPU annotations)
};
inline constexpr int kActivityClassCount = 4;

// The class of a GPU event by the built-in rules (rules.h), whatever its stream; a loaded run's
// own rules may say otherwise (AnalysisOptions::rules).
ActivityClass classify(trace::EventKind kind, std::string_view name);
std::string_view className(ActivityClass c);  // "communication", "computation", ...

// What a kernel does to a gradient bucket, by its name: the one list every part of ddpscope
// uses (the bucket analysis, the timeline's "consumer of the reduced gradients").
enum class KernelRole : std::uint8_t { Gradient, Pack, Allreduce, Unpack, Optimizer, ReadyMarker };
KernelRole kernelRole(trace::EventKind kind, ActivityClass cls, std::string_view name);
// An optimizer update (SGD, Adam, PyTorch's multi-tensor / foreach kernels, "update").
bool isOptimizerName(std::string_view name);
// A communication kernel that is an allreduce (NCCL's AllReduce, PyTorch's all_reduce).
bool isAllreduceName(std::string_view name);

// What a stream is for, from what runs there (docs/METRICS.md "Stream role"): collectives and
// computation make a mixed stream, collectives alone (with copies, syncs) a communication
// stream; otherwise the class that runs there most often.
enum class StreamRole : std::uint8_t { Communication, Compute, Copy, Sync, Mixed };
// "communication", "compute", "copy", "sync", "mixed"
std::string_view streamRoleName(StreamRole r);
// "comm", "compute", "copy", "sync", "mixed" (lane labels; the same word as streamRoleName but
// for communication)
std::string_view streamRoleShortName(StreamRole r);

}  // namespace ddpscope::analysis
