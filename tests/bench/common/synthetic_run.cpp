#include "synthetic_run.h"

#include <random>
#include <string>
#include <vector>

#include "tracer/format/run_loader.h"
#include "tracer/format/trace_reader.h"

namespace ddpscope::bench {

using namespace trace;

namespace {

struct Appender {
  RankTrace& t;
  void add(std::int32_t track, EventKind kind, NameId name, NameId cat, TimeNs start, TimeNs dur,
           std::int64_t corr, std::int32_t bucket, std::int32_t step, std::int64_t bytes) {
    t.tracks[static_cast<std::size_t>(track)].push(
        {start, dur, name, cat, kind, corr, bucket, step, bytes});
  }
};

}  // namespace

RankTrace syntheticRank(const SyntheticSpec& spec, std::int32_t rank) {
  RankTrace t;
  t.rank = rank;
  t.world_size = spec.ranks;
  t.base_time_ns = 1'700'000'000'000'000'000;
  t.ddpscope.present = true;
  t.ddpscope.source = "sim";
  std::mt19937_64 rng(spec.seed * 1000003u + static_cast<unsigned>(rank));
  std::uniform_int_distribution<TimeNs> gemm_dur(2'000, 60'000), gap(500, 3'000),
      copy_dur(800, 9'000);
  const auto compute = t.trackIndex(TrackKind::Gpu, rank, 7);
  const auto comm = t.trackIndex(TrackKind::Gpu, rank, 13);
  const auto copy = t.trackIndex(TrackKind::Gpu, rank, 9);
  const auto host = t.trackIndex(TrackKind::Host, 1000 + rank, 1000 + rank);
  std::vector<NameId> gemms;
  for (const char* n :
       {"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1",
        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize256x128x64_cgasize1x2x1",
        "void at::native::vectorized_elementwise_kernel<4, at::native::GeluBackward>",
        "void cutlass::Kernel2<cutlass_80_wmma_tensorop_bf16_s161616gemm_bf16_32x32>",
        "ddpscope_sgd_update"}) {
    gemms.push_back(t.names.intern(n));
  }
  const NameId allreduce = t.names.intern("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  const NameId memcpy_name = t.names.intern("Memcpy DtoD (Device -> Device)");
  const NameId launch = t.names.intern("cudaLaunchKernel");
  const NameId kernel_cat = t.names.intern("kernel");
  const NameId memcpy_cat = t.names.intern("gpu_memcpy");
  const NameId runtime_cat = t.names.intern("cuda_runtime");
  const NameId annotation_cat = t.names.intern("user_annotation");
  Appender out{t};
  for (auto* tr : {&t.tracks[compute], &t.tracks[comm], &t.tracks[copy], &t.tracks[host]}) {
    tr->reserve(static_cast<std::size_t>(spec.events_per_rank / 2 + 16));
  }
  for (std::int32_t b = 0; b < spec.buckets_per_step; ++b) {
    t.ddpscope.buckets.push_back(
        {b, 25 << 20, "bf16", {{"blocks." + std::to_string(b) + ".weight", 25 << 20}}});
  }
  TimeNs now = 0, host_now = 0, comm_free = 0;
  std::int64_t corr = 1, produced = 0;
  std::int32_t step = 0;
  while (produced < spec.events_per_rank) {
    const TimeNs step_start = host_now;
    const std::int32_t per_bucket = spec.gpu_events_per_step / spec.buckets_per_step;
    for (std::int32_t k = 0; k < spec.gpu_events_per_step && produced < spec.events_per_rank; ++k) {
      const std::int32_t bucket = k / std::max(1, per_bucket);
      const bool last_of_bucket = per_bucket > 0 && (k + 1) % per_bucket == 0;
      host_now += gap(rng) / 4;
      out.add(host, EventKind::Runtime, launch, runtime_cat, host_now, 1'500, corr, kNoBucket,
              kNoStep, kNoBytes);
      now = std::max(now, host_now + 2'000) + gap(rng) / 8;
      host_now += 1'500;  // a thread's calls follow one another
      const TimeNs d = gemm_dur(rng);
      const bool is_copy = k % 10 == 9;
      if (is_copy) {
        out.add(copy, EventKind::Memcpy, memcpy_name, memcpy_cat, now, copy_dur(rng), corr,
                kNoBucket, step, 1 << 20);
      } else {
        out.add(compute, EventKind::Kernel, gemms[static_cast<std::size_t>(k % 4)], kernel_cat, now,
                d, corr, bucket < spec.buckets_per_step ? bucket : kNoBucket, step, kNoBytes);
        now += d;
      }
      ++corr;
      produced += 2;
      if (last_of_bucket && bucket < spec.buckets_per_step) {
        host_now += 1'000;
        out.add(host, EventKind::Runtime, launch, runtime_cat, host_now, 1'500, corr, kNoBucket,
                kNoStep, kNoBytes);
        host_now += 1'500;
        const TimeNs start = std::max(now, comm_free);
        const TimeNs dur = 150'000 + gemm_dur(rng);
        out.add(comm, EventKind::Kernel, allreduce, kernel_cat, start, dur, corr, bucket, step,
                25 << 20);
        comm_free = start + dur;
        ++corr;
        produced += 2;
      }
    }
    now = std::max(now, comm_free);
    out.add(host, EventKind::UserAnnotation, t.names.intern("ProfilerStep#" + std::to_string(step)),
            annotation_cat, step_start, std::max(now, host_now) - step_start + 1, kNoCorrelation,
            kNoBucket, kNoStep, kNoBytes);
    host_now = std::max(now, host_now) + 10'000;
    ++produced;
    ++step;
  }
  canonicalize(t);
  return t;
}

Run syntheticRun(const SyntheticSpec& spec) {
  Run run;
  run.name = "synthetic";
  for (std::int32_t r = 0; r < spec.ranks; ++r)
    run.ranks.push_back(syntheticRank(spec, r));
  alignRanks(run);
  return run;
}

}  // namespace ddpscope::bench
