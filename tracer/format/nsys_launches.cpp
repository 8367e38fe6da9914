// CUDA runtime and driver calls of an Nsight Systems export (CUPTI_ACTIVITY_KIND_RUNTIME), kept
// on their threads' host tracks, and the launch -> GPU work flows their correlation ids make.
#include "nsys_internal.h"

namespace ddpscope::trace {

namespace nsys {

namespace {

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel": Nsight adds the API version to the name.
std::string_view apiName(std::string_view s) {
  const auto at = s.rfind("_v");
  if (at == std::string_view::npos || at + 2 >= s.size()) return s;
  for (std::size_t i = at + 2; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') return s;
  }
  return s.substr(0, at);
}

}  // namespace

void readRuntimeCalls(ExportReader& r) {
  static constexpr char kTable[] = "CUPTI_ACTIVITY_KIND_RUNTIME";
  if (!r.has(kTable)) return;
  const auto missing = r.readRows(
      kTable,
      {{"start", true},
       {"end", true},
       {"globalTid", true},
       {"correlationId", false},
       {"nameId", false}},
      [&](sqlite3_stmt* st) {
        NsysApiRow row;
        row.start = intOr(st, 0);
        row.end = intOr(st, 1);
        row.global_tid = intOr(st, 2);
        row.correlation = intOr(st, 3);
        row.name_id = intOr(st, 4);
        if (row.start == kNsysNone || row.end == kNsysNone || row.global_tid == kNsysNone) {
          r.mapper.countIncompleteRow();
          return;
        }
        r.mapper.addApi(row);
      });
  if (!missing.empty()) {
    r.mapper.addNote("the table CUPTI_ACTIVITY_KIND_RUNTIME lacks the column(s) " +
                     joined(missing) + ": CUDA calls were not read");
  }
}

}  // namespace nsys

void NsysRowMapper::addApi(const NsysApiRow& row) {
  if (leaveOut(nsys::globalPidOfTid(row.global_tid))) return;
  Process& p = process(nsys::globalPidOfTid(row.global_tid));
  TimeNs t = 0, dur = 0;
  if (!p.times(row.start, row.end, capture_start_, t, dur)) return;
  ++p.host_rows;
  EventRow e;
  e.start = t;
  e.dur = dur;
  e.correlation = row.correlation == kNsysNone ? kNoCorrelation : row.correlation;
  NameId name = StringTable::npos;
  if (auto it = p.api_names.find(row.name_id); it != p.api_names.end()) {
    name = it->second;
  } else {
    const auto s = nsys::apiName(text(row.name_id, p.missing_strings));
    name = p.trace.names.intern(s.empty() ? std::string_view("<unnamed CUDA call>") : s);
    p.api_names.emplace(row.name_id, name);
  }
  e.name = name;
  // The runtime API is cuda*; the driver API is cu* (cuLaunchKernel, ...).
  e.kind = p.trace.names[name].starts_with("cuda") ? EventKind::Runtime : EventKind::Driver;
  e.cat = p.cat(e.kind);
  p.hostTrack(row.global_tid).push(e);
}

void NsysRowMapper::Process::linkLaunches() {
  // Launch -> GPU work: the CUDA call and the activity share a correlation id.
  std::unordered_map<std::int64_t, std::pair<std::int32_t, TimeNs>> launch;
  for (std::size_t ti = 0; ti < trace.tracks.size(); ++ti) {
    const auto& t = trace.tracks[ti];
    if (t.kind != TrackKind::Host) continue;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (t.correlation[k] != kNoCorrelation &&
          (t.kind_of[k] == EventKind::Runtime || t.kind_of[k] == EventKind::Driver))
        launch.emplace(t.correlation[k], std::make_pair(static_cast<std::int32_t>(ti), t.start[k]));
    }
  }
  if (launch.empty()) return;
  const NameId ac2g = trace.names.intern("ac2g");
  for (std::size_t ti = 0; ti < trace.tracks.size(); ++ti) {
    const auto& t = trace.tracks[ti];
    if (t.kind != TrackKind::Gpu) continue;
    for (std::size_t k = 0; k < t.size(); ++k) {
      if (t.correlation[k] == kNoCorrelation || t.kind_of[k] == EventKind::Sync) continue;
      const auto it = launch.find(t.correlation[k]);
      if (it == launch.end()) continue;
      trace.flows.push_back({static_cast<std::uint64_t>(t.correlation[k]), ac2g, ac2g,
                             it->second.second, it->second.first, t.start[k],
                             static_cast<std::int32_t>(ti)});
    }
  }
}

}  // namespace ddpscope::trace
