#include "cupti_tracer.h"

#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <ctime>
#include <mutex>
#include <stdexcept>

#include "active_slot.h"
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

  // NVTX extended payloads copied by the NVTX callback on the traced program's threads; a lock
  // of their own, so that a range push never waits for a buffer being converted.
  std::mutex payload_mutex;
  std::vector<NvtxPayloadCapture> payloads;
  bool system_thread_ids = false;   // CUPTI names threads by gettid(), else by pthread_self()
  std::uint32_t cupti_version = 0;  // cuptiGetVersion of the libcupti loaded (0: unknown)
};

namespace {

// CUPTI's buffer callbacks carry no user data, so the running tracer is a process global. The
// slot lets the destructor wait out a callback that is using the tracer on CUPTI's thread.
ActiveSlot<CuptiTracer::State> g_active;

void CUPTIAPI bufferRequested(std::uint8_t** buffer, std::size_t* size, std::size_t* max_records) {
  *max_records = 0;
  const ActiveSlot<CuptiTracer::State>::Use use(g_active);
  auto* s = use.get();
  // Declining (nullptr) makes CUPTI drop records until a buffer is free again; it counts them
  // (cuptiActivityGetNumDroppedRecords).
  *buffer = s != nullptr ? s->pool.acquire() : nullptr;
  *size = *buffer != nullptr ? s->pool.bufferBytes() : 0;
}

void CUPTIAPI bufferCompleted(CUcontext, std::uint32_t, std::uint8_t* buffer, std::size_t,
                              std::size_t valid_size) {
  const ActiveSlot<CuptiTracer::State>::Use use(g_active);
  auto* s = use.get();
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

// More payloads than this (a long run of NCCL calls) are not kept: the ranges past it go
// without a size. About 64 B each.
constexpr std::size_t kMaxPayloads = std::size_t{1} << 22;

// The calling thread's id as CUPTI writes it into marker records.
std::uint32_t cuptiThreadId(bool system_ids) {
  if (system_ids) {
    thread_local const auto tid = static_cast<std::uint32_t>(gettid());
    return tid;
  }
  return static_cast<std::uint32_t>(pthread_self());
}

// Copies an NCCL range's extended payload while its call is on the stack (CUPTI's records
// carry no payload of that kind), with the thread and time that pair it with its marker.
void captureNvtxPayload(CuptiTracer::State& s, CUpti_CallbackId cbid, const void* data) {
  const auto* nvtx = static_cast<const CUpti_NvtxData*>(data);
  if (nvtx == nullptr) return;
  auto payload = captureExtendedPayload(nvtxEventAttributesOf(cbid, nvtx->functionParams));
  if (!payload) return;
  payload->tid = cuptiThreadId(s.system_thread_ids);
  if (cuptiGetTimestamp(&payload->timestamp) != CUPTI_SUCCESS) return;
  std::lock_guard lock(s.payload_mutex);
  if (s.payloads.size() < kMaxPayloads) s.payloads.push_back(*payload);
}

// Flushes the records of a context before it goes away; copies NVTX extended payloads.
void CUPTIAPI tracerCallback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid,
                             const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE && cbid == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING) {
    // Completed buffers only: the context's work may still be running, and a forced flush
    // would hand over its last kernels without end times, never to come again.
    cuptiActivityFlushAll(0);
  } else if (domain == CUPTI_CB_DOMAIN_NVTX) {
    const ActiveSlot<CuptiTracer::State>::Use use(g_active);
    if (auto* s = use.get(); s != nullptr) captureNvtxPayload(*s, cbid, data);
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

// The libcupti loaded may be older than the headers the record structs come from (a pinned
// wheel): such a library can lack fixes or records, so the trace says which one it was.
void checkCuptiVersion(CuptiTracer::State& s) {
  std::uint32_t version = 0;
  if (cuptiGetVersion(&version) != CUPTI_SUCCESS) return;
  std::lock_guard lock(s.mutex);
  s.cupti_version = version;
  if (version < CUPTI_API_VERSION) {
    s.warnings.push_back("libcupti reports API version " + std::to_string(version) +
                         ", older than the " + std::to_string(CUPTI_API_VERSION) +
                         " this tracer was built with: records may be missing; use the CUDA "
                         "toolkit's libcupti if the trace looks incomplete");
  }
}

}  // namespace

CuptiTracer::CuptiTracer(TracerOptions options)
    : options_(std::move(options)), state_(std::make_unique<State>(options_)) {}

CuptiTracer::~CuptiTracer() {
  try {
    stop();
  } catch (...) {  // a destructor reports nothing; stop() errors were the caller's to see
  }
  // No callback reaches the state once this returns true (one inside is waited for).
  const bool closed = g_active.close(state_.get());
  // Buffers CUPTI still holds (a flush failed) come back after we are gone, and a callback
  // stuck inside CUPTI may still use the state: leave it to them rather than free memory they
  // may still write.
  if (!closed || state_->pool.outstanding() > 0) static_cast<void>(state_.release());
}

void CuptiTracer::start() {
  if (running()) return;
  if (!g_active.claim(state_.get())) {
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
      options.release = &std::free;
      state_->converter = ActivityConverter(options);
    }
    checkCuptiVersion(*state_);
    if (options_.nvtx) routeNvtxToCupti(state_->warnings);
    // Thread ids as the system gives them (what other profilers show), and the ones the NVTX
    // callback can name to pair payloads with markers.
    state_->system_thread_ids =
        cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM) == CUPTI_SUCCESS;
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
    if (cuptiSubscribe(&state_->subscriber, tracerCallback, nullptr) == CUPTI_SUCCESS) {
      cuptiEnableCallback(1, state_->subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                          CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING);
      if (options_.nvtx) {
        for (const CUpti_CallbackId cbid :
             {CUPTI_CBID_NVTX_nvtxDomainRangePushEx, CUPTI_CBID_NVTX_nvtxDomainRangeStartEx,
              CUPTI_CBID_NVTX_nvtxRangePushEx, CUPTI_CBID_NVTX_nvtxRangeStartEx}) {
          if (cuptiEnableCallback(1, state_->subscriber, CUPTI_CB_DOMAIN_NVTX, cbid) !=
              CUPTI_SUCCESS) {
            std::lock_guard lock(state_->mutex);
            state_->warnings.push_back(
                "NCCL message sizes from NVTX payloads not traced: the NVTX callback could not "
                "be enabled");
            break;
          }
        }
      }
    } else {
      // Another subscriber (e.g. Kineto): flush at stop only, and no NVTX payloads.
      state_->subscriber = nullptr;
      if (options_.nvtx) {
        std::lock_guard lock(state_->mutex);
        state_->warnings.push_back(
            "another CUPTI subscriber is active: NCCL message sizes from NVTX payloads not "
            "traced");
      }
    }
  } catch (...) {
    for (auto k : state_->enabled)
      cuptiActivityDisable(k);
    state_->enabled.clear();
    g_active.close(state_.get());
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
  // Recording stops first, then everything recorded is flushed: records made between a flush
  // and the disable (the flush's own overhead record, other threads' work) would land in a
  // buffer nobody flushes. A plain flush before the forced one lets finished work complete.
  for (auto k : state_->enabled)
    cuptiActivityDisable(k);
  state_->enabled.clear();
  if (state_->subscriber != nullptr) {
    cuptiUnsubscribe(state_->subscriber);
    state_->subscriber = nullptr;
  }
  cuptiActivityFlushAll(0);
  const CUptiResult flushed = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
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
  {
    std::lock_guard payload_lock(state_->payload_mutex);
    for (const auto& p : state_->payloads)
      state_->converter.addNvtxPayload(p);
    state_->payloads.clear();
  }
  auto finish = options;
  if (const auto refused = state_->pool.refused(); refused > 0) {
    finish.config.emplace_back("cupti_buffers_refused", std::to_string(refused));
  }
  if (state_->cupti_version != 0) {
    finish.config.emplace_back("cupti_api_version", std::to_string(state_->cupti_version));
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
