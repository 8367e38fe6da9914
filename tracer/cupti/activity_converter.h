#pragma once
// CUPTI activity records -> the trace model (docs/FORMAT.md). Plain C++: it reads
// records and calls no CUDA runtime or driver function, so tests drive it with hand-built
// buffers on machines without a GPU.

#include <cupti_activity.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

#include "nvtx_payload.h"
#include "tracer/format/trace_model.h"

namespace ddpscope::cupti {

struct ConverterOptions {
  // The CUPTI timestamp that becomes model time 0 (CUPTI times are ns).
  std::int64_t base_ns = 0;
  // Absolute time (ns since the Unix epoch) = CUPTI time + epoch_offset_ns; recorded as the
  // trace's base_time_ns so that ranks line up.
  std::int64_t epoch_offset_ns = 0;
  // Host pid for records that name no process (device-level overhead records).
  std::int64_t process_id = 0;
  std::string process_name;  // "" -> no process_name metadata for the host pid
  // Project host annotation ranges onto the streams their launches ran on
  // (gpu_user_annotation), as Kineto does.
  bool project_annotations = true;
  // Driver API records inside a runtime call on the same thread are that call's own driver
  // calls; dropped unless kept here (Triton's direct cuLaunchKernel stays either way).
  bool keep_nested_driver_calls = false;
  // Records straight from CUPTI: what CUPTI allocated for the client (an overhead record's
  // overheadData, a device record's name; cupti_activity.h) is handed here once converted.
  // The live tracer passes std::free; null (hand-built records) keeps it.
  void (*release)(void*) = nullptr;
};

struct ConverterStats {
  std::uint64_t records = 0;                // records handed to the converter
  std::uint64_t events = 0;                 // trace events made so far (before finish)
  std::uint64_t ignored = 0;                // records of kinds that make no event
  std::uint64_t without_timestamps = 0;     // GPU records CUPTI could not time (kept: none)
  std::uint64_t implausible_times = 0;      // records timed decades away from the base (kept: none)
  std::uint64_t unmatched_markers = 0;      // NVTX range starts/ends without their other half
  std::uint64_t nvtx_payloads = 0;          // extended payloads the tracer captured
  std::uint64_t nvtx_payloads_matched = 0;  // ... matched to their NCCL range
  std::uint64_t marker_extended_payloads = 0;  // CUPTI marker data holding an extended payload
  std::uint64_t dropped_by_cupti = 0;          // from cuptiActivityGetNumDroppedRecords
  std::uint64_t dropped_by_tracer = 0;         // lost to the buffer-memory cap or conversion errors
  // What the trace's "dropped_records" says: records the tracer could not keep.
  std::uint64_t droppedRecords() const {
    return dropped_by_cupti + dropped_by_tracer + without_timestamps + implausible_times;
  }
};

struct FinishOptions {
  std::int32_t rank = 0;
  std::int32_t world_size = 1;
  bool world_size_declared = true;  // false: a guess (no launcher variable gave it)
  bool incomplete = false;          // the traced program did not reach a normal end
  std::string distributed_backend;
  // Extra "config" entries of the ddpscope block: key -> raw JSON value.
  std::vector<std::pair<std::string, std::string>> config;
};

class ActivityConverter {
 public:
  explicit ActivityConverter(ConverterOptions options = {});

  // Converts every record of a completed CUPTI buffer. The buffer is walked with
  // cuptiActivityGetNextRecord, which only reads the buffer: it needs no GPU and no driver
  // (checked on a machine without either), so tests use it on hand-built buffers.
  // Returns the number of records walked.
  std::size_t addBuffer(const std::uint8_t* buffer, std::size_t valid_size);
  void addRecord(const CUpti_Activity& record);
  // An NVTX extended payload the live tracer copied in its NVTX callback. finish() gives it to
  // the NCCL range CUPTI recorded on the same thread at the same time, and the range and the
  // kernel it launched get the message size it holds.
  void addNvtxPayload(const NvtxPayloadCapture& payload);
  void addDroppedByCupti(std::uint64_t n) { stats_.dropped_by_cupti += n; }
  void addDroppedByTracer(std::uint64_t n) { stats_.dropped_by_tracer += n; }

  const ConverterStats& stats() const { return stats_; }
  const ConverterOptions& options() const { return options_; }

  // Resolves what needs every record (synchronisation devices, NVTX range pairs, launch ->
  // kernel flows, annotation projection), fills in metadata and the ddpscope block (source
  // "cuda") and returns the trace in canonical order (times relative to options.base_ns). The
  // events are handed over (the converter can be reused); stats keep counting.
  trace::RankTrace finish(const FinishOptions& finish_options = {});

 private:
  struct PendingSync {
    std::uint32_t type, context, stream, event, correlation;
    std::uint64_t event_sync_id;
    trace::TimeNs start, dur;
  };
  struct EventRecordPlace {
    std::uint32_t device, stream;
  };
  struct MarkerStart {
    std::string name;
    std::string domain;
    trace::TimeNs start;
    std::int64_t pid, tid;
  };
  struct MarkerEnd {
    trace::TimeNs end;
  };
  struct EventSpec {
    trace::TimeNs start = 0;
    trace::TimeNs dur = 0;
    trace::NameId name = 0;
    trace::EventKind kind = trace::EventKind::Other;
    std::int64_t correlation = trace::kNoCorrelation;
    std::int64_t bytes = trace::kNoBytes;
  };

  // Model time of a CUPTI timestamp (wrapping, never overflowing: only exact for plausible ones).
  trace::TimeNs rel(std::uint64_t cupti_ns) const {
    return static_cast<trace::TimeNs>(cupti_ns - static_cast<std::uint64_t>(options_.base_ns));
  }
  // Within kMaxRelNs of the base: anything farther is a corrupt record, not activity.
  bool plausible(std::uint64_t cupti_ns) const;
  std::int32_t track(trace::TrackKind kind, std::int64_t pid, std::int64_t tid);
  void push(std::int32_t track_index, const EventSpec& e);
  bool timed(std::uint64_t start, std::uint64_t end);
  trace::NameId categoryId(trace::EventKind kind);
  trace::NameId kernelName(const char* raw);
  void noteContext(std::uint32_t context, std::uint32_t device) {
    context_device_[context] = device;
  }

  void addKernel(const CUpti_ActivityKernel10& r);
  void addMemcpy(const CUpti_ActivityMemcpy6& r);
  void addPeerMemcpy(const CUpti_ActivityMemcpyPtoP4& r);
  template <typename CopyRecord>
  void addCopy(const CopyRecord& r);
  void addMemset(const CUpti_ActivityMemset4& r);
  void addSync(const CUpti_ActivitySynchronization2& r);
  void addCudaEvent(const CUpti_ActivityCudaEvent2& r);
  void addApi(const CUpti_ActivityAPI& r, bool runtime);
  void addMarker(const CUpti_ActivityMarker2& r);
  void addMarkerData(const CUpti_ActivityMarkerData2& r);
  void addOverhead(const CUpti_ActivityOverhead3& r);
  void addDevice(const CUpti_ActivityDevice5& r);

  void resolveSyncs();
  void resolveMarkers();
  void matchPayloads();
  void resolveNestedDriverCalls();
  void addFlows();
  void projectAnnotations();

  ConverterOptions options_;
  ConverterStats stats_;
  trace::RankTrace trace_;
  std::map<std::tuple<trace::TrackKind, std::int64_t, std::int64_t>, std::int32_t> track_index_;
  std::unordered_map<std::string, trace::NameId> kernel_names_;
  // name pointer -> (its text when cached, id)
  std::unordered_map<const char*, std::pair<std::string, trace::NameId>> kernel_name_by_ptr_;
  std::array<trace::NameId, static_cast<std::size_t>(trace::EventKind::Other) + 1> category_ids_;
  std::map<std::pair<bool, std::uint32_t>, trace::NameId> api_names_;
  std::unordered_map<std::uint32_t, std::uint32_t> context_device_;
  std::map<std::pair<std::uint32_t, std::uint64_t>, EventRecordPlace> event_records_;
  std::vector<PendingSync> syncs_;
  std::unordered_map<std::uint32_t, MarkerStart> marker_starts_;
  std::unordered_map<std::uint32_t, MarkerEnd> marker_ends_;
  std::unordered_map<std::uint32_t, std::int64_t> marker_bytes_;
  std::vector<NvtxPayloadCapture> payloads_;
  // Host annotation ranges made by resolveMarkers: (track, index) for the projection.
  std::vector<std::pair<std::int32_t, std::size_t>> ranges_;
  std::map<std::uint32_t, std::string> device_properties_;  // id -> JSON object
};

}  // namespace ddpscope::cupti
