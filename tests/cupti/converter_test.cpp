// The CUPTI converter on hand-built activity buffers: what each record becomes in the trace
// (names, categories, tracks, ns times, correlation, flows), and that the result survives a
// write/read round trip and is classified by the analysis as docs/METRICS.md defines.

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <cupti.h>
#include "app/analysis/analysis.h"

#include "record_buffer.h"
#include "tracer/cupti/activity_converter.h"
#include "tracer/format/trace_reader.h"
#include "tracer/format/trace_writer.h"

using namespace ddpscope;
using ddpscope::cupti::ActivityConverter;
using ddpscope::cupti::ConverterOptions;
using ddpscope::testing::RecordBuffer;
using trace::EventKind;
using trace::RankTrace;
using trace::TrackKind;

namespace {

constexpr std::uint64_t kBase = 5'000'000'000;  // CUPTI ns of model time 0
constexpr std::int64_t kEpochOffset = 1'700'000'000'000'000'000;
constexpr std::uint32_t kPid = 4242, kTid = 4243;

ConverterOptions options() {
  ConverterOptions o;
  o.base_ns = static_cast<std::int64_t>(kBase);
  o.epoch_offset_ns = kEpochOffset;
  o.process_id = kPid;
  o.process_name = "train.py";
  return o;
}

CUpti_ActivityKernel10& kernel(RecordBuffer& b, const char* name, std::uint32_t device,
                               std::uint32_t stream, std::uint64_t start, std::uint64_t end,
                               std::uint32_t correlation, std::uint32_t context = 1) {
  auto& k = b.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  k.name = name;
  k.deviceId = device;
  k.contextId = context;
  k.streamId = stream;
  k.start = kBase + start;
  k.end = kBase + end;
  k.correlationId = correlation;
  k.gridX = 128;
  k.blockX = 256;
  return k;
}

void runtimeCall(RecordBuffer& b, CUpti_CallbackId cbid, std::uint64_t start, std::uint64_t end,
                 std::uint32_t correlation, bool driver = false) {
  auto& a =
      b.add<CUpti_ActivityAPI>(driver ? CUPTI_ACTIVITY_KIND_DRIVER : CUPTI_ACTIVITY_KIND_RUNTIME);
  a.cbid = cbid;
  a.start = kBase + start;
  a.end = kBase + end;
  a.processId = kPid;
  a.threadId = kTid;
  a.correlationId = correlation;
}

void marker(RecordBuffer& b, std::uint32_t id, CUpti_ActivityFlag flag, std::uint64_t ts,
            const char* name = nullptr, const char* domain = nullptr) {
  ddpscope::testing::addMarker(b, id, flag, kBase + ts, name, domain, kPid, kTid);
}

void sync(RecordBuffer& b, CUpti_ActivitySynchronizationType type, std::uint32_t context,
          std::uint32_t stream, std::uint32_t event, std::uint64_t start, std::uint64_t end,
          std::uint32_t correlation) {
  auto& s = b.add<CUpti_ActivitySynchronization2>(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  s.type = type;
  s.contextId = context;
  s.streamId = stream;
  s.cudaEventId = event;
  s.cudaEventSyncId = event == CUPTI_SYNCHRONIZATION_INVALID_VALUE ? 0 : 1;
  s.start = kBase + start;
  s.end = kBase + end;
  s.correlationId = correlation;
}

// One step of a data-parallel job on device 0: a GEMM on the compute stream (7), an NCCL
// allreduce on the communication stream (13) launched inside an NCCL NVTX range, copies,
// a memset, syncs, CUDA event records and overhead, all inside "ProfilerStep#3".
RecordBuffer stepBuffer() {
  RecordBuffer b;
  marker(b, 1, CUPTI_ACTIVITY_FLAG_MARKER_START, 0, "ProfilerStep#3", nullptr);
  runtimeCall(b, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 100, 180, 10);
  // A nested driver call with its own correlation id, which the copy record names: the copy is
  // re-pointed at the runtime call (10) and the driver record dropped.
  runtimeCall(b, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2, 120, 170, 110, true);
  auto& copy = b.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 1 << 20;
  copy.start = kBase + 200;
  copy.end = kBase + 1200;
  copy.deviceId = 0;
  copy.contextId = 1;
  copy.streamId = 7;
  copy.correlationId = 110;
  runtimeCall(b, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 1300, 1310, 11);
  // The runtime call's own driver call shares its correlation id: dropped as redundant.
  runtimeCall(b, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 1302, 1308, 11, true);
  kernel(b, "_Z10gemmKernelPfPKfS1_i", 0, 7, 1400, 11400, 11);
  marker(b, 2, CUPTI_ACTIVITY_FLAG_MARKER_START, 11500, "ncclAllReduce", "NCCL");
  auto& payload = b.add<CUpti_ActivityMarkerData2>(CUPTI_ACTIVITY_KIND_MARKER_DATA);
  payload.id = 2;
  payload.payloadKind = CUPTI_METRIC_VALUE_KIND_UINT64;
  payload.payload.metricValueUint64 = 25 << 20;
  runtimeCall(b, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 11600, 11610, 12);
  marker(b, 2, CUPTI_ACTIVITY_FLAG_MARKER_END, 11700);
  kernel(b, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 13,
         9400, 15400, 12);
  // Triton launches through the driver directly: kept, and it gets its flow.
  runtimeCall(b, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, 15500, 15510, 13, true);
  kernel(b, "triton_poi_fused_add_0", 0, 7, 15600, 15700, 13);
  auto& set = b.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.bytes = 4096;
  set.start = kBase + 15800;
  set.end = kBase + 15900;
  set.deviceId = 0;
  set.contextId = 1;
  set.streamId = 7;
  set.correlationId = 14;
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  // The compute stream waits for the allreduce (event 9 recorded on stream 13).
  auto& ev = b.add<CUpti_ActivityCudaEvent2>(CUPTI_ACTIVITY_KIND_CUDA_EVENT);
  ev.eventId = 9;
  ev.cudaEventSyncId = 1;
  ev.deviceId = 0;
  ev.contextId = 1;
  ev.streamId = 13;
  ev.correlationId = 15;
  ev.deviceTimestamp = kBase + 15400;
  sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, 1, 7, 9, 16000, 16010, 16);
  sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, 1,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, 9, 16100, 16200, 17);
  sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 1, 7,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, 16300, 16400, 18);
  sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, 1,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, CUPTI_SYNCHRONIZATION_INVALID_VALUE, 16500, 16600, 19);
  auto& over = b.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  over.overheadKind = CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH;
  over.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  over.objectId.pt.processId = kPid;
  over.objectId.pt.threadId = kTid;
  over.start = kBase + 16700;
  over.end = kBase + 16750;
  marker(b, 3, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 16800, "checkpoint");
  marker(b, 1, CUPTI_ACTIVITY_FLAG_MARKER_END, 17000);
  return b;
}

struct Found {
  const trace::Track* track = nullptr;
  std::size_t index = 0;
  explicit operator bool() const { return track != nullptr; }
};

// The only event named `name` of kind `kind`; fails the test when there is not exactly one.
Found only(const RankTrace& t, std::string_view name, EventKind kind) {
  Found f;
  int n = 0;
  for (const auto& track : t.tracks) {
    for (std::size_t i = 0; i < track.size(); ++i) {
      if (track.kind_of[i] == kind && t.names[track.name[i]] == name) {
        f = Found{&track, i};
        ++n;
      }
    }
  }
  EXPECT_EQ(n, 1) << name;
  return n == 1 ? f : Found{};
}

RankTrace convertStep() {
  ActivityConverter c(options());
  auto b = stepBuffer();
  EXPECT_EQ(c.addBuffer(b.data(), b.size()), 23u);  // every record walked
  cupti::FinishOptions finish;
  finish.rank = 1;
  finish.world_size = 2;
  return c.finish(finish);
}

}  // namespace

TEST(CuptiConverter, KernelsAreDemangledOnTheirStreamInNs) {
  const auto t = convertStep();
  const auto k = only(t, "gemmKernel(float*, float const*, float const*, int)", EventKind::Kernel);
  ASSERT_TRUE(k);
  EXPECT_EQ(k.track->kind, TrackKind::Gpu);
  EXPECT_EQ(k.track->device(), 0);
  EXPECT_EQ(k.track->stream(), 7);
  EXPECT_EQ(k.track->start[k.index], 1400);
  EXPECT_EQ(k.track->dur[k.index], 10000);
  EXPECT_EQ(k.track->correlation[k.index], 11);
  EXPECT_EQ(t.names[k.track->category(k.index)], "kernel");
  // Not mangled: kept as is.
  EXPECT_TRUE(only(t, "triton_poi_fused_add_0", EventKind::Kernel));
  EXPECT_EQ(t.base_time_ns, static_cast<std::int64_t>(kBase) + kEpochOffset);
}

TEST(CuptiConverter, CopiesAndSetsAreNamedLikeKineto) {
  const auto t = convertStep();
  const auto m = only(t, "Memcpy HtoD (Pageable -> Device)", EventKind::Memcpy);
  ASSERT_TRUE(m);
  EXPECT_EQ(t.names[m.track->category(m.index)], "gpu_memcpy");
  EXPECT_EQ(m.track->stream(), 7);
  EXPECT_EQ(m.track->start[m.index], 200);
  EXPECT_EQ(m.track->dur[m.index], 1000);
  EXPECT_EQ(m.track->bytes[m.index], 1 << 20);
  EXPECT_EQ(m.track->correlation[m.index], 10);
  const auto s = only(t, "Memset (Device)", EventKind::Memset);
  ASSERT_TRUE(s);
  EXPECT_EQ(t.names[s.track->category(s.index)], "gpu_memset");
  EXPECT_EQ(s.track->bytes[s.index], 4096);
  EXPECT_EQ(s.track->start[s.index], 15800);
}

TEST(CuptiConverter, SyncRecordsLandOnTheirDeviceAndStream) {
  const auto t = convertStep();
  const auto wait = only(t, "Stream Wait Event", EventKind::Sync);
  ASSERT_TRUE(wait);
  EXPECT_EQ(t.names[wait.track->category(wait.index)], "cuda_sync");
  EXPECT_EQ(wait.track->stream(), 7);
  EXPECT_EQ(wait.track->start[wait.index], 16000);
  EXPECT_EQ(wait.track->dur[wait.index], 10);
  EXPECT_EQ(wait.track->correlation[wait.index], 16);
  // Event Sync names no stream: it waits on the stream the event was recorded on.
  const auto event = only(t, "Event Sync", EventKind::Sync);
  ASSERT_TRUE(event);
  EXPECT_EQ(event.track->stream(), 13);
  EXPECT_EQ(only(t, "Stream Sync", EventKind::Sync).track->stream(), 7);
  const auto ctx = only(t, "Context Sync", EventKind::Sync);
  ASSERT_TRUE(ctx);
  EXPECT_EQ(ctx.track->stream(), -1);
  EXPECT_EQ(ctx.track->device(), 0);
}

TEST(CuptiConverter, SyncDeviceComesFromTheContext) {
  RecordBuffer b;
  sync(b, CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, 5, 21,
       CUPTI_SYNCHRONIZATION_INVALID_VALUE, 10, 20, 1);
  auto& ctx = b.add<CUpti_ActivityContext3>(CUPTI_ACTIVITY_KIND_CONTEXT);
  ctx.contextId = 5;
  ctx.deviceId = 3;
  ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  const auto t = c.finish();
  const auto s = only(t, "Stream Sync", EventKind::Sync);
  ASSERT_TRUE(s);
  EXPECT_EQ(s.track->device(), 3);
  EXPECT_EQ(s.track->stream(), 21);
}

TEST(CuptiConverter, ApiCallsAreHostEventsWithCorrelation) {
  const auto t = convertStep();
  const auto host = t.findTrack(TrackKind::Host, kPid, kTid);
  ASSERT_GE(host, 0);
  const auto& h = t.tracks[static_cast<std::size_t>(host)];
  int launches = 0, drivers = 0;
  for (std::size_t i = 0; i < h.size(); ++i) {
    if (h.kind_of[i] == EventKind::Runtime && t.names[h.name[i]] == "cudaLaunchKernel") {
      EXPECT_EQ(t.names[h.category(i)], "cuda_runtime");
      EXPECT_TRUE(h.correlation[i] == 11 || h.correlation[i] == 12);
      ++launches;
    }
    if (h.kind_of[i] == EventKind::Driver) {
      EXPECT_EQ(t.names[h.name[i]], "cuLaunchKernel");
      EXPECT_EQ(t.names[h.category(i)], "cuda_driver");
      EXPECT_EQ(h.correlation[i], 13);  // the nested ones (110, 11) are dropped
      EXPECT_EQ(h.start[i], 15500);
      ++drivers;
    }
  }
  EXPECT_EQ(launches, 2);
  EXPECT_EQ(drivers, 1);
  EXPECT_EQ(t.names[h.name[0]], "ProfilerStep#3");  // sorted by start, longest first
  EXPECT_EQ(t.process_names.at(kPid), "train.py");
  EXPECT_EQ(t.process_names.at(0), "GPU 0");
}

TEST(CuptiConverter, NestedDriverCallsCanBeKept) {
  auto o = options();
  o.keep_nested_driver_calls = true;
  ActivityConverter c(o);
  auto b = stepBuffer();
  c.addBuffer(b.data(), b.size());
  const auto t = c.finish();
  int drivers = 0;
  for (const auto& tr : t.tracks)
    for (std::size_t i = 0; i < tr.size(); ++i)
      drivers += tr.kind_of[i] == EventKind::Driver;
  EXPECT_EQ(drivers, 3);
}

TEST(CuptiConverter, LaunchToKernelFlows) {
  const auto t = convertStep();
  // copy (10), gemm (11), allreduce (12), triton via the driver (13), memset has no launch.
  ASSERT_EQ(t.flows.size(), 4u);
  for (const auto& f : t.flows) {
    EXPECT_EQ(t.names[f.cat], "ac2g");
    EXPECT_EQ(t.tracks[static_cast<std::size_t>(f.from_track)].kind, TrackKind::Host);
    EXPECT_EQ(t.tracks[static_cast<std::size_t>(f.to_track)].kind, TrackKind::Gpu);
  }
  EXPECT_EQ(t.flows[0].id, 10u);  // the copy, re-pointed from its driver call (110)
  EXPECT_EQ(t.flows[0].from_ts, 100);
  const auto& gemm = t.flows[1];
  EXPECT_EQ(gemm.id, 11u);
  EXPECT_EQ(gemm.from_ts, 1300);  // the runtime call, not its nested driver call
  EXPECT_EQ(gemm.to_ts, 1400);
  EXPECT_EQ(t.tracks[static_cast<std::size_t>(gemm.to_track)].stream(), 7);
  const auto& triton = t.flows[3];
  EXPECT_EQ(triton.id, 13u);
  EXPECT_EQ(triton.from_ts, 15500);
  EXPECT_EQ(triton.to_ts, 15600);
}

// Without driver records (DDPSCOPE_CUPTI_DRIVER=0) a copy still reaches the runtime call that
// made it, through the runtime correlation id the record carries.
TEST(CuptiConverter, CopiesLinkToTheirRuntimeCallWithoutDriverRecords) {
  RecordBuffer b;
  runtimeCall(b, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 100, 180, 10);
  auto& copy = b.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.bytes = 4096;
  copy.start = kBase + 200;
  copy.end = kBase + 300;
  copy.streamId = 7;
  copy.correlationId = 110;  // the driver call's, not recorded
  copy.runtimeCorrelationId = 10;
  ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  const auto t = c.finish();
  ASSERT_EQ(t.flows.size(), 1u);
  EXPECT_EQ(t.flows[0].id, 10u);
  EXPECT_EQ(t.flows[0].from_ts, 100);
  EXPECT_EQ(t.flows[0].to_ts, 200);
}

TEST(CuptiConverter, NvtxRangesAndTheirGpuProjection) {
  const auto t = convertStep();
  const auto step = only(t, "ProfilerStep#3", EventKind::UserAnnotation);
  ASSERT_TRUE(step);
  EXPECT_EQ(t.names[step.track->category(step.index)], "user_annotation");
  EXPECT_EQ(step.track->start[step.index], 0);
  EXPECT_EQ(step.track->dur[step.index], 17000);
  ASSERT_EQ(t.steps.size(), 1u);
  EXPECT_EQ(t.steps[0].number, 3);
  // Projected per stream: from the first to the last GPU activity the range launched.
  int projected = 0;
  for (const auto& tr : t.tracks) {
    for (std::size_t i = 0; i < tr.size(); ++i) {
      if (tr.kind_of[i] != EventKind::GpuAnnotation || t.names[tr.name[i]] != "ProfilerStep#3") {
        continue;
      }
      EXPECT_EQ(t.names[tr.category(i)], "gpu_user_annotation");
      ++projected;
      if (tr.stream() == 7) {
        EXPECT_EQ(tr.start[i], 200);
        EXPECT_EQ(tr.end(i), 15700);
      } else {
        EXPECT_EQ(tr.stream(), 13);
        EXPECT_EQ(tr.start[i], 9400);
        EXPECT_EQ(tr.end(i), 15400);
      }
    }
  }
  EXPECT_EQ(projected, 2);
  const auto instant = only(t, "checkpoint", EventKind::UserAnnotation);
  ASSERT_TRUE(instant);
  EXPECT_EQ(instant.track->dur[instant.index], 0);
  EXPECT_EQ(instant.track->start[instant.index], 16800);
  const auto overhead = only(t, "CUPTI Buffer Flush", EventKind::Other);
  ASSERT_TRUE(overhead);
  EXPECT_EQ(t.names[overhead.track->category(overhead.index)], "overhead");
  EXPECT_EQ(overhead.track->dur[overhead.index], 50);
}

TEST(CuptiConverter, NcclPayloadSizesTheRangeAndItsKernel) {
  const auto t = convertStep();
  const auto range = only(t, "ncclAllReduce", EventKind::UserAnnotation);
  ASSERT_TRUE(range);
  EXPECT_EQ(range.track->bytes[range.index], 25 << 20);
  EXPECT_EQ(range.track->dur[range.index], 200);
  const auto k =
      only(t, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
           EventKind::Kernel);
  ASSERT_TRUE(k);
  EXPECT_EQ(k.track->bytes[k.index], 25 << 20);
  const auto g = only(t, "ncclAllReduce", EventKind::GpuAnnotation);
  ASSERT_TRUE(g);
  EXPECT_EQ(g.track->stream(), 13);
}

TEST(CuptiConverter, UntimedRecordsAndUnmatchedRangesAreCounted) {
  RecordBuffer b;
  kernel(b, "k", 0, 7, 0, 0, 1).start = 0;  // CUPTI could not time it
  b.add<CUpti_ActivityKernel10>(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  marker(b, 8, CUPTI_ACTIVITY_FLAG_MARKER_START, 5, "open");
  marker(b, 9, CUPTI_ACTIVITY_FLAG_MARKER_END, 6);
  ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  c.addDroppedByCupti(5);
  const auto t = c.finish();
  EXPECT_EQ(t.eventCount(), 1u);  // the kernel with an end time
  EXPECT_EQ(c.stats().without_timestamps, 1u);
  EXPECT_EQ(c.stats().unmatched_markers, 2u);
  EXPECT_EQ(t.ddpscope.dropped_records, 6);
  EXPECT_TRUE(t.ddpscope.present);
  EXPECT_EQ(t.ddpscope.source, "cuda");
  EXPECT_FALSE(t.ddpscope.incomplete);
}

TEST(CuptiConverter, RecordsTimedDecadesAwayAreDroppedAndCounted) {
  // A corrupt record far past the base (2^62 ns, about 146 years) or one ending at 2^63 ns (past
  // INT64_MAX as a time) would stretch the trace past what a trace may span; a sane one is kept.
  RecordBuffer b;
  kernel(b, "sane", 0, 7, 100, 200, 1);
  kernel(b, "far", 0, 7, std::uint64_t{1} << 62, (std::uint64_t{1} << 62) + 10, 2);
  kernel(b, "ends past int64", 0, 7, 300, std::uint64_t{1} << 63, 3);
  marker(b, 8, CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, std::uint64_t{1} << 62, "far marker");
  ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  const auto t = c.finish();
  EXPECT_EQ(t.eventCount(), 1u);
  EXPECT_TRUE(only(t, "sane", EventKind::Kernel));
  EXPECT_EQ(c.stats().implausible_times, 3u);
  EXPECT_EQ(t.ddpscope.dropped_records, 3);
  // What was kept is a trace our reader takes back unchanged (it rebases to the first event).
  auto back = trace::parseTraceText(trace::serializeTrace(t), "back.json");
  auto kept = t;
  kept.rebaseToEarliestEvent();
  back.path.clear();
  EXPECT_EQ(back.warnings, std::vector<std::string>{});
  EXPECT_EQ(trace::describeDifference(kept, back), "");
}

TEST(CuptiConverter, DeviceRecordsBecomeDeviceProperties) {
  RecordBuffer b;
  auto& d = b.add<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  d.id = 0;
  d.name = "NVIDIA H200";
  d.globalMemorySize = 150ull << 30;
  d.computeCapabilityMajor = 9;
  d.numMultiprocessors = 132;
  d.numThreadsPerWarp = 32;
  ActivityConverter c(options());
  c.addBuffer(b.data(), b.size());
  const auto t = c.finish();
  EXPECT_NE(t.device_properties_json.find("\"name\": \"NVIDIA H200\""), std::string::npos);
  EXPECT_NE(t.device_properties_json.find("\"computeMajor\": 9"), std::string::npos);
  EXPECT_NE(t.device_properties_json.find("\"numSms\": 132"), std::string::npos);
  EXPECT_EQ(t.device_properties_json.front(), '[');
}

// From a live tracer, CUPTI's malloc'd device name and overhead details are the client's to
// free (cupti_activity.h): the converter releases each once it has copied what it needs, also
// for a record that makes no event.
std::vector<void*> g_released;

TEST(CuptiConverter, ReleasesWhatCuptiHandsOver) {
  char name[] = "NVIDIA H200";
  int details = 0;
  RecordBuffer b;
  auto& d = b.add<CUpti_ActivityDevice5>(CUPTI_ACTIVITY_KIND_DEVICE);
  d.id = 0;
  d.name = name;
  auto& over = b.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);
  over.overheadKind = CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL;
  over.objectKind = CUPTI_ACTIVITY_OBJECT_THREAD;
  over.start = 0;  // not timed: no event
  over.end = 0;
  over.overheadData = &details;
  b.add<CUpti_ActivityOverhead3>(CUPTI_ACTIVITY_KIND_OVERHEAD);  // nothing to release
  auto o = options();
  g_released.clear();
  o.release = [](void* p) { g_released.push_back(p); };
  ActivityConverter c(o);
  c.addBuffer(b.data(), b.size());
  EXPECT_EQ(g_released, (std::vector<void*>{name, &details}));
  const auto t = c.finish();
  EXPECT_NE(t.device_properties_json.find("\"name\": \"NVIDIA H200\""), std::string::npos);
}

TEST(CuptiConverter, RoundTripsThroughTheFileFormat) {
  auto t = convertStep();
  const auto dir =
      std::filesystem::temp_directory_path() / ("ddpscope-cupti-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const auto path = (dir / "rank-1.json.gz").string();
  trace::writeTraceFile(t, path);
  auto back = trace::readTraceFile(path);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.world_size, 2);
  EXPECT_EQ(back.source(), "cuda");
  back.path.clear();
  back.warnings.clear();
  EXPECT_EQ(trace::describeDifference(t, back), "");
}

TEST(CuptiConverter, AnalysisClassifiesTheConvertedStep) {
  const auto t = convertStep();
  const auto r = analysis::analyzeRank(t);
  using analysis::ActivityClass;
  EXPECT_EQ(r.source, "cuda");
  EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Communication)], 1);
  EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Computation)], 2);
  EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Memory)], 2);
  EXPECT_EQ(r.counts[static_cast<int>(ActivityClass::Other)], 4);
  // Allreduce [9400, 15400) against compute [1400, 11400) and [15600, 15700): 2000 ns hidden.
  EXPECT_EQ(r.whole.comm_ns, 6000);
  EXPECT_EQ(r.whole.overlap_ns, 2000);
  ASSERT_TRUE(r.whole.overlap_pct.has_value());
  EXPECT_NEAR(*r.whole.overlap_pct, 100.0 * 2000 / 6000, 1e-9);
  ASSERT_EQ(r.steps.size(), 1u);
  EXPECT_EQ(r.steps[0].step, 3);
  // No bucket metadata: the allreduce is an inferred bucket sized by the NCCL payload.
  ASSERT_EQ(r.buckets.size(), 1u);
  EXPECT_TRUE(r.buckets[0].inferred);
  EXPECT_EQ(r.buckets[0].bytes, 25 << 20);
}

TEST(CuptiConverter, PeerCopiesAreMemcpyOnTheirStream) {
  RecordBuffer b;
  auto& p = b.add<CUpti_ActivityMemcpyPtoP4>(CUPTI_ACTIVITY_KIND_MEMCPY2);
  p.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  p.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  p.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  p.bytes = 1 << 16;
  p.start = kBase + 50;
  p.end = kBase + 80;
  p.deviceId = 1;
  p.streamId = 22;
  p.correlationId = 5;
  ActivityConverter c(options());
  EXPECT_EQ(c.addBuffer(b.data(), b.size()), 1u);
  const auto t = c.finish();
  const auto m = only(t, "Memcpy PtoP (Device -> Device)", EventKind::Memcpy);
  ASSERT_TRUE(m);
  EXPECT_EQ(m.track->device(), 1);
  EXPECT_EQ(m.track->stream(), 22);
  EXPECT_EQ(m.track->start[m.index], 50);
  EXPECT_EQ(m.track->dur[m.index], 30);
  EXPECT_EQ(m.track->bytes[m.index], 1 << 16);
  EXPECT_EQ(analysis::classify(EventKind::Memcpy, t.names[m.track->name[m.index]]),
            analysis::ActivityClass::Memory);
}
