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

  // Starts collecting (again, after stop(), for the same tracer). CUPTI's activity API is
  // process-wide, so one tracer exists at a time from its first successful start() until it
  // is destroyed. Throws CuptiError (naming the call) or std::logic_error for a second tracer.
  void start();
  // Delivers the records CUPTI holds (forced: also unfinished buffers), converting them.
  void flush(bool forced = true);
  // Forced flush, then stops collecting. Safe to call twice.
  void stop();
  bool running() const;

  // The trace so far (call after stop() for a complete one); events are handed over. Times are
  // ns after the start() CUPTI timestamp; base_time_ns is that instant in Unix-epoch ns and
  // ddpscope.clock["cupti_to_epoch_ns"] converts CUPTI timestamps to epoch ns.
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
