#include "agent/run_agent.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <thread>

#include "agent/short_number.h"
#include "agent/sim/sim_device.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

#ifdef DDPSCOPE_AGENT_CUDA
#include "agent/cuda/cuda_backend.h"
#endif

namespace ddpscope::agent {

namespace {

// A fixed base time so that a seed always gives the same bytes.
constexpr trace::TimeNs kSimBaseTimeNs = 1'700'000'000'000'000'000;

void finishTrace(trace::RankTrace& t, const AgentOptions& o, const Trainer& trainer) {
  t.base_time_ns = kSimBaseTimeNs;
  t.distributed_backend = "nccl (simulated)";
  t.device_properties_json =
      "[{\"id\": " + std::to_string(t.rank) +
      ", \"name\": \"NVIDIA H200 (simulated)\", \"totalGlobalMem\": 150754820096, "
      "\"computeMajor\": 9, \"computeMinor\": 0, \"numSms\": 132}]";
  t.ddpscope = makeDdpscopeBlock(o, "sim", trainer.plan(), trainer.parameters());
  trace::canonicalize(t);
}

}  // namespace

trace::DdpscopeBlock makeDdpscopeBlock(const AgentOptions& options, std::string source,
                                       const BucketPlan& plan,
                                       const std::vector<ParamInfo>& params) {
  trace::DdpscopeBlock b;
  b.present = true;
  b.source = std::move(source);
  b.config = options.configEntries();
  for (const auto& bucket : plan.buckets) {
    trace::BucketDef d;
    d.id = bucket.id;
    d.bytes = bucket.bytes;
    d.dtype = std::string(dtypeName(bucket.dtype));
    for (const auto& slot : bucket.slots) {
      const auto& p = params[static_cast<std::size_t>(slot.param)];
      d.params.push_back({p.name, p.bytes()});
    }
    b.buckets.push_back(std::move(d));
  }
  return b;
}

SimRunResult runSimulation(const AgentOptions& o, std::ostream* progress,
                           const std::function<void(TrainerOptions&)>& adjust) {
  auto trainer_options = o.trainerOptions();
  if (adjust) adjust(trainer_options);
  sim::SimOptions so;
  so.world_size = o.world_size;
  so.math = o.sim_math;
  so.seed = o.model.seed;
  so.cost = o.cost;
  if (!o.fault.empty()) {
    sim::SimFault f;
    f.kind = o.fault == "hang" ? sim::FaultKind::Hang : sim::FaultKind::Die;
    f.rank = o.fault_rank;
    f.step = o.fault_step;
    f.timeout_ns = std::max<std::int64_t>(1, std::llround(o.timeout_s * 1e9));
    so.fault = f;
  }
  sim::SimCluster cluster(so);
  std::vector<std::unique_ptr<Model>> models;
  std::vector<std::unique_ptr<Trainer>> trainers;
  for (std::int32_t r = 0; r < o.world_size; ++r) {
    models.push_back(makeModel(o.model));
    trainers.push_back(
        std::make_unique<Trainer>(cluster.device(r), *models.back(), trainer_options));
    trainers.back()->setUp();
  }
  SimRunResult result;
  for (std::int32_t step = 0; step < o.steps; ++step) {
    for (auto& t : trainers)
      t->launchStep(step);
    double slowest = 0;
    std::optional<float> loss;
    try {
      for (auto& t : trainers) {
        const auto r = t->completeStep();
        slowest = std::max(slowest, static_cast<double>(r.step_ns) * 1e-6);
        if (!loss) loss = r.loss;
      }
    } catch (const sim::SimAborted&) {
      break;  // the simulated fault: the watchdogs aborted this step (cluster.abortInfo())
    }
    if (loss && !std::isfinite(*loss)) {
      throw std::runtime_error("the loss is no longer finite at step " + std::to_string(step) +
                               " (training diverged); use a smaller --lr");
    }
    result.step_ms.push_back(slowest);
    if (loss) result.losses.push_back(*loss);
    if (progress) {
      *progress << "{\"event\":\"progress\",\"step\":" << step + 1 << ",\"steps\":" << o.steps
                << ",\"step_ms\":" << shortNumber(slowest);
      if (loss) *progress << ",\"loss\":" << shortNumber(*loss);
      *progress << "}\n" << std::flush;
    }
  }
  result.buckets = static_cast<std::int32_t>(trainers.front()->plan().buckets.size());
  result.fault = cluster.abortInfo();
  for (std::int32_t r = 0; r < o.world_size; ++r) {
    // A dead process writes nothing.
    if (result.fault && r == o.fault_rank && result.fault->fault.kind == sim::FaultKind::Die)
      continue;
    auto& t = cluster.device(r).trace();
    finishTrace(t, o, *trainers[static_cast<std::size_t>(r)]);
    t.ddpscope.incomplete = result.fault.has_value();
    result.ranks.push_back(std::move(t));
  }
  return result;
}

namespace {

std::string jsonString(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// Writes DIR/rank-<r>.json.gz, one file per thread at a time (serializing and gzip dominate).
void writeRankTraces(const std::vector<trace::RankTrace>& ranks, const std::string& dir) {
  const std::size_t workers =
      std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, ranks.size());
  std::vector<std::exception_ptr> errors(workers);
  std::vector<std::thread> threads;
  for (std::size_t w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      try {
        for (std::size_t r = w; r < ranks.size(); r += workers) {
          const auto name = "rank-" + std::to_string(ranks[r].rank) + ".json.gz";
          trace::writeTraceFile(ranks[r], (std::filesystem::path(dir) / name).string());
        }
      } catch (...) {
        errors[w] = std::current_exception();
      }
    });
  }
  for (auto& t : threads)
    t.join();
  for (const auto& e : errors)
    if (e) std::rethrow_exception(e);
}

std::string rankList(const std::vector<std::int32_t>& ranks, const char* separator) {
  std::string s;
  for (std::size_t i = 0; i < ranks.size(); ++i)
    s += (i ? separator : "") + std::to_string(ranks[i]);
  return s;
}

// "rank 3" or "ranks 0,1,3".
std::string ranksPhrase(const std::vector<std::int32_t>& ranks) {
  return (ranks.size() == 1 ? "rank " : "ranks ") + rankList(ranks, ",");
}

std::vector<std::int32_t> writtenRanks(const SimRunResult& result) {
  std::vector<std::int32_t> ranks;
  for (const auto& t : result.ranks)
    ranks.push_back(t.rank);
  return ranks;
}

int runSimBackend(const AgentOptions& o, std::ostream& out, std::ostream& err) {
  const auto wall_start = std::chrono::steady_clock::now();
  if (const auto replaced = makeOutFolder(o.out_dir, o.world_size); replaced > 0)
    err << "ddpscope-agent: replacing the " << replaced << " rank file"
        << (replaced == 1 ? "" : "s") << " of an earlier run in " << o.out_dir << "\n";
  auto result = runSimulation(o, &out);
  writeRankTraces(result.ranks, o.out_dir);
  if (result.fault) {
    const auto& a = *result.fault;
    const auto message = faultMessage(o, result, o.out_dir);
    out << "{\"event\":\"error\",\"error\":\"simulated_fault\",\"fault\":" << jsonString(o.fault)
        << ",\"rank\":" << a.fault.rank << ",\"step\":" << a.step << ",\"bucket\":" << a.bucket
        << ",\"timeout_s\":" << shortNumber(o.timeout_s) << ",\"aborted_ranks\":["
        << rankList(a.waiting_ranks, ",") << "],\"written_ranks\":["
        << rankList(writtenRanks(result), ",") << "],\"completed_steps\":" << result.step_ms.size()
        << ",\"incomplete\":true,\"out\":" << jsonString(o.out_dir)
        << ",\"message\":" << jsonString(message) << "}\n"
        << std::flush;
    err << "ddpscope-agent: " << message << "\n";
    return kExitFailed;
  }
  double mean = 0;
  for (double ms : result.step_ms)
    mean += ms;
  mean /= static_cast<double>(std::max<std::size_t>(1, result.step_ms.size()));
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  out << "{\"event\":\"done\",\"backend\":\"sim\",\"ranks\":" << o.world_size
      << ",\"steps\":" << o.steps << ",\"buckets\":" << result.buckets
      << ",\"mean_step_ms\":" << shortNumber(mean)
      << ",\"last_step_ms\":" << shortNumber(result.step_ms.back());
  if (!result.losses.empty())
    out << ",\"first_loss\":" << shortNumber(result.losses.front())
        << ",\"final_loss\":" << shortNumber(result.losses.back());
  out << ",\"wall_s\":" << shortNumber(wall) << ",\"out\":" << jsonString(o.out_dir) << "}\n"
      << std::flush;
  return kExitOk;
}

}  // namespace

std::string faultMessage(const AgentOptions& o, const SimRunResult& result,
                         const std::string& dir) {
  if (!result.fault) return "";
  const auto& a = *result.fault;
  const auto r = std::to_string(a.fault.rank);
  const bool died = a.fault.kind == sim::FaultKind::Die;
  std::string m = "rank " + r + " did not join the allreduce of bucket " +
                  std::to_string(a.bucket) + " in step " + std::to_string(a.step) +
                  " within --timeout-s " + shortNumber(o.timeout_s) + " (simulated fault: rank " +
                  r + (died ? " died" : " hangs") + " at the start of its backward in step " +
                  std::to_string(a.fault.step) + "); " + ranksPhrase(a.waiting_ranks) + " aborted";
  if (died) {
    m += " and wrote incomplete traces to " + dir + " (rank " + r + " wrote none)";
  } else {
    m += ", rank " + r + "'s own watchdog fired; " + ranksPhrase(writtenRanks(result)) +
         " wrote incomplete traces to " + dir;
  }
  return m;
}

int runAgent(const AgentOptions& o, std::ostream& out, std::ostream& err) {
  try {
    if (o.backend == "cuda") {
#ifdef DDPSCOPE_AGENT_CUDA
      return cuda::runCudaBackend(o, out, err);
#else
      err << "ddpscope-agent: --backend cuda is not available: this build has no CUDA device "
             "(configured without the CUDA toolkit, DDPSCOPE_HAVE_CUDA=OFF, or agent/cuda is not "
             "built yet). Use --backend sim, or rebuild where the CUDA toolkit and NCCL are "
             "installed.\n";
      return kExitBackendUnavailable;
#endif
    }
    return runSimBackend(o, out, err);
  } catch (const std::exception& e) {
    err << "ddpscope-agent: " << e.what() << "\n";
    return kExitFailed;
  }
}

int agentMain(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  const auto parsed = parseAgentArguments(argc, argv, out, err);
  if (!parsed.options) return parsed.exit_code;
  return runAgent(*parsed.options, out, err);
}

}  // namespace ddpscope::agent
