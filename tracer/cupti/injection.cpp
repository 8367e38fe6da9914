// libddpscope_cupti.so: with CUDA_INJECTION64_PATH pointing here, the CUDA driver calls
// InitializeInjection during cuInit, and the traced program writes rank-<r>.json.gz into
// DDPSCOPE_TRACE_DIR when it exits normally. Errors go to stderr; the program is never stopped.

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <string>

#include "cupti_tracer.h"
#include "run_identity.h"
#include "tracer/format/trace_writer.h"

namespace {

using ddpscope::cupti::CuptiTracer;

struct Injection {
  ddpscope::cupti::RunIdentity id;
  std::unique_ptr<CuptiTracer> tracer;
  pid_t pid = 0;  // forked children (data loaders) inherit atexit handlers: they write nothing
  std::once_flag written;
};

Injection* g_injection = nullptr;

std::string processName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

void writeTrace() {
  auto* inj = g_injection;
  if (inj == nullptr || getpid() != inj->pid) return;
  std::call_once(inj->written, [inj] {
    try {
      try {
        inj->tracer->stop();
      } catch (const std::exception& e) {  // keep what was delivered
        std::fprintf(stderr, "ddpscope: %s\n", e.what());
      }
      ddpscope::cupti::FinishOptions finish;
      finish.rank = inj->id.rank;
      finish.world_size = inj->id.world_size;
      finish.config.emplace_back("launcher", "\"CUDA_INJECTION64_PATH\"");
      const auto trace = inj->tracer->takeTrace(finish);
      std::filesystem::create_directories(inj->id.trace_dir);
      const std::string path = ddpscope::cupti::rankTracePath(inj->id);
      ddpscope::trace::writeTraceFile(trace, path);
      std::fprintf(stderr, "ddpscope: wrote %s (%zu events, %lld records dropped)\n", path.c_str(),
                   trace.eventCount(), static_cast<long long>(trace.ddpscope.dropped_records));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ddpscope: no trace written: %s\n", e.what());
    }
  });
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  static int result = 0;
  std::call_once(once, [] {
    try {
      auto inj = std::make_unique<Injection>();
      inj->id = ddpscope::cupti::runIdentityFromEnvironment();
      for (const auto& w : inj->id.warnings)
        std::fprintf(stderr, "ddpscope: %s\n", w.c_str());
      inj->pid = getpid();
      ddpscope::cupti::TracerOptions options;
      options.buffer_cap_bytes = inj->id.buffer_cap_bytes;
      if (options.buffer_bytes > options.buffer_cap_bytes) {
        options.buffer_bytes = options.buffer_cap_bytes;
      }
      if (const char* d = std::getenv("DDPSCOPE_CUPTI_DRIVER"); d != nullptr && *d == '0') {
        options.driver_api = false;
      }
      options.converter.process_id = inj->pid;
      options.converter.process_name = processName();
      inj->tracer = std::make_unique<CuptiTracer>(options);
      inj->tracer->start();
      for (const auto& w : inj->tracer->warnings())
        std::fprintf(stderr, "ddpscope: %s\n", w.c_str());
      g_injection = inj.release();  // lives until exit: CUPTI may call back at any time
      std::atexit(writeTrace);
      result = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ddpscope: tracing disabled: %s\n", e.what());
      result = 0;
    }
  });
  return result;
}
