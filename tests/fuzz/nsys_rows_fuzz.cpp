// Any bytes as a sequence of Nsight Systems export rows (strings, processes, kernels, copies,
// fills, synchronisations, CUDA calls, NVTX ranges, MPI ranks, the environment's rank) fed to the
// Nsight importer's row mapping, not to SQLite. The mapping either refuses the rows with a
// TraceError or gives ranks that are canonical (tracks sorted, no negative time or duration,
// flows from a host track to a GPU track, unique rank numbers), that the analysis digests, and
// that write and read back as the same model.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <string_view>

#include "app/analysis/analysis.h"
#include "tracer/format/nsys_importer.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;
using trace::kNsysNone;

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "nsys_rows fuzz: %s: %s\n", what, detail.c_str());
  std::abort();
}

class Bytes {
 public:
  Bytes(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  std::uint8_t byte() { return p_ == end_ ? 0 : *p_++; }
  // Mostly small numbers near the capture's start; sometimes any 64-bit value.
  std::int64_t number() {
    const auto k = byte();
    if (k < 224) return (static_cast<std::int64_t>(k) - 32) * 97;
    if (k < 240) return kNsysNone;
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i)
      v = (v << 8) | byte();
    std::int64_t s = 0;
    std::memcpy(&s, &v, sizeof s);
    return s;
  }
  std::int64_t small(int n) { return static_cast<std::int64_t>(byte() % n); }
  std::int64_t maybe(int n) { return byte() % 5 == 0 ? kNsysNone : small(n); }
  // Printable text (what exports hold), with the names the mapping looks at.
  std::string text() {
    static constexpr std::string_view known[] = {"ProfilerStep#3",
                                                 "ProfilerStep#x",
                                                 "cudaLaunchKernel_v7000",
                                                 "cuLaunchKernelEx",
                                                 "ncclDevKernel_AllReduce_Sum_f32_RING_LL",
                                                 "gemm",
                                                 "_v",
                                                 "cuda_v",
                                                 "ncclSend"};
    const auto k = byte();
    if (k < 128) return std::string(known[k % std::size(known)]);
    std::string s;
    for (int n = byte() % 12; n > 0; --n)
      s += static_cast<char>(' ' + byte() % 95);
    return s;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

// Process ids from 100: a host thread (pid, tid) and a GPU stream (device, stream) with equal
// numbers cannot be told apart once written as Kineto JSON (the reader binds a flow's end to the
// host thread first), which the devices 0-2 used here would otherwise meet.
std::int64_t globalPid(Bytes& in) {
  return (100 + in.small(4)) << 24;
}

void check(const trace::RankTrace& t) {
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.start[i] < 0 || track.dur[i] < 0) fail("negative time", t.path);
      if (i > 0 && track.start[i] < track.start[i - 1]) fail("track not sorted", t.path);
    }
  }
  for (const auto& f : t.flows) {
    if (f.from_track < 0 || f.to_track < 0 ||
        static_cast<std::size_t>(f.from_track) >= t.tracks.size() ||
        static_cast<std::size_t>(f.to_track) >= t.tracks.size())
      fail("flow out of range", t.path);
    if (t.tracks[static_cast<std::size_t>(f.from_track)].kind != trace::TrackKind::Host ||
        t.tracks[static_cast<std::size_t>(f.to_track)].kind != trace::TrackKind::Gpu)
      fail("flow not launch -> GPU", t.path);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Bytes in(data, size);
  trace::NsysRowMapper mapper("rows.sqlite", in.number(), in.number());
  while (!in.empty()) {
    switch (in.byte() % 9) {
      case 0:
        mapper.addString(in.small(24), in.text());
        break;
      case 1:
        mapper.addProcess({globalPid(in), in.number(), in.text()});
        break;
      case 2:
      case 3: {
        trace::NsysGpuRow r;
        r.table = static_cast<trace::NsysGpuRow::Table>(in.small(4));
        r.start = in.number();
        r.end = in.byte() % 4 == 0 ? in.number() : r.start + in.small(200);
        r.device = in.small(3);
        r.context = in.maybe(3);
        r.stream = in.byte() % 7 == 0 ? 4294967295 : in.small(4);
        r.correlation = in.maybe(8);
        r.global_pid = globalPid(in);
        r.demangled = in.maybe(24);
        r.short_name = in.maybe(24);
        r.mangled = in.maybe(24);
        r.bytes = in.number();
        r.copy_kind = in.number();
        r.src_kind = in.maybe(9);
        r.dst_kind = in.maybe(9);
        r.mem_kind = in.number();
        r.sync_type = in.maybe(6);
        mapper.addGpu(r);
        break;
      }
      case 4: {
        trace::NsysApiRow r;
        r.start = in.number();
        r.end = in.byte() % 4 == 0 ? in.number() : r.start + in.small(50);
        r.global_tid = globalPid(in) | in.small(3);
        r.correlation = in.maybe(8);
        r.name_id = in.maybe(24);
        mapper.addApi(r);
        break;
      }
      case 5: {
        static constexpr std::int64_t types[] = {59, 60, 70, 71, 34, 65, 75, 33};
        std::string text = in.text();
        trace::NsysNvtxRow r;
        r.start = in.number();
        r.end = in.byte() % 4 == 0 ? in.number() : r.start + in.small(300);
        r.event_type = in.byte() % 9 == 0 ? in.number() : types[in.small(8)];
        r.global_tid = globalPid(in) | in.small(3);
        if (in.byte() % 2) r.text = text;
        r.text_id = in.maybe(24);
        mapper.addNvtx(r);
        break;
      }
      case 6:
        mapper.addMpiRank(globalPid(in), in.number());
        break;
      case 7:
        mapper.setEnvironmentRank(in.number(), "RANK=?", in.number());
        break;
      case 8:
        mapper.addThreadName(globalPid(in) | in.small(3), in.maybe(24));
        break;
    }
  }
  std::vector<trace::ImportedRank> ranks;
  try {
    ranks = mapper.finish();
  } catch (const trace::TraceError&) {
    return 0;
  }
  std::set<std::int32_t> seen;
  for (auto& r : ranks) {
    auto& t = r.trace;
    if (!seen.insert(t.rank).second) fail("duplicate rank", std::to_string(t.rank));
    check(t);
    (void)analysis::analyzeRank(t);
    t.ddpscope.present = true;
    t.ddpscope.source = "imported";
    t.world_size_declared = true;
    trace::RankTrace back;
    try {
      back = trace::parseTraceText(trace::serializeTrace(t), t.path);
    } catch (const std::exception& e) {
      fail("written ranks do not read back", e.what());
    }
    back.warnings = t.warnings;
    if (const auto d = trace::describeDifference(t, back); !d.empty()) fail("round trip", d);
  }
  return 0;
}
