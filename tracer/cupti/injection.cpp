// libddpscope_cupti.so: with CUDA_INJECTION64_PATH pointing here, the CUDA driver calls
// InitializeInjection during cuInit, and the traced program writes rank-<r>.json.gz into
// DDPSCOPE_TRACE_DIR when it exits normally, or, marked incomplete, when SIGTERM stops it (a
// launcher ending the job). Errors go to stderr; the program is never stopped by the tracer.

#include <time.h>
#include <unistd.h>

#include <cstdint>
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
#include "termination.h"
#include "tracer/format/trace_writer.h"

namespace {

using ddpscope::cupti::CuptiTracer;

struct Injection {
  ddpscope::cupti::RunIdentity id;
  std::unique_ptr<CuptiTracer> tracer;
  pid_t pid = 0;  // forked children (data loaders) inherit atexit handlers: they write nothing
  std::int64_t started_ns = 0;  // when tracing began (CLOCK_REALTIME): later files are siblings'
  std::once_flag written;
};

Injection* g_injection = nullptr;

std::string processName() {
  std::ifstream comm("/proc/self/comm");
  std::string name;
  std::getline(comm, name);
  return name;
}

// Once per process: at a normal exit, or when a launcher stops the program (signo != 0; the
// trace is then marked incomplete).
void writeTrace(int signo) {
  auto* inj = g_injection;
  if (inj == nullptr || getpid() != inj->pid) return;
  std::call_once(inj->written, [inj, signo] {
    try {
      try {
        inj->tracer->stop();
      } catch (const std::exception& e) {  // keep what was delivered
        std::fprintf(stderr, "ddpscope: %s\n", e.what());
      }
      ddpscope::cupti::FinishOptions finish;
      finish.rank = inj->id.rank;
      finish.world_size = inj->id.world_size;
      finish.world_size_declared = inj->id.world_size_known;
      finish.config.emplace_back("launcher", "\"CUDA_INJECTION64_PATH\"");
      if (signo != 0) {
        finish.incomplete = true;
        finish.config.emplace_back("stopped_by_signal", std::to_string(signo));
      }
      const auto trace = inj->tracer->takeTrace(finish);
      std::filesystem::create_directories(inj->id.trace_dir);
      ddpscope::trace::WriteOptions write;
      write.final_path = [inj](const std::string& p) {
        return ddpscope::cupti::unclaimedTracePath(p, inj->id.rank, inj->pid, inj->started_ns);
      };
      const std::string wanted = ddpscope::cupti::rankTracePath(inj->id);
      const std::string path = ddpscope::trace::writeTraceFile(trace, wanted, write);
      if (path != wanted) {
        std::fprintf(stderr,
                     "ddpscope: %s was written by another process of this run claiming rank %d%s; "
                     "this process's trace keeps its own name\n",
                     wanted.c_str(), static_cast<int>(inj->id.rank),
                     inj->id.rank_variable.empty()
                         ? " (no RANK, OMPI_COMM_WORLD_RANK or SLURM_PROCID is set: set RANK for "
                           "each process)"
                         : "");
      }
      std::fprintf(stderr, "ddpscope: wrote %s (%zu events, %lld records dropped%s)\n",
                   path.c_str(), trace.eventCount(),
                   static_cast<long long>(trace.ddpscope.dropped_records),
                   signo != 0 ? "; incomplete: the program was stopped by a signal" : "");
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
      timespec now{};
      clock_gettime(CLOCK_REALTIME, &now);
      inj->started_ns = std::int64_t{now.tv_sec} * 1'000'000'000 + now.tv_nsec;
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
      std::atexit([] { writeTrace(0); });
      if (!ddpscope::cupti::installTerminationHook([](int signo) { writeTrace(signo); })) {
        std::fprintf(stderr,
                     "ddpscope: no trace will be written if the program is stopped by a "
                     "signal (the SIGTERM hook could not be installed)\n");
      }
      result = 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "ddpscope: tracing disabled: %s\n", e.what());
      result = 0;
    }
  });
  return result;
}
