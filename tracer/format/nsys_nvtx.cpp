// NVTX ranges of an Nsight Systems export (NVTX_EVENTS): kept as user annotations on their
// threads' host tracks; marks and unfinished ranges are counted, not kept. Extended payloads
// (binaryData: NCCL's message sizes, for one) are counted and not decoded: how an event names
// the schema of its payload is not part of the export's documented schema.
#include "nsys_internal.h"

namespace ddpscope::trace {

namespace nsys {

namespace {

// ENUM_NSYS_EVENT_TYPE: the NVTX ranges (push/pop and start/end, C and text-file variants) and
// marks.
bool isNvtxRange(std::int64_t type) {
  return type == 59 || type == 60 || type == 70 || type == 71;
}
bool isNvtxMark(std::int64_t type) {
  return type == 34 || type == 65;
}

}  // namespace

void readNvtxRanges(ExportReader& r) {
  if (!r.has("NVTX_EVENTS")) return;
  const auto missing = r.readRows(
      "NVTX_EVENTS",
      {{"start", true},
       {"end", false},
       {"eventType", true},
       {"globalTid", true},
       {"text", false},
       {"textId", false},
       {"binaryData", false}},
      [&](sqlite3_stmt* st) {
        NsysNvtxRow row;
        row.start = intOr(st, 0);
        row.end = intOr(st, 1);
        row.event_type = intOr(st, 2);
        row.global_tid = intOr(st, 3);
        if (row.start == kNsysNone || row.event_type == kNsysNone || row.global_tid == kNsysNone) {
          r.mapper.countIncompleteRow();
          return;
        }
        if (const auto* t = sqlite3_column_text(st, 4)) {
          row.text = std::string_view(reinterpret_cast<const char*>(t),
                                      static_cast<std::size_t>(sqlite3_column_bytes(st, 4)));
        }
        row.text_id = intOr(st, 5);
        row.binary_payload =
            sqlite3_column_type(st, 6) != SQLITE_NULL && sqlite3_column_bytes(st, 6) > 0;
        r.mapper.addNvtx(row);
      });
  if (!missing.empty()) {
    r.mapper.addNote("the table NVTX_EVENTS lacks the column(s) " + joined(missing) +
                     ": NVTX ranges (and steps) were not read");
  }
}

}  // namespace nsys

void NsysRowMapper::addNvtx(const NsysNvtxRow& row) {
  if (nsys::isNvtxMark(row.event_type)) {
    ++marks_;
    return;
  }
  if (!nsys::isNvtxRange(row.event_type)) return;  // domains, categories, names of threads
  if (leaveOut(nsys::globalPidOfTid(row.global_tid))) return;
  Process& p = process(nsys::globalPidOfTid(row.global_tid));
  if (row.end == kNsysNone) {
    ++p.open_ranges;
    return;
  }
  TimeNs t = 0, dur = 0;
  if (!p.times(row.start, row.end, capture_start_, t, dur)) return;
  ++p.host_rows;
  EventRow e;
  e.start = t;
  e.dur = dur;
  e.kind = EventKind::UserAnnotation;
  e.cat = p.cat(e.kind);
  std::string_view s;
  if (row.text) {
    s = *row.text;
  } else if (row.text_id != kNsysNone) {
    if (auto it = p.names.find(row.text_id); it != p.names.end()) {
      e.name = it->second;
    } else {
      s = text(row.text_id, p.missing_strings);
      if (!s.empty()) {
        e.name = p.trace.names.intern(s);
        p.names.emplace(row.text_id, e.name);
        s = {};
      } else {
        s = "<unnamed range>";
      }
    }
  } else {
    s = "<unnamed range>";
  }
  if (!s.empty()) e.name = p.trace.names.intern(s);
  p.hostTrack(row.global_tid).push(e);
  if (row.binary_payload) ++p.nvtx_payloads;
}

}  // namespace ddpscope::trace
