#include "cupti_tracer.h"

#include <cupti.h>
#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <stdexcept>

#include "buffer_pool.h"
#include "cupti_error.h"

namespace ddpscope::cupti {

struct CuptiTracer::State {
  explicit State(const TracerOptions& o)
      : options(o),
        pool(o.buffer_bytes, o.buffer_cap_bytes, ACTIVITY_RECORD_ALIGNMENT),
        converter(o.converter) {}

  TracerOptions options;
  BufferPool pool;           // thread-safe on its own
  mutable std::mutex mutex;  // guards everything below
  ActivityConverter converter;
  std::vector<std::string> warnings;
  std::vector<CUpti_ActivityKind> enabled;
  CUpti_SubscriberHandle subscriber = nullptr;
  bool running = false;
};

namespace {

// CUPTI's buffer callbacks carry no user data, so the running tracer is a process global.
std::atomic<CuptiTracer::State*> g_active{nullptr};

void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;
  auto* s = g_active.load();
  // Declining (nullptr) makes CUPTI drop records until a buffer is free again; it counts them
  // (cuptiActivityGetNumDroppedRecords).
  *buffer = s != nullptr ? s->pool.acquire() : nullptr;
  *size = *buffer != nullptr ? s->pool.bufferBytes() : 0;
}

void CUPTIAPI bufferCompleted(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                              std::size_t valid_size) {
  auto* s = g_active.load();
  if (s == nullptr) {
    std::free(buffer);  // its tracer is gone and left this buffer to us (see ~CuptiTracer)
    return;
  }
  std::size_t dropped = 0;
  // Since CUDA 6 every buffer is global: the dropped count is on the global queue.
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  {
    std::lock_guard lock(s->mutex);
    try {
      s->converter.addBuffer(buffer, valid_size);
    } catch (const std::exception& e) {  // out of memory while converting: keep going
      s->converter.addDroppedByTracer(1);
      if (s->warnings.size() < 16) s->warnings.push_back(std::string("conversion: ") + e.what());
    }
    s->converter.addDroppedByCupti(dropped);
  }
  s->pool.release(buffer);
}

// Flushes the records of a context before it goes away.
void CUPTIAPI resourceCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                               const void*) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  }
}

std::int64_t realtimeNs() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

// CUPTI records NVTX only when NVTX's injection points at CUPTI; NVTX reads the variable at its
// first call, so setting it before the program's first range is enough.
void routeNvtxToCupti(std::vector<std::string>& warnings) {
  if (std::getenv("NVTX_INJECTION64_PATH") != nullptr) return;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&cuptiActivityEnable), &info) == 0 ||
      info.dli_fname == nullptr) {
    warnings.push_back(
        "NVTX ranges not traced: libcupti's path is unknown; set "
        "NVTX_INJECTION64_PATH to libcupti.so");
    return;
  }
  setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
}

}  // namespace

CuptiTracer::CuptiTracer(TracerOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>(options_)) {}

CuptiTracer::~CuptiTracer() {
  try {
    stop();
  } catch (...) {  // a destructor reports nothing; stop() errors were the caller's to see
  }
  if (g_active.load() == state_.get()) g_active.store(nullptr);
  // Buffers CUPTI still holds (a flush failed) come back after we are gone: leave the pool to
  // them rather than free memory CUPTI may still write.
  if (state_->pool.outstanding() > 0) static_cast<void>(state_.release());
}

void CuptiTracer::start() {
  if (running()) return;
  State* expected = nullptr;
  if (!g_active.compare_exchange_strong(expected, state_.get()) && expected != state_.get()) {
    throw std::logic_error("another CuptiTracer exists in this process (CUPTI is process-wide)");
  }
  try {
    std::uint64_t t0 = 0;
    CUPTI_CALL(cuptiGetTimestamp(&t0));
    const std::int64_t epoch = realtimeNs();
    {
      std::lock_guard lock(state_->mutex);
      auto options = options_.converter;
      options.base_ns = static_cast<std::int64_t>(t0);
      options.epoch_offset_ns = epoch - static_cast<std::int64_t>(t0);
      if (options.process_id == 0) options.process_id = getpid();
      state_->converter = ActivityConverter(options);
    }
    if (options_.nvtx) routeNvtxToCupti(state_->warnings);
    CUPTI_CALL(cuptiActivityRegisterCallbacks(bufferRequested, bufferCompleted));

    struct Kind {
      CUpti_ActivityKind kind;
      const char* name;
      bool required;
    };
    std::vector<Kind> kinds = {
        {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "CONCURRENT_KERNEL", true},
        {CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY", true},
        {CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET", true},
        {CUPTI_ACTIVITY_KIND_RUNTIME, "RUNTIME", true},
        {CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2", false},
        {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "SYNCHRONIZATION", false},
        {CUPTI_ACTIVITY_KIND_CUDA_EVENT, "CUDA_EVENT", false},
        {CUPTI_ACTIVITY_KIND_OVERHEAD, "OVERHEAD", false},
        {CUPTI_ACTIVITY_KIND_CONTEXT, "CONTEXT", false},
        {CUPTI_ACTIVITY_KIND_DEVICE, "DEVICE", false},
    };
    if (options_.driver_api) kinds.push_back({CUPTI_ACTIVITY_KIND_DRIVER, "DRIVER", false});
    if (options_.nvtx) {
      kinds.push_back({CUPTI_ACTIVITY_KIND_MARKER, "MARKER", false});
      kinds.push_back({CUPTI_ACTIVITY_KIND_MARKER_DATA, "MARKER_DATA", false});
    }
    for (const auto& k : kinds) {
      const CUptiResult r = cuptiActivityEnable(k.kind);
      if (r == CUPTI_SUCCESS) {
        state_->enabled.push_back(k.kind);
      } else if (k.required) {
        throw CuptiError(r, std::string("cuptiActivityEnable(CUPTI_ACTIVITY_KIND_") + k.name + ")",
                         __FILE__, __LINE__);
      } else {
        std::lock_guard lock(state_->mutex);
        state_->warnings.push_back(std::string("activity kind ") + k.name +
                                   " not traced: " + resultString(r));
      }
    }
    if (cuptiSubscribe(&state_->subscriber, resourceCallback, nullptr) == CUPTI_SUCCESS) {
      cuptiEnableCallback(1, state_->subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                          CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
    } else {
      state_->subscriber = nullptr;  // another subscriber (e.g. Kineto): flush at stop only
    }
  } catch (...) {
    for (auto k : state_->enabled)
      cuptiActivityDisable(k);
    state_->enabled.clear();
    g_active.store(nullptr);
    throw;
  }
  std::lock_guard lock(state_->mutex);
  state_->running = true;
}

void CuptiTracer::flush(bool forced) {
  if (!running()) return;
  CUPTI_CALL(cuptiActivityFlushAll(forced ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0));
}

void CuptiTracer::stop() {
  if (!running()) return;
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (auto k : state_->enabled)
    cuptiActivityDisable(k);
  state_->enabled.clear();
  if (state_->subscriber != nullptr) {
    cuptiUnsubscribe(state_->subscriber);
    state_->subscriber = nullptr;
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) != CUPTI_SUCCESS) dropped = 0;
  {
    std::lock_guard lock(state_->mutex);
    state_->converter.addDroppedByCupti(dropped);
    state_->running = false;
  }
  // g_active stays set until the destructor: buffers CUPTI returns late still find their pool.
  if (flushed != CUPTI_SUCCESS) {
    throw CuptiError(flushed, "cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)", __FILE__,
                     __LINE__);
  }
}

bool CuptiTracer::running() const {
  std::lock_guard lock(state_->mutex);
  return state_->running;
}

trace::RankTrace CuptiTracer::takeTrace(const FinishOptions& options) {
  std::lock_guard lock(state_->mutex);
  auto finish = options;
  if (const auto refused = state_->pool.refused(); refused > 0) {
    finish.config.emplace_back("cupti_buffers_refused", std::to_string(refused));
  }
  finish.config.emplace_back("cupti_buffer_cap_mb",
                             std::to_string(options_.buffer_cap_bytes >> 20));
  return state_->converter.finish(finish);
}

ConverterStats CuptiTracer::stats() const {
  std::lock_guard lock(state_->mutex);
  return state_->converter.stats();
}

std::vector<std::string> CuptiTracer::warnings() const {
  std::lock_guard lock(state_->mutex);
  return state_->warnings;
}

}  // namespace ddpscope::cupti
