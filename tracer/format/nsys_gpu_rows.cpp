// GPU activity of an Nsight Systems export: the kernel, memcpy, memset and synchronisation rows
// (CUPTI_ACTIVITY_KIND_*), read from the export and mapped onto (device, stream) tracks.
#include "nsys_internal.h"

namespace ddpscope::trace {

namespace nsys {

namespace {

// CUDA memcpy kinds (ENUM_CUDA_MEMCPY_OPER) in the short form Kineto names copies with.
std::string_view copyKindName(std::int64_t k) {
  static constexpr std::string_view names[] = {"Unknown", "HtoD", "DtoH", "HtoA", "AtoH",
                                               "AtoA",    "AtoD", "DtoA", "DtoD", "HtoH",
                                               "PtoP",    "HtoD", "DtoH", "DtoD"};
  return k >= 0 && k < 14 ? names[k] : "Unknown";
}
// Memory kinds (ENUM_CUDA_MEM_KIND).
std::string_view memKindName(std::int64_t k) {
  static constexpr std::string_view names[] = {
      "Pageable", "Pinned", "Device", "Array", "Managed", "Device Static", "Managed Static"};
  return k >= 0 && k < 7 ? names[k] : "Unknown";
}

// The columns of a GPU activity table: those every kind has, then the kind's own.
std::vector<Column> gpuColumns(NsysGpuRow::Table kind) {
  using T = NsysGpuRow::Table;
  // A synchronisation's device is the waiting thread's, which it may not say.
  std::vector<Column> cols = {
      {"start", true},      {"end", true},      {"deviceId", kind != T::Sync},
      {"contextId", false}, {"streamId", true}, {"correlationId", false},
      {"globalPid", true}};
  switch (kind) {
    case T::Kernel:
      cols.insert(cols.end(),
                  {{"demangledName", false}, {"shortName", false}, {"mangledName", false}});
      break;
    case T::Memcpy:
      cols.insert(cols.end(),
                  {{"bytes", false}, {"copyKind", false}, {"srcKind", false}, {"dstKind", false}});
      break;
    case T::Memset:
      cols.insert(cols.end(), {{"bytes", false}, {"memKind", false}});
      break;
    case T::Sync:
      cols.insert(cols.end(), {{"syncType", false}});
      break;
  }
  return cols;
}

void readGpuTable(ExportReader& r, const char* table, NsysGpuRow::Table kind, bool required) {
  if (!r.has(table)) return;
  const auto missing = r.readRows(table, gpuColumns(kind), [&](sqlite3_stmt* st) {
    NsysGpuRow row;
    row.table = kind;
    row.start = intOr(st, 0);
    row.end = intOr(st, 1);
    row.device = intOr(st, 2);
    row.context = intOr(st, 3);
    row.stream = intOr(st, 4);
    row.correlation = intOr(st, 5);
    row.global_pid = intOr(st, 6);
    if (row.start == kNsysNone || row.end == kNsysNone || row.stream == kNsysNone ||
        row.global_pid == kNsysNone ||
        (kind != NsysGpuRow::Table::Sync && row.device == kNsysNone)) {
      r.mapper.countIncompleteRow();
      return;
    }
    switch (kind) {
      case NsysGpuRow::Table::Kernel:
        row.demangled = intOr(st, 7);
        row.short_name = intOr(st, 8);
        row.mangled = intOr(st, 9);
        break;
      case NsysGpuRow::Table::Memcpy:
        row.bytes = intOr(st, 7);
        row.copy_kind = intOr(st, 8);
        row.src_kind = intOr(st, 9);
        row.dst_kind = intOr(st, 10);
        break;
      case NsysGpuRow::Table::Memset:
        row.bytes = intOr(st, 7);
        row.mem_kind = intOr(st, 8);
        break;
      case NsysGpuRow::Table::Sync:
        row.sync_type = intOr(st, 7);
        if (row.device == kNsysNone) row.device = 0;
        break;
    }
    r.mapper.addGpu(row);
  });
  if (missing.empty()) return;
  if (required) {
    throw TraceError(r.db.path(), kNoOffset,
                     "its table " + std::string(table) + " lacks the column(s) " + joined(missing) +
                         " every Nsight Systems export has: the file is damaged or not an "
                         "export of `nsys export --type sqlite`");
  }
  r.mapper.addNote("the table " + std::string(table) + " lacks the column(s) " + joined(missing) +
                   ": its rows were not read");
}

// Synchronisation types (ENUM_CUPTI_SYNC_TYPE), as Kineto names them.
std::string_view syncName(std::int64_t t) {
  switch (t) {
    case 1:
      return "Event Sync";
    case 2:
      return "Stream Wait Event";
    case 3:
      return "Stream Sync";
    case 4:
      return "Context Sync";
    default:
      return "Unknown Sync";
  }
}

}  // namespace

void readGpuTables(ExportReader& r) {
  readGpuTable(r, "CUPTI_ACTIVITY_KIND_KERNEL", NsysGpuRow::Table::Kernel, true);
  readGpuTable(r, "CUPTI_ACTIVITY_KIND_MEMCPY", NsysGpuRow::Table::Memcpy, true);
  readGpuTable(r, "CUPTI_ACTIVITY_KIND_MEMSET", NsysGpuRow::Table::Memset, true);
  readGpuTable(r, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", NsysGpuRow::Table::Sync, false);
  r.mapper.gpuRowsDone();
}

}  // namespace nsys

void NsysRowMapper::addGpu(const NsysGpuRow& row) {
  Process& p = process(row.global_pid);
  TimeNs t = 0, dur = 0;
  if (!p.times(row.start, row.end, capture_start_, t, dur)) return;
  if (row.table != NsysGpuRow::Table::Sync) {
    ++p.gpu_rows;
    if (row.context != kNsysNone) p.context_device.emplace(row.context, row.device);
  }
  EventRow e;
  e.start = t;
  e.dur = dur;
  e.correlation = row.correlation == kNsysNone ? kNoCorrelation : row.correlation;
  switch (row.table) {
    case NsysGpuRow::Table::Kernel: {
      e.kind = EventKind::Kernel;
      // The demangled name (what Kineto shows and classification reads), else the short name,
      // else the mangled one.
      NameId name = StringTable::npos;
      for (const auto id : {row.demangled, row.short_name, row.mangled}) {
        if (id == kNsysNone) continue;
        if (auto it = p.names.find(id); it != p.names.end()) {
          name = it->second;
          break;
        }
        const auto s = text(id, p.missing_strings);
        if (s.empty()) continue;
        name = p.trace.names.intern(s);
        p.names.emplace(id, name);
        break;
      }
      e.name = name != StringTable::npos ? name : p.trace.names.intern("<unnamed kernel>");
      // A short name of the demangled name's own string id is that name.
      if (row.short_name != kNsysNone && row.short_name != row.demangled)
        keepShortName(p, e.name, row.short_name);
      break;
    }
    case NsysGpuRow::Table::Memcpy: {
      e.kind = EventKind::Memcpy;
      std::string n = "Memcpy ";
      n += nsys::copyKindName(row.copy_kind);
      n += " (";
      n += nsys::memKindName(row.src_kind);
      n += " -> ";
      n += nsys::memKindName(row.dst_kind);
      n += ')';
      e.name = p.trace.names.intern(n);
      e.bytes = row.bytes >= 0 ? row.bytes : kNoBytes;
      break;
    }
    case NsysGpuRow::Table::Memset: {
      e.kind = EventKind::Memset;
      e.name =
          p.trace.names.intern("Memset (" + std::string(nsys::memKindName(row.mem_kind)) + ")");
      e.bytes = row.bytes >= 0 ? row.bytes : kNoBytes;
      break;
    }
    case NsysGpuRow::Table::Sync: {
      // Placed in finish(): its row's device is the calling thread's, the stream's comes from
      // the context.
      NsysGpuRow s = row;
      s.start = t;
      s.end = t + dur;
      p.syncs.push_back(s);
      return;
    }
  }
  e.cat = p.cat(e.kind);
  p.trace.tracks[static_cast<std::size_t>(p.track(TrackKind::Gpu, row.device, row.stream))].push(e);
}

void NsysRowMapper::keepShortName(Process& p, NameId name, std::int64_t short_id) {
  // The first row of a kernel name that gives a short name decides it; a short name that is not
  // in StringIds is not counted again (the displayed name was).
  auto& seen = p.short_name_seen;
  if (name >= seen.size()) seen.resize(p.trace.names.size(), false);
  if (seen[name]) return;
  seen[name] = true;
  if (const auto it = strings_.find(short_id); it != strings_.end())
    p.trace.addKernelShortName(name, it->second);
}

void NsysRowMapper::Process::placeSyncs() {
  // On the stream's device, which the context tells (the row's own device is the one the
  // waiting thread had current).
  for (const auto& s : syncs) {
    const auto ctx = s.context != kNsysNone ? context_device.find(s.context) : context_device.end();
    const std::int64_t device = ctx != context_device.end() ? ctx->second : s.device;
    EventRow e;
    e.start = s.start;
    e.dur = s.end - s.start;
    e.kind = EventKind::Sync;
    e.cat = cat(e.kind);
    e.name = trace.names.intern(nsys::syncName(s.sync_type));
    e.correlation = s.correlation == kNsysNone ? kNoCorrelation : s.correlation;
    trace.tracks[static_cast<std::size_t>(track(TrackKind::Gpu, device, s.stream))].push(e);
  }
}

}  // namespace ddpscope::trace
