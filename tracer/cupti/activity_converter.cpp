#include "activity_converter.h"

#include <cupti.h>

#include <algorithm>
#include <limits>

#include "cupti_names.h"
#include "tracer/format/json_text.h"
#include "tracer/format/trace_reader.h"

namespace ddpscope::cupti {

using trace::EventKind;
using trace::NameId;
using trace::TimeNs;
using trace::Track;
using trace::TrackKind;

namespace {

constexpr std::string_view kFlowCategory = "ac2g";
constexpr std::string_view kOverheadCategory = "overhead";

// Times farther than this from the base (about 36 years) come from corrupt records, not from a
// run: kept, they would stretch the trace past what a trace may span (trace::kMaxTraceSpanNs),
// so that our own reader would refuse the file.
constexpr TimeNs kMaxRelNs = TimeNs{1} << 60;
// The base time written: any CUPTI-to-epoch offset that makes sense is far inside this, and
// base + model time then cannot overflow.
constexpr TimeNs kMaxBaseNs = std::numeric_limits<TimeNs>::max() - (TimeNs{1} << 61);

// CUPTI marks "not applicable" stream and event ids with all ones.
constexpr std::uint32_t kInvalidId = CUPTI_SYNCHRONIZATION_INVALID_VALUE;

bool isNcclMarker(std::string_view name, std::string_view domain) {
  return domain == "NCCL" || name.starts_with("nccl");
}

// Releases, on every way out, memory CUPTI handed over with a record.
struct ReleaseAfter {
  void (*release)(void*);
  void* p;
  ReleaseAfter(void (*r)(void*), const void* owned) : release(r), p(const_cast<void*>(owned)) {}
  ReleaseAfter(const ReleaseAfter&) = delete;
  ReleaseAfter& operator=(const ReleaseAfter&) = delete;
  ~ReleaseAfter() {
    if (release != nullptr && p != nullptr) release(p);
  }
};

}  // namespace

ActivityConverter::ActivityConverter(ConverterOptions options) : options_(std::move(options)) {
  category_ids_.fill(trace::StringTable::npos);
}

std::size_t ActivityConverter::addBuffer(const std::uint8_t* buffer, std::size_t valid_size) {
  if (buffer == nullptr || valid_size == 0) return 0;
  std::size_t n = 0;
  CUpti_Activity* record = nullptr;
  // cuptiActivityGetNextRecord takes a non-const buffer but only reads it.
  auto* data = const_cast<std::uint8_t*>(buffer);
  while (cuptiActivityGetNextRecord(data, valid_size, &record) == CUPTI_SUCCESS) {
    addRecord(*record);
    ++n;
  }
  return n;
}

void ActivityConverter::addRecord(const CUpti_Activity& record) {
  ++stats_.records;
  // Each kind has one current record struct in CUDA 13's cupti_activity.h; CUPTI fills
  // buffers with exactly those.
  switch (record.kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
      addKernel(reinterpret_cast<const CUpti_ActivityKernel10&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY:
      addMemcpy(reinterpret_cast<const CUpti_ActivityMemcpy6&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMCPY2:
      addPeerMemcpy(reinterpret_cast<const CUpti_ActivityMemcpyPtoP4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MEMSET:
      addMemset(reinterpret_cast<const CUpti_ActivityMemset4&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
      addSync(reinterpret_cast<const CUpti_ActivitySynchronization2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_CUDA_EVENT:
      addCudaEvent(reinterpret_cast<const CUpti_ActivityCudaEvent2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_RUNTIME:
      addApi(reinterpret_cast<const CUpti_ActivityAPI&>(record), true);
      break;
    case CUPTI_ACTIVITY_KIND_DRIVER:
      addApi(reinterpret_cast<const CUpti_ActivityAPI&>(record), false);
      break;
    case CUPTI_ACTIVITY_KIND_MARKER:
      addMarker(reinterpret_cast<const CUpti_ActivityMarker2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_MARKER_DATA:
      addMarkerData(reinterpret_cast<const CUpti_ActivityMarkerData2&>(record));
      break;
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto& o = reinterpret_cast<const CUpti_ActivityOverhead3&>(record);
      const ReleaseAfter owned(options_.release, o.overheadData);
      addOverhead(o);
      break;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto& d = reinterpret_cast<const CUpti_ActivityDevice5&>(record);
      const ReleaseAfter owned(options_.release, d.name);
      addDevice(d);
      break;
    }
    case CUPTI_ACTIVITY_KIND_CONTEXT: {
      const auto& c = reinterpret_cast<const CUpti_ActivityContext3&>(record);
      noteContext(c.contextId, c.deviceId);
      ++stats_.ignored;
      break;
    }
    default:
      ++stats_.ignored;
      break;
  }
}

std::int32_t ActivityConverter::track(TrackKind kind, std::int64_t pid, std::int64_t tid) {
  const auto key = std::make_tuple(kind, pid, tid);
  if (auto it = track_index_.find(key); it != track_index_.end()) return it->second;
  const auto i = trace_.trackIndex(kind, pid, tid);
  track_index_.emplace(key, i);
  return i;
}

void ActivityConverter::push(std::int32_t track_index, const EventSpec& e) {
  trace_.tracks[static_cast<std::size_t>(track_index)].push(
      {e.start, std::max<TimeNs>(e.dur, 0), e.name, categoryId(e.kind), e.kind, e.correlation,
       trace::kNoBucket, trace::kNoStep, e.bytes});
  ++stats_.events;
}

NameId ActivityConverter::categoryId(EventKind kind) {
  auto& id = category_ids_[static_cast<std::size_t>(kind)];
  if (id == trace::StringTable::npos) {
    const auto cat = trace::categoryName(kind);
    id = trace_.names.intern(cat.empty() ? kOverheadCategory : cat);
  }
  return id;
}

NameId ActivityConverter::kernelName(const char* raw) {
  // CUPTI hands the same name pointer for every launch of a function: look it up by pointer
  // first (checking the text, in case a module was unloaded and the address reused), and
  // demangle each distinct name once.
  if (auto hit = kernel_name_by_ptr_.find(raw);
      hit != kernel_name_by_ptr_.end() && hit->second.first == raw) {
    return hit->second.second;
  }
  NameId id = 0;
  if (auto it = kernel_names_.find(raw); it != kernel_names_.end()) {
    id = it->second;
  } else {
    id = trace_.names.intern(demangle(raw));
    kernel_names_.emplace(raw, id);
  }
  kernel_name_by_ptr_[raw] = {raw, id};
  return id;
}

bool ActivityConverter::plausible(std::uint64_t cupti_ns) const {
  if (cupti_ns > static_cast<std::uint64_t>(std::numeric_limits<TimeNs>::max())) return false;
  TimeNs t = 0;
  if (__builtin_sub_overflow(static_cast<TimeNs>(cupti_ns), options_.base_ns, &t)) return false;
  return t >= -kMaxRelNs && t <= kMaxRelNs;
}

bool ActivityConverter::timed(std::uint64_t start, std::uint64_t end) {
  if (start == 0 && end == 0) {
    ++stats_.without_timestamps;
    return false;
  }
  if (!plausible(start) || !plausible(end)) {
    ++stats_.implausible_times;
    return false;
  }
  return true;
}

void ActivityConverter::addKernel(const CUpti_ActivityKernel10& r) {
  noteContext(r.contextId, r.deviceId);
  if (!timed(r.start, r.end)) return;
  const NameId name = kernelName(r.name != nullptr ? r.name : "<unnamed kernel>");
  push(track(TrackKind::Gpu, r.deviceId, r.streamId),
       {rel(r.start), static_cast<TimeNs>(r.end - r.start), name, EventKind::Kernel,
        static_cast<std::int64_t>(r.correlationId), trace::kNoBytes});
}

// Device-to-host, host-to-device and peer copies: the same fields in two record types.
template <typename CopyRecord>
void ActivityConverter::addCopy(const CopyRecord& r) {
  noteContext(r.contextId, r.deviceId);
  if (!timed(r.start, r.end)) return;
  // A copy names the driver call that made it; one made by a runtime call also names that call
  // (runtimeCorrelationId), which links it even when driver records are off.
  std::uint32_t correlation = r.correlationId;
  if constexpr (requires { r.runtimeCorrelationId; }) {
    if (r.runtimeCorrelationId != 0) correlation = r.runtimeCorrelationId;
  }
  push(track(TrackKind::Gpu, r.deviceId, r.streamId),
       {rel(r.start), static_cast<TimeNs>(r.end - r.start),
        trace_.names.intern(memcpyName(r.copyKind, r.srcKind, r.dstKind)), EventKind::Memcpy,
        static_cast<std::int64_t>(correlation), static_cast<std::int64_t>(r.bytes)});
}

void ActivityConverter::addMemcpy(const CUpti_ActivityMemcpy6& r) {
  addCopy(r);
}

void ActivityConverter::addPeerMemcpy(const CUpti_ActivityMemcpyPtoP4& r) {
  addCopy(r);
}

void ActivityConverter::addMemset(const CUpti_ActivityMemset4& r) {
  noteContext(r.contextId, r.deviceId);
  if (!timed(r.start, r.end)) return;
  push(track(TrackKind::Gpu, r.deviceId, r.streamId),
       {rel(r.start), static_cast<TimeNs>(r.end - r.start),
        trace_.names.intern(memsetName(r.memoryKind)), EventKind::Memset,
        static_cast<std::int64_t>(r.correlationId), static_cast<std::int64_t>(r.bytes)});
}

void ActivityConverter::addSync(const CUpti_ActivitySynchronization2& r) {
  if (!timed(r.start, r.end)) return;
  // The record names a context, not a device, and Event Sync names no stream: both are
  // resolved in finish(), once the context and CUDA event records have been seen.
  syncs_.push_back({static_cast<std::uint32_t>(r.type), r.contextId, r.streamId, r.cudaEventId,
                    r.correlationId, r.cudaEventSyncId, rel(r.start),
                    static_cast<TimeNs>(r.end - r.start)});
}

void ActivityConverter::addCudaEvent(const CUpti_ActivityCudaEvent2& r) {
  noteContext(r.contextId, r.deviceId);
  event_records_[{r.eventId, r.cudaEventSyncId}] = {r.deviceId, r.streamId};
  ++stats_.ignored;  // a point in time; used to place Event Sync records on their stream
}

void ActivityConverter::addApi(const CUpti_ActivityAPI& r, bool runtime) {
  if (!timed(r.start, r.end)) return;
  const auto key = std::make_pair(runtime, static_cast<std::uint32_t>(r.cbid));
  NameId name = 0;
  if (auto it = api_names_.find(key); it != api_names_.end()) {
    name = it->second;
  } else {
    name = trace_.names.intern(apiName(runtime ? ApiDomain::Runtime : ApiDomain::Driver, r.cbid));
    api_names_.emplace(key, name);
  }
  push(track(TrackKind::Host, r.processId, r.threadId),
       {rel(r.start), static_cast<TimeNs>(r.end - r.start), name,
        runtime ? EventKind::Runtime : EventKind::Driver,
        static_cast<std::int64_t>(r.correlationId), trace::kNoBytes});
}

void ActivityConverter::addMarker(const CUpti_ActivityMarker2& r) {
  const std::int64_t pid = r.objectId.pt.processId;
  const std::int64_t tid =
      r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? std::int64_t{r.objectId.pt.threadId} : 0;
  const std::string_view name = r.name != nullptr ? r.name : "";
  const std::string_view domain = r.domain != nullptr ? r.domain : "";
  const bool timestamped =
      (r.flags & (CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS | CUPTI_ACTIVITY_FLAG_MARKER_START |
                  CUPTI_ACTIVITY_FLAG_MARKER_END)) != 0;
  if (timestamped && !plausible(r.timestamp)) {
    ++stats_.implausible_times;
    return;
  }
  if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
    push(track(TrackKind::Host, pid, tid),
         {rel(r.timestamp), 0, trace_.names.intern(name), EventKind::UserAnnotation,
          trace::kNoCorrelation, trace::kNoBytes});
  } else if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
    marker_starts_[r.id] = {std::string(name), std::string(domain), rel(r.timestamp), pid, tid};
  } else if (r.flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
    marker_ends_[r.id] = {rel(r.timestamp)};
  } else {
    ++stats_.ignored;  // synchronisation-object markers
  }
}

void ActivityConverter::addMarkerData(const CUpti_ActivityMarkerData2& r) {
  // Only plain integer payloads can be read from the record. CUPTI 13 also hands over NVTX
  // extended payloads (kind NVTX_EXTENDED_PAYLOAD, an opaque value read through the domain's
  // schema, cuptiDomainId); they are counted, and NCCL's sizes come from the tracer's NVTX
  // callback instead (nvtx_payload.h), which does not depend on that undocumented layout.
  if (r.payloadKind == CUPTI_METRIC_VALUE_KIND_UINT64) {
    marker_bytes_[r.id] = static_cast<std::int64_t>(r.payload.metricValueUint64);
  } else if (r.payloadKind == CUPTI_METRIC_VALUE_KIND_INT64) {
    marker_bytes_[r.id] = r.payload.metricValueInt64;
  } else if (r.payloadKind == CUPTI_METRIC_VALUE_KIND_NVTX_EXTENDED_PAYLOAD) {
    ++stats_.marker_extended_payloads;
    ++stats_.ignored;
  } else {
    ++stats_.ignored;
  }
}

void ActivityConverter::addOverhead(const CUpti_ActivityOverhead3& r) {
  if (!timed(r.start, r.end)) return;
  std::int64_t pid = options_.process_id, tid = 0;
  if (r.objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS ||
      r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) {
    pid = r.objectId.pt.processId;
    if (r.objectKind == CUPTI_ACTIVITY_OBJECT_THREAD) tid = r.objectId.pt.threadId;
  }
  push(track(TrackKind::Host, pid, tid),
       {rel(r.start), static_cast<TimeNs>(r.end - r.start),
        trace_.names.intern(overheadName(r.overheadKind)), EventKind::Other,
        r.correlationId != 0 ? static_cast<std::int64_t>(r.correlationId) : trace::kNoCorrelation,
        trace::kNoBytes});
}

void ActivityConverter::addDevice(const CUpti_ActivityDevice5& r) {
  // Kineto's deviceProperties spelling, so that HTA reads it.
  std::string json = "{\"id\": ";
  trace::appendInt(json, r.id);
  json += ", \"name\": ";
  trace::appendJsonString(json, r.name != nullptr ? r.name : "");
  json += ", \"totalGlobalMem\": ";
  trace::appendInt(json, static_cast<std::int64_t>(r.globalMemorySize));
  json += ", \"computeMajor\": ";
  trace::appendInt(json, r.computeCapabilityMajor);
  json += ", \"computeMinor\": ";
  trace::appendInt(json, r.computeCapabilityMinor);
  json += ", \"maxThreadsPerBlock\": ";
  trace::appendInt(json, r.maxThreadsPerBlock);
  json += ", \"regsPerBlock\": ";
  trace::appendInt(json, r.maxRegistersPerBlock);
  json += ", \"warpSize\": ";
  trace::appendInt(json, r.numThreadsPerWarp);
  json += ", \"sharedMemPerBlock\": ";
  trace::appendInt(json, r.maxSharedMemoryPerBlock);
  json += ", \"numSms\": ";
  trace::appendInt(json, r.numMultiprocessors);
  json += '}';
  device_properties_[r.id] = std::move(json);
  ++stats_.ignored;
}

void ActivityConverter::resolveSyncs() {
  for (const auto& s : syncs_) {
    std::int64_t device = 0;
    std::int64_t stream = s.stream == kInvalidId ? -1 : std::int64_t{s.stream};
    if (auto it = context_device_.find(s.context); it != context_device_.end()) {
      device = it->second;
    }
    if (s.event != kInvalidId) {
      if (auto it = event_records_.find({s.event, s.event_sync_id}); it != event_records_.end()) {
        device = it->second.device;
        // Event Sync waits for the stream the event was recorded on.
        if (stream < 0) stream = it->second.stream;
      }
    }
    push(track(TrackKind::Gpu, device, stream),
         {s.start, s.dur, trace_.names.intern(syncName(s.type)), EventKind::Sync,
          static_cast<std::int64_t>(s.correlation), trace::kNoBytes});
  }
  syncs_.clear();
}

void ActivityConverter::addNvtxPayload(const NvtxPayloadCapture& payload) {
  ++stats_.nvtx_payloads;
  payloads_.push_back(payload);
}

void ActivityConverter::matchPayloads() {
  // A payload was copied in CUPTI's NVTX callback, inside the same NVTX call for which CUPTI
  // timed the range start, so on the same thread their times differ by the callback's own cost.
  // Both lists are walked in time order and paired within the window; the order keeps NCCL
  // calls that follow each other closely (a group of sends and receives) paired one to one.
  constexpr TimeNs kWindowNs = 20'000;
  struct Item {
    TimeNs t;
    std::uint32_t index;  // marker id, or index into payloads_
  };
  std::unordered_map<std::int64_t, std::pair<std::vector<Item>, std::vector<Item>>> by_thread;
  for (std::size_t i = 0; i < payloads_.size(); ++i) {
    const auto& p = payloads_[i];
    if (!plausible(p.timestamp)) continue;
    by_thread[std::int64_t{p.tid}].second.push_back(
        {rel(p.timestamp), static_cast<std::uint32_t>(i)});
  }
  if (by_thread.empty()) {
    payloads_.clear();
    return;
  }
  for (const auto& [id, start] : marker_starts_) {
    if (!isNcclSizedRange(start.name) || marker_bytes_.contains(id)) continue;
    if (auto t = by_thread.find(start.tid); t != by_thread.end()) {
      t->second.first.push_back({start.start, id});
    }
  }
  const auto by_time = [](const Item& a, const Item& b) { return a.t < b.t; };
  for (auto& [tid, lists] : by_thread) {
    auto& [markers, captures] = lists;
    std::sort(markers.begin(), markers.end(), by_time);
    std::sort(captures.begin(), captures.end(), by_time);
    std::size_t i = 0, j = 0;
    while (i < markers.size() && j < captures.size()) {
      const TimeNs d = captures[j].t - markers[i].t;
      if (d < -kWindowNs) {
        ++j;  // a payload of a range CUPTI did not record (or not an NCCL one)
      } else if (d > kWindowNs) {
        ++i;  // an NCCL range without a payload (NCCL before 2.19)
      } else {
        const auto& start = marker_starts_.at(markers[i].index);
        if (auto bytes = ncclMessageBytes(start.name, payloads_[captures[j].index])) {
          marker_bytes_[markers[i].index] = *bytes;
          ++stats_.nvtx_payloads_matched;
        }
        ++i;
        ++j;
      }
    }
  }
  payloads_.clear();
}

void ActivityConverter::resolveMarkers() {
  matchPayloads();
  for (auto& [id, start] : marker_starts_) {
    auto end = marker_ends_.find(id);
    if (end == marker_ends_.end()) {
      ++stats_.unmatched_markers;
      continue;
    }
    std::int64_t bytes = trace::kNoBytes;
    if (auto b = marker_bytes_.find(id);
        b != marker_bytes_.end() && isNcclMarker(start.name, start.domain)) {
      bytes = b->second;
    }
    const auto ti = track(TrackKind::Host, start.pid, start.tid);
    push(ti, {start.start, end->second.end - start.start, trace_.names.intern(start.name),
              EventKind::UserAnnotation, trace::kNoCorrelation, bytes});
    ranges_.emplace_back(ti, trace_.tracks[static_cast<std::size_t>(ti)].size() - 1);
    marker_ends_.erase(end);
  }
  stats_.unmatched_markers += marker_ends_.size();
  marker_starts_.clear();
  marker_ends_.clear();
  marker_bytes_.clear();
}

void ActivityConverter::resolveNestedDriverCalls() {
  // A driver call inside a runtime call on the same thread is that call's own work (cuLaunchKernel
  // inside cudaLaunchKernel). Whether CUPTI gives it the runtime call's correlation id or its own,
  // GPU records that name the driver call are re-pointed at the runtime call, as Kineto shows
  // them, and the driver record is dropped unless asked to keep it. Driver calls made directly
  // (Triton's cuLaunchKernel) are left alone.
  std::unordered_map<std::int64_t, std::int64_t> alias;  // driver correlation -> runtime's
  for (std::size_t ti = 0; ti < trace_.tracks.size(); ++ti) {
    auto& t = trace_.tracks[ti];
    if (t.kind != TrackKind::Host) continue;
    std::vector<std::size_t> runtime;
    for (std::size_t i = 0; i < t.size(); ++i)
      if (t.kind_of[i] == EventKind::Runtime) runtime.push_back(i);
    if (runtime.empty()) continue;
    std::sort(runtime.begin(), runtime.end(),
              [&t](std::size_t a, std::size_t b) { return t.start[a] < t.start[b]; });
    std::vector<bool> nested(t.size(), false);
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.kind_of[i] != EventKind::Driver) continue;
      // The runtime call starting last at or before this driver call is the only candidate.
      auto it = std::upper_bound(runtime.begin(), runtime.end(), t.start[i],
                                 [&t](TimeNs ts, std::size_t r) { return ts < t.start[r]; });
      if (it == runtime.begin()) continue;
      const std::size_t r = *std::prev(it);
      if (t.end(i) > t.end(r)) continue;
      nested[i] = true;
      if (t.correlation[i] != t.correlation[r]) alias.emplace(t.correlation[i], t.correlation[r]);
    }
    if (options_.keep_nested_driver_calls) continue;
    Track kept;
    kept.kind = t.kind;
    kept.pid = t.pid;
    kept.tid = t.tid;
    kept.reserve(t.size());
    std::vector<std::size_t> new_index(t.size(), std::numeric_limits<std::size_t>::max());
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (nested[i]) continue;
      new_index[i] = kept.size();
      kept.push(t.row(i));
    }
    if (kept.size() == t.size()) continue;
    stats_.events -= t.size() - kept.size();
    for (auto& [rt, ri] : ranges_)
      if (static_cast<std::size_t>(rt) == ti) ri = new_index[ri];
    t = std::move(kept);
  }
  if (alias.empty()) return;
  for (auto& t : trace_.tracks) {
    if (t.kind != TrackKind::Gpu) continue;
    for (auto& c : t.correlation) {
      if (auto it = alias.find(c); it != alias.end()) c = it->second;
    }
  }
}

void ActivityConverter::addFlows() {
  // correlation -> the launching call: a runtime call wins over a driver call of the same id.
  struct Launch {
    std::int32_t track;
    TimeNs start;
    bool runtime;
  };
  std::unordered_map<std::int64_t, Launch> launches;
  for (std::size_t ti = 0; ti < trace_.tracks.size(); ++ti) {
    const auto& t = trace_.tracks[ti];
    if (t.kind != TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const bool runtime = t.kind_of[i] == EventKind::Runtime;
      if (!runtime && t.kind_of[i] != EventKind::Driver) continue;
      const Launch l{static_cast<std::int32_t>(ti), t.start[i], runtime};
      auto [it, inserted] = launches.emplace(t.correlation[i], l);
      if (!inserted && runtime && !it->second.runtime) it->second = l;
    }
  }
  if (launches.empty()) return;
  const NameId cat = trace_.names.intern(kFlowCategory);
  for (std::size_t ti = 0; ti < trace_.tracks.size(); ++ti) {
    const auto& t = trace_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      const auto k = t.kind_of[i];
      if (k != EventKind::Kernel && k != EventKind::Memcpy && k != EventKind::Memset) continue;
      auto it = launches.find(t.correlation[i]);
      if (it == launches.end()) continue;
      trace_.flows.push_back({static_cast<std::uint64_t>(t.correlation[i]), cat, cat,
                              it->second.start, it->second.track, t.start[i],
                              static_cast<std::int32_t>(ti)});
    }
  }
}

void ActivityConverter::projectAnnotations() {
  if (!options_.project_annotations || ranges_.empty()) return;
  // Per host track: its launches sorted by start, and correlation -> GPU events.
  struct LaunchRef {
    TimeNs start;
    std::int64_t correlation;
  };
  std::unordered_map<std::int32_t, std::vector<LaunchRef>> launches;
  for (const auto& [ti, unused] : ranges_) {
    if (launches.count(ti)) continue;
    auto& v = launches[ti];
    const auto& t = trace_.tracks[static_cast<std::size_t>(ti)];
    for (std::size_t i = 0; i < t.size(); ++i) {
      if ((t.kind_of[i] == EventKind::Runtime || t.kind_of[i] == EventKind::Driver) &&
          t.correlation[i] != trace::kNoCorrelation) {
        v.push_back({t.start[i], t.correlation[i]});
      }
    }
    std::sort(v.begin(), v.end(),
              [](const LaunchRef& a, const LaunchRef& b) { return a.start < b.start; });
  }
  std::unordered_map<std::int64_t, std::vector<std::pair<std::int32_t, std::size_t>>> gpu_of;
  for (std::size_t ti = 0; ti < trace_.tracks.size(); ++ti) {
    const auto& t = trace_.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (trace::occupiesGpu(t.kind_of[i]) && t.correlation[i] != trace::kNoCorrelation) {
        gpu_of[t.correlation[i]].emplace_back(static_cast<std::int32_t>(ti), i);
      }
    }
  }
  struct Span {
    TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  };
  struct Projection {
    std::int32_t track;
    TimeNs start, dur;
    NameId name;
    std::int64_t bytes;
  };
  std::vector<Projection> out;
  for (const auto& [ti, ri] : ranges_) {
    if (ri == std::numeric_limits<std::size_t>::max()) continue;
    const auto& host = trace_.tracks[static_cast<std::size_t>(ti)];
    const TimeNs lo = host.start[ri], hi = host.end(ri);
    const auto& v = launches[ti];
    auto it = std::lower_bound(v.begin(), v.end(), lo,
                               [](const LaunchRef& a, TimeNs t) { return a.start < t; });
    std::map<std::int32_t, Span> spans;
    for (; it != v.end() && it->start < hi; ++it) {
      auto g = gpu_of.find(it->correlation);
      if (g == gpu_of.end()) continue;
      for (const auto& [gt, gi] : g->second) {
        auto& track_events = trace_.tracks[static_cast<std::size_t>(gt)];
        auto& s = spans[gt];
        s.lo = std::min(s.lo, track_events.start[gi]);
        s.hi = std::max(s.hi, track_events.end(gi));
        // An NCCL range's message size sizes the collective kernel it launched.
        if (host.bytes[ri] >= 0 && track_events.kind_of[gi] == EventKind::Kernel &&
            track_events.bytes[gi] < 0 && trace_.names[track_events.name[gi]].starts_with("nccl")) {
          track_events.bytes[gi] = host.bytes[ri];
        }
      }
    }
    for (const auto& [gt, s] : spans)
      out.push_back({gt, s.lo, s.hi - s.lo, host.name[ri], host.bytes[ri]});
  }
  for (const auto& p : out) {
    push(p.track,
         {p.start, p.dur, p.name, EventKind::GpuAnnotation, trace::kNoCorrelation, p.bytes});
  }
}

trace::RankTrace ActivityConverter::finish(const FinishOptions& finish_options) {
  resolveSyncs();
  resolveMarkers();
  resolveNestedDriverCalls();
  addFlows();
  projectAnnotations();

  trace::RankTrace out = std::move(trace_);
  out.rank = finish_options.rank;
  out.world_size = finish_options.world_size;
  out.world_size_declared = finish_options.world_size_declared;
  out.distributed_backend = finish_options.distributed_backend;
  TimeNs base = 0;
  if (__builtin_add_overflow(options_.base_ns, options_.epoch_offset_ns, &base)) {
    base = options_.epoch_offset_ns > 0 ? kMaxBaseNs : -kMaxBaseNs;
  }
  out.base_time_ns = std::clamp(base, -kMaxBaseNs, kMaxBaseNs);
  if (!device_properties_.empty()) {
    std::string json = "[";
    for (const auto& [id, props] : device_properties_) {
      if (json.size() > 1) json += ", ";
      json += props;
    }
    json += ']';
    out.device_properties_json = std::move(json);
  }
  for (const auto& t : out.tracks) {
    if (t.kind == TrackKind::Gpu) {
      out.process_names.emplace(t.pid, "GPU " + std::to_string(t.pid));
      out.thread_names.emplace(
          std::make_pair(t.pid, t.tid),
          t.tid < 0 ? std::string("no stream") : "stream " + std::to_string(t.tid));
    } else if (!options_.process_name.empty() && t.pid == options_.process_id) {
      out.process_names.emplace(t.pid, options_.process_name);
    }
  }
  auto& b = out.ddpscope;
  b.present = true;
  b.version = 1;
  b.source = "cuda";
  b.incomplete = finish_options.incomplete;
  b.dropped_records = static_cast<std::int64_t>(stats_.droppedRecords());
  b.config = finish_options.config;
  b.config.emplace_back("tracer", "\"cupti\"");
  if (stats_.marker_extended_payloads > 0) {
    b.config.emplace_back("cupti_marker_extended_payloads",
                          std::to_string(stats_.marker_extended_payloads));
  }
  if (stats_.nvtx_payloads > 0) {
    b.config.emplace_back("nvtx_payloads", std::to_string(stats_.nvtx_payloads));
    b.config.emplace_back("nvtx_payloads_sized", std::to_string(stats_.nvtx_payloads_matched));
  }
  b.clock.emplace_back("timestamps", "\"cupti\"");
  b.clock.emplace_back("cupti_to_epoch_ns", std::to_string(options_.epoch_offset_ns));
  trace::canonicalize(out);

  trace_ = trace::RankTrace{};
  track_index_.clear();
  kernel_names_.clear();
  kernel_name_by_ptr_.clear();
  category_ids_.fill(trace::StringTable::npos);
  api_names_.clear();
  ranges_.clear();
  device_properties_.clear();
  return out;
}

}  // namespace ddpscope::cupti
