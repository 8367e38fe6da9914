#include "agent/cuda/cuda_backend.h"

#include <cupti.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "agent/bootstrap/bootstrap.h"
#include "agent/cuda/cuda_check.h"
#include "agent/cuda/cuda_device.h"
#include "agent/cuda/launch_labels.h"
#include "agent/cuda/rank_identity.h"
#include "agent/cuda/watchdog.h"
#include "agent/model.h"
#include "agent/run_agent.h"
#include "agent/short_number.h"
#include "agent/trainer.h"
#include "tracer/cupti/cupti_tracer.h"
#include "tracer/format/file_io.h"
#include "tracer/format/json_text.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

extern char** environ;

namespace ddpscope::agent::cuda {

namespace fs = std::filesystem;

namespace {

std::atomic<bool> g_terminate{false};

void onTerminate(int) {
  g_terminate.store(true);
}

std::int64_t realtimeNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::uint64_t cuptiNow() {
  std::uint64_t t = 0;
  cuptiGetTimestamp(&t);
  return t;
}

// NCCL's calls, for the watchdog (agent/cuda/watchdog.h).
CommunicatorOps ncclOps(ncclComm_t comm) {
  return {[comm] {
            ncclResult_t async = ncclSuccess;
            if (ncclCommGetAsyncError(comm, &async) == ncclSuccess && async != ncclSuccess &&
                async != ncclInProgress) {
              return std::string(ncclGetErrorString(async));
            }
            return std::string();
          },
          [comm] { ncclCommAbort(comm); }, [comm] { ncclCommDestroy(comm); }};
}

std::string rendezvousPath(const AgentOptions& o, const RankIdentity& id) {
  if (const char* p = std::getenv("DDPSCOPE_RENDEZVOUS")) return p;
  return (fs::path(o.out_dir) /
          (".ddpscope-nccl-id" + (id.job_key.empty() ? "" : "-" + id.job_key)))
      .string();
}

// The bootstrap that hands rank 0's NCCL id to the others: MPI_Bcast when this build has MPI and
// mpirun or srun (with PMI) started the process, the file rendezvous otherwise (launch local,
// torchrun, a single process); DDPSCOPE_BOOTSTRAP=file|mpi|auto overrides. Throws
// std::invalid_argument for a DDPSCOPE_BOOTSTRAP it cannot follow.
bootstrap::BootstrapKind chooseBootstrapFor(const RankIdentity& id) {
  const char* forced = std::getenv("DDPSCOPE_BOOTSTRAP");
  return bootstrap::chooseBootstrap(forced ? forced : "", id.launcher,
                                    bootstrap::launchedWithMpiWorld(id.launcher),
                                    bootstrap::mpiBootstrapBuilt());
}

// Rank 0 makes the NCCL id; the bootstrap hands it to the others. The id is made before MPI
// starts (a failure there must not leave rank 0 in MPI_Finalize while the others wait in the
// broadcast), and the bootstrap (MPI with it) is gone before NCCL starts: nothing else uses it.
ncclUniqueId shareNcclId(bootstrap::BootstrapKind kind, const AgentOptions& o,
                         const RankIdentity& id, double timeout_s) {
  ncclUniqueId uid{};
  if (id.rank == 0) DDPSCOPE_NCCL_CHECK(ncclGetUniqueId(&uid));
  std::unique_ptr<bootstrap::Bootstrap> b;
  if (kind == bootstrap::BootstrapKind::kMpi) {
    b = bootstrap::makeMpiBootstrap({id.rank, id.world_size, id.launcher});
  } else {
    bootstrap::FileRendezvousOptions f;
    f.path = rendezvousPath(o, id);
    f.rank = id.rank;
    f.timeout_s = timeout_s;
    f.what = "the NCCL id";
    f.cancelled = [] { return g_terminate.load(); };
    b = bootstrap::makeFileRendezvous(std::move(f));
  }
  b->broadcast(std::span<char>(uid.internal, sizeof uid.internal));
  return uid;
}

// A bitwise hash of every parameter: equal on all ranks exactly when the parameters are.
std::uint64_t parameterHash(Trainer& trainer) {
  std::uint64_t h = 1469598103934665603ull;
  for (std::int32_t i = 0; i < static_cast<std::int32_t>(trainer.parameters().size()); ++i) {
    for (float v : trainer.parameterValues(i)) {
      std::uint32_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      h = (h ^ bits) * 1099511628211ull;
    }
  }
  return h;
}

std::string quoted(const std::string& s) {
  std::string out;
  trace::appendJsonString(out, s);
  return out;
}

struct RankOutcome {
  std::string error;  // empty: success
  std::vector<double> step_ms;
  std::vector<float> losses;
  std::int32_t buckets = 0;
};

void writeRankTrace(cupti::CuptiTracer& tracer, const AgentOptions& o, const RankIdentity& id,
                    const CudaDevice* device, const Trainer* trainer, bool incomplete,
                    const std::vector<std::pair<std::string, std::string>>& clock) {
  tracer.stop();
  cupti::FinishOptions fo;
  fo.rank = id.rank;
  fo.world_size = id.world_size;
  fo.incomplete = incomplete;
  fo.distributed_backend = "nccl";
  trace::RankTrace t = tracer.takeTrace(fo);
  if (device) labelLaunches(t, device->launchWindows(), cuptiBaseNs(t));
  auto converter_block = t.ddpscope;
  if (trainer) {
    t.ddpscope = makeDdpscopeBlock(o, "cuda", trainer->plan(), trainer->parameters());
  } else {
    t.ddpscope.config = o.configEntries();
  }
  t.ddpscope.present = true;
  t.ddpscope.source = "cuda";
  t.ddpscope.incomplete = incomplete;
  t.ddpscope.dropped_records = converter_block.dropped_records;
  t.ddpscope.clock = converter_block.clock;
  t.ddpscope.clock.insert(t.ddpscope.clock.end(), clock.begin(), clock.end());
  t.ddpscope.config.insert(t.ddpscope.config.end(), {{"launcher", "\"" + id.launcher + "\""}});
  trace::canonicalize(t);
  const auto path = fs::path(o.out_dir) / ("rank-" + std::to_string(id.rank) + ".json.gz");
  trace::writeTraceFile(t, path.string());
}

// One rank: this process drives one GPU.
int runRank(const AgentOptions& o, const CudaRunOptions& run, const RankIdentity& id,
            bootstrap::BootstrapKind kind, std::ostream& out, std::ostream& err) {
  signal(SIGTERM, onTerminate);
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices < 1) {
    throw CudaError(std::string("no usable GPU here (") +
                    (probe != cudaSuccess ? cudaGetErrorString(probe)
                                          : "no device visible; CUDA_VISIBLE_DEVICES?") +
                    "); use --backend sim, or run on a GPU machine");
  }
  makeOutFolder(o.out_dir, id.world_size);  // only once there is a GPU to write a trace of
  cupti::CuptiTracer tracer;
  if (run.trace) tracer.start();  // before the CUDA context exists, so nothing is missed
  const int device = id.local_rank % devices;
  DDPSCOPE_CUDA_CHECK(cudaSetDevice(device));

  Communicator comm;
  ncclComm_t nccl = nullptr;
  std::unique_ptr<Watchdog> watchdog;
  std::unique_ptr<Model> model;
  std::unique_ptr<CudaDevice> dev;
  std::unique_ptr<Trainer> trainer;
  std::vector<std::pair<std::string, std::string>> clock;
  RankOutcome outcome;
  try {
    const auto uid = shareNcclId(kind, o, id, run.timeout_s);
    {
      const InitGuard guard(
          run.timeout_s, [] { return g_terminate.load(); },
          [rank = id.rank](const std::string& why) {
            std::fprintf(stderr, "ddpscope-agent: rank %d: %s; giving up\n", rank, why.c_str());
            std::fflush(stderr);
            std::_Exit(kExitFailed);
          });
      DDPSCOPE_NCCL_CHECK(ncclCommInitRank(&nccl, id.world_size, uid, id.rank));
      comm.attach(ncclOps(nccl));
    }
    // Every rank has read the id once init returns: a later run must not find it.
    if (kind == bootstrap::BootstrapKind::kFile && id.rank == 0) {
      std::error_code ec;
      fs::remove(rendezvousPath(o, id), ec);
    }
    WatchdogOptions wo;
    wo.timeout_s = run.timeout_s;
    wo.rank = id.rank;
    wo.stop_requested = [] { return g_terminate.load(); };
    watchdog = std::make_unique<Watchdog>(comm, std::move(wo));

    CudaDeviceOptions dopt;
    dopt.device = device;
    dopt.rank = id.rank;
    dopt.world_size = id.world_size;
    dopt.comm = nccl;
    dopt.while_waiting = [w = watchdog.get()] { w->check(); };
    if (run.trace) dopt.launch_clock = cuptiNow;
    dev = std::make_unique<CudaDevice>(dopt);
    model = makeModel(o.model);
    trainer = std::make_unique<Trainer>(*dev, *model, o.trainerOptions());
    trainer->setUp();
    watchdog->heartbeat();
    outcome.buckets = static_cast<std::int32_t>(trainer->plan().buckets.size());
    for (std::int32_t step = 0; step < o.steps; ++step) {
      trainer->launchStep(step);
      const auto r = trainer->completeStep();
      watchdog->check();  // a collective the watchdog aborted may still have "completed"
      watchdog->heartbeat();
      outcome.step_ms.push_back(static_cast<double>(r.step_ns) * 1e-6);
      if (r.loss) outcome.losses.push_back(*r.loss);
      if (id.rank == 0) {
        out << "{\"event\":\"progress\",\"step\":" << step + 1 << ",\"steps\":" << o.steps
            << ",\"step_ms\":" << shortNumber(outcome.step_ms.back());
        if (r.loss) out << ",\"loss\":" << shortNumber(*r.loss);
        out << "}\n" << std::flush;
      }
    }
    // Clock offset to rank 0: everyone reads the clock right after the same collective.
    std::int64_t* scratch = nullptr;
    DDPSCOPE_CUDA_CHECK(
        cudaMalloc(&scratch, sizeof(std::int64_t) * (static_cast<std::size_t>(id.world_size) + 2)));
    const cudaStream_t cs = dev->cudaStream(dev->commStream());
    DDPSCOPE_NCCL_CHECK(ncclAllReduce(scratch, scratch, 1, ncclInt64, ncclSum, nccl, cs));
    dev->synchronize();
    watchdog->check();
    const std::int64_t now = realtimeNs();
    dev->copyToDevice(scratch, &now, sizeof now, dev->commStream());
    DDPSCOPE_NCCL_CHECK(ncclAllGather(scratch, scratch + 1, 1, ncclInt64, nccl, cs));
    std::vector<std::int64_t> clocks(static_cast<std::size_t>(id.world_size));
    dev->synchronize();
    watchdog->check();
    DDPSCOPE_CUDA_CHECK(cudaMemcpy(clocks.data(), scratch + 1, clocks.size() * sizeof(std::int64_t),
                                   cudaMemcpyDeviceToHost));
    clock.emplace_back("offset_to_rank0_ns", std::to_string(now - clocks[0]));

    // All ranks must end with identical parameters.
    const std::uint64_t hash = parameterHash(*trainer);
    std::uint64_t host[2] = {hash, hash};
    auto* dh = reinterpret_cast<std::uint64_t*>(scratch);
    dev->copyToDevice(dh, host, sizeof host, dev->commStream());
    DDPSCOPE_NCCL_CHECK(ncclAllReduce(dh, dh, 1, ncclUint64, ncclMin, nccl, cs));
    DDPSCOPE_NCCL_CHECK(ncclAllReduce(dh + 1, dh + 1, 1, ncclUint64, ncclMax, nccl, cs));
    dev->synchronize();
    watchdog->check();
    DDPSCOPE_CUDA_CHECK(cudaMemcpy(host, dh, sizeof host, cudaMemcpyDeviceToHost));
    cudaFree(scratch);
    clock.emplace_back("parameters_identical", host[0] == host[1] ? "true" : "false");
    if (host[0] != host[1]) {
      outcome.error = "rank " + std::to_string(id.rank) +
                      ": parameters differ between ranks after training (checksum allreduce)";
    }
  } catch (const WatchdogFired& e) {
    outcome.error = e.what();
  } catch (const std::exception& e) {
    // Messages that already name the rank (the bootstrap's) are not prefixed twice.
    const std::string prefix = "rank " + std::to_string(id.rank) + ": ";
    const std::string what = e.what();
    outcome.error = watchdog && watchdog->fired() ? watchdog->reason() + " (" + what + ")"
                    : what.rfind(prefix, 0) == 0  ? what
                                                  : prefix + what;
  }
  // The watchdog's thread is stopped before the communicator is touched again; on failure the
  // communicator is aborted first, so that neither the trace's flush nor freeing device memory
  // (which waits for the device) waits on a collective whose peer is gone.
  watchdog.reset();
  if (!outcome.error.empty()) comm.abort();
  if (run.trace) {
    try {
      writeRankTrace(tracer, o, id, dev.get(), trainer.get(), !outcome.error.empty(), clock);
    } catch (const std::exception& e) {
      err << "ddpscope-agent: rank " << id.rank << ": could not write the trace: " << e.what()
          << "\n";
      if (outcome.error.empty()) outcome.error = e.what();
    }
  }
  trainer.reset();
  dev.reset();
  comm.close(outcome.error.empty());
  if (!outcome.error.empty()) {
    err << "ddpscope-agent: " << outcome.error << "\n";
    return kExitFailed;
  }
  if (id.rank == 0 && id.launcher != "ddpscope") {
    double mean = 0;
    for (double ms : outcome.step_ms)
      mean += ms;
    mean /= static_cast<double>(std::max<std::size_t>(1, outcome.step_ms.size()));
    out << "{\"event\":\"done\",\"backend\":\"cuda\",\"ranks\":" << id.world_size
        << ",\"steps\":" << o.steps << ",\"buckets\":" << outcome.buckets
        << ",\"mean_step_ms\":" << shortNumber(mean);
    if (!outcome.losses.empty()) {  // as the simulated device reports them, to compare the two
      out << ",\"first_loss\":" << shortNumber(outcome.losses.front())
          << ",\"final_loss\":" << shortNumber(outcome.losses.back());
    }
    out << ",\"traced\":" << (run.trace ? "true" : "false") << ",\"out\":" << quoted(o.out_dir)
        << "}\n"
        << std::flush;
  }
  return kExitOk;
}

std::vector<std::string> ownCommandLine() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), {});
  std::vector<std::string> args;
  std::size_t start = 0;
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (all[i] == '\0') {
      args.push_back(all.substr(start, i - start));
      start = i + 1;
    }
  }
  return args;
}

// --launch local: one process per rank on this node, GPUs assigned round robin. When there are
// more ranks than GPUs, each process gets its own NCCL_HOSTID so NCCL lets two share a GPU.
int launchLocal(const AgentOptions& o, const CudaRunOptions& run, std::ostream& out,
                std::ostream& err) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
    err << "ddpscope-agent: --backend cuda: no usable GPU here (cudaGetDeviceCount found none); "
           "use "
           "--backend sim\n";
    return kExitBackendUnavailable;
  }
  makeOutFolder(o.out_dir, o.world_size);
  const std::string job = std::to_string(getpid());
  const auto rendezvous = (fs::path(o.out_dir) / (".ddpscope-nccl-id-" + job)).string();
  std::error_code ec;
  fs::remove(rendezvous, ec);
  const bool share = o.world_size > devices;
  if (share) {
    err << "ddpscope-agent: " << o.world_size << " ranks on " << devices
        << " GPU(s): ranks share GPUs, each with its own NCCL_HOSTID\n";
  }
  const auto args = ownCommandLine();
  std::vector<pid_t> children;
  for (std::int32_t r = 0; r < o.world_size; ++r) {
    std::vector<std::string> env;
    for (char** e = environ; *e; ++e) {
      const std::string kv = *e;
      if (kv.starts_with("DDPSCOPE_LAUNCH=") || kv.starts_with("NCCL_HOSTID=")) continue;
      env.push_back(kv);
    }
    env.push_back("DDPSCOPE_RANK=" + std::to_string(r));
    env.push_back("DDPSCOPE_WORLD_SIZE=" + std::to_string(o.world_size));
    env.push_back("DDPSCOPE_LOCAL_RANK=" + std::to_string(r));
    env.push_back("DDPSCOPE_JOB=" + job);
    env.push_back("DDPSCOPE_RENDEZVOUS=" + rendezvous);
    env.push_back("DDPSCOPE_LAUNCH=none");
    if (share) env.push_back("NCCL_HOSTID=ddpscope-" + job + "-" + std::to_string(r));
    std::vector<char*> argv, envp;
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const auto& kv : env)
      envp.push_back(const_cast<char*>(kv.c_str()));
    envp.push_back(nullptr);
    pid_t pid = 0;
    if (const int rc =
            posix_spawn(&pid, "/proc/self/exe", nullptr, nullptr, argv.data(), envp.data());
        rc != 0) {
      err << "ddpscope-agent: could not start rank " << r << ": " << std::strerror(rc) << "\n";
      for (pid_t c : children)
        kill(c, SIGTERM);
      for (pid_t c : children)
        waitpid(c, nullptr, 0);
      return kExitFailed;
    }
    children.push_back(pid);
  }
  int exit_code = kExitOk;
  std::size_t running = children.size();
  std::vector<bool> reaped(children.size(), false);  // their pids may be reused: never signalled
  while (running > 0) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      break;
    }
    const auto it = std::find(children.begin(), children.end(), pid);
    if (it == children.end()) continue;
    --running;
    const auto rank = it - children.begin();
    reaped[static_cast<std::size_t>(rank)] = true;
    const bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!ok && exit_code == kExitOk) {
      exit_code = kExitFailed;
      err << "ddpscope-agent: rank " << rank << " "
          << (WIFSIGNALED(status) ? "was killed by signal " + std::to_string(WTERMSIG(status))
                                  : "exited with status " + std::to_string(WEXITSTATUS(status)))
          << "; stopping the other ranks\n";
      for (std::size_t c = 0; c < children.size(); ++c) {
        if (!reaped[c])
          kill(children[c], SIGTERM);  // they abort their communicators, write incomplete traces
      }
    }
  }
  fs::remove(rendezvous, ec);
  if (exit_code == kExitOk) {
    out << "{\"event\":\"done\",\"backend\":\"cuda\",\"ranks\":" << o.world_size
        << ",\"steps\":" << o.steps
        << ",\"launch\":\"local\",\"traced\":" << (run.trace ? "true" : "false")
        << ",\"out\":" << quoted(o.out_dir) << "}\n"
        << std::flush;
  }
  return exit_code;
}

}  // namespace

CudaRunOptions cudaRunOptions(const AgentOptions& o) {
  CudaRunOptions r;
  r.launch = o.launch;
  r.timeout_s = o.timeout_s;
  r.trace = o.trace;
  if (const char* v = std::getenv("DDPSCOPE_LAUNCH")) r.launch = v;
  return r;
}

int runCudaBackend(const AgentOptions& options, std::ostream& out, std::ostream& err) {
  return runCudaBackend(options, cudaRunOptions(options), out, err);
}

int runCudaBackend(const AgentOptions& o, const CudaRunOptions& run, std::ostream& out,
                   std::ostream& err) {
  std::optional<RankIdentity> id;
  try {
    id = rankIdentityFromEnvironment();
  } catch (const std::invalid_argument& e) {
    err << "ddpscope-agent: " << e.what() << "\n";
    return kExitBadArguments;
  }
  if (!id && run.launch == "local") return launchLocal(o, run, out, err);
  if (!id) {
    if (o.world_size != 1) {
      err << "ddpscope-agent: --backend cuda with --world-size " << o.world_size
          << " needs one process per rank: add --launch local (one node), or start it with mpirun, "
             "srun or torchrun\n";
      return kExitBadArguments;
    }
    id = RankIdentity{};
    id->job_key = std::to_string(getpid());
  }
  if (id->world_size != o.world_size) {
    err << "ddpscope-agent: the launcher started " << id->world_size
        << " ranks but --world-size is " << o.world_size << "\n";
    return kExitBadArguments;
  }
  bootstrap::BootstrapKind kind = bootstrap::BootstrapKind::kFile;
  try {
    kind = chooseBootstrapFor(*id);
  } catch (const std::invalid_argument& e) {
    err << "ddpscope-agent: " << e.what() << "\n";
    return kExitBadArguments;
  }
  try {
    return runRank(o, run, *id, kind, out, err);
  } catch (const CudaError& e) {
    err << "ddpscope-agent: rank " << id->rank << ": " << e.what() << "\n";
    return kExitBackendUnavailable;
  }
}

}  // namespace ddpscope::agent::cuda
