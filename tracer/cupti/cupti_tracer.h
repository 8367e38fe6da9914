#pragma once
// The live CUPTI tracer: enables activity kinds, hands CUPTI buffers (within a memory cap),
// converts completed buffers on the fly and builds the rank's trace. Used in-process by the
// agent and, wrapped by InitializeInjection, by libddpscope_cupti.so.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "activity_converter.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::cupti {

struct TracerOptions {
  std::size_t buffer_bytes = std::size_t{8} << 20;        // one activity buffer
  std::size_t buffer_cap_bytes = std::size_t{256} << 20;  // all buffers at once
  bool driver_api = true;
  bool nvtx = true;            // NVTX markers; sets NVTX_INJECTION64_PATH to CUPTI when it is unset
  ConverterOptions converter;  // base_ns and epoch_offset_ns are set by start()
};

class CuptiTracer {
 public:
  explicit CuptiTracer(TracerOptions options = {});
  ~CuptiTracer();  // stops a running tracer; never throws
  CuptiTracer(const CuptiTracer&) = delete;
  CuptiTracer& operator=(const CuptiTracer&) = delete;

  // Starts collecting. CUPTI's activity API is process-wide, so one tracer runs at a time.
  // Throws CuptiError (naming the call) or std::logic_error when another tracer runs.
  void start();
  // Delivers the records CUPTI holds (forced: also unfinished buffers), converting them.
  void flush(bool forced = true);
  // Forced flush, then stops collecting. Safe to call twice.
  void stop();
  bool running() const;

  // The trace so far (call after stop() for a complete one); the tracer keeps running.
  trace::RankTrace takeTrace(const FinishOptions& options = {});
  ConverterStats stats() const;
  // Activity kinds that could not be enabled and other non-fatal problems.
  std::vector<std::string> warnings() const;

  struct State;  // shared with CUPTI's callbacks

 private:
  TracerOptions options_;
  std::unique_ptr<State> state_;
};

}  // namespace ddpscope::cupti
