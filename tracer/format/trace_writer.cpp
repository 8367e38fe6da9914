#include "trace_writer.h"

#include "file_io.h"
#include "json_text.h"

namespace ddpscope::trace {

namespace {

void appendKeyString(std::string& out, const char* key, std::string_view value) {
  out += '"';
  out += key;
  out += "\": ";
  appendJsonString(out, value);
}

void appendKeyInt(std::string& out, const char* key, std::int64_t value) {
  out += '"';
  out += key;
  out += "\": ";
  appendInt(out, value);
}

void appendRawObject(std::string& out, const std::vector<std::pair<std::string, std::string>>& kv) {
  out += '{';
  bool first = true;
  for (const auto& [k, v] : kv) {
    if (!first) out += ", ";
    first = false;
    appendJsonString(out, k);
    out += ": ";
    out += v.empty() ? std::string_view("null") : std::string_view(v);
  }
  out += '}';
}

void appendDdpscopeBlock(std::string& out, const DdpscopeBlock& b) {
  out += "  \"ddpscope\": {";
  appendKeyInt(out, "version", b.version);
  out += ", ";
  appendKeyString(out, "source", b.source.empty() ? "imported" : b.source);
  out += ", \"incomplete\": ";
  out += b.incomplete ? "true" : "false";
  out += ", ";
  appendKeyInt(out, "dropped_records", b.dropped_records);
  out += ",\n    \"config\": ";
  appendRawObject(out, b.config);
  out += ",\n    \"clock\": ";
  appendRawObject(out, b.clock);
  out += ",\n    \"buckets\": [";
  for (std::size_t i = 0; i < b.buckets.size(); ++i) {
    const auto& bucket = b.buckets[i];
    out += i == 0 ? "\n      {" : ",\n      {";
    appendKeyInt(out, "id", bucket.id);
    out += ", ";
    appendKeyInt(out, "bytes", bucket.bytes);
    out += ", ";
    appendKeyString(out, "dtype", bucket.dtype);
    out += ", \"params\": [";
    for (std::size_t p = 0; p < bucket.params.size(); ++p) {
      if (p > 0) out += ", ";
      out += '{';
      appendKeyString(out, "name", bucket.params[p].name);
      out += ", ";
      appendKeyInt(out, "bytes", bucket.params[p].bytes);
      out += '}';
    }
    out += "]}";
  }
  out += b.buckets.empty() ? "]" : "\n    ]";
  out += "},\n";
}

// A collective's arguments under the names PyTorch's profiler gives them; only those known.
template <typename Sep>
void appendCollectiveArgs(std::string& out, const CollectiveArgs& c, Sep& sep) {
  const std::pair<const char*, const std::string*> texts[] = {
      {"Collective name", &c.name},
      {"Process Group Name", &c.group},
      {"Process Group Description", &c.group_desc},
      {"Process Group Ranks", &c.group_ranks}};
  for (const auto& [key, value] : texts) {
    if (value->empty()) continue;
    sep();
    appendKeyString(out, key, *value);
  }
  const std::pair<const char*, std::int64_t> numbers[] = {{"Seq", c.seq},
                                                          {"In msg nelems", c.in_nelems},
                                                          {"Out msg nelems", c.out_nelems},
                                                          {"Group size", c.group_size}};
  for (const auto& [key, value] : numbers) {
    if (value < 0) continue;
    sep();
    appendKeyInt(out, key, value);
  }
  if (!c.dtype.empty()) {
    sep();
    appendKeyString(out, "dtype", c.dtype);
  }
}

void appendEvent(std::string& out, const RankTrace& trace, const Track& t, std::size_t i) {
  out += ",\n  {\"ph\": \"X\", ";
  appendKeyString(out, "cat", trace.names[t.category(i)]);
  out += ", ";
  appendKeyString(out, "name", trace.names[t.name[i]]);
  out += ", ";
  appendKeyInt(out, "pid", t.pid);
  out += ", ";
  appendKeyInt(out, "tid", t.tid);
  out += ", \"ts\": ";
  appendMicros(out, t.start[i]);
  out += ", \"dur\": ";
  appendMicros(out, t.dur[i]);
  const bool gpu = t.kind == TrackKind::Gpu;
  const bool any_args = gpu || t.correlation[i] != kNoCorrelation || t.bucket[i] != kNoBucket ||
                        t.step[i] != kNoStep || t.bytes[i] != kNoBytes;
  if (any_args) {
    out += ", \"args\": {";
    bool first = true;
    auto sep = [&] {
      if (!first) out += ", ";
      first = false;
    };
    if (gpu) {
      sep();
      appendKeyInt(out, "device", t.pid);
      sep();
      appendKeyInt(out, "stream", t.tid);
    }
    if (t.correlation[i] != kNoCorrelation) {
      sep();
      appendKeyInt(out, "correlation", t.correlation[i]);
    }
    if (t.bucket[i] != kNoBucket) {
      sep();
      appendKeyInt(out, "bucket", t.bucket[i]);
    }
    if (t.step[i] != kNoStep) {
      sep();
      appendKeyInt(out, "step", t.step[i]);
    }
    if (t.bytes[i] != kNoBytes) {
      sep();
      appendKeyInt(out, "bytes", t.bytes[i]);
    }
    if (t.kind_of[i] == EventKind::Kernel && !trace.kernel_short_names.empty()) {
      if (const auto short_name = trace.kernelShortName(t.name[i]); !short_name.empty()) {
        sep();
        appendKeyString(out, "short name", short_name);
      }
    }
    if (const CollectiveArgs* c = gpu ? trace.collectiveArgs(t.correlation[i]) : nullptr) {
      appendCollectiveArgs(out, *c, sep);
    }
    out += '}';
  }
  out += '}';
}

void appendFlowEnd(std::string& out, const RankTrace& trace, const Flow& f, bool start) {
  const auto& t = trace.tracks[static_cast<std::size_t>(start ? f.from_track : f.to_track)];
  out += start ? ",\n  {\"ph\": \"s\", " : ",\n  {\"ph\": \"f\", \"bp\": \"e\", ";
  appendKeyInt(out, "id", static_cast<std::int64_t>(f.id));
  out += ", ";
  appendKeyInt(out, "pid", t.pid);
  out += ", ";
  appendKeyInt(out, "tid", t.tid);
  out += ", \"ts\": ";
  appendMicros(out, start ? f.from_ts : f.to_ts);
  out += ", ";
  appendKeyString(out, "cat", trace.names[f.cat]);
  out += ", ";
  appendKeyString(out, "name", trace.names[f.name]);
  if (t.kind == TrackKind::Gpu) {
    // Which of the two tracks (pid, tid) may name: a host's pid and tid can equal a device and
    // stream number.
    out += ", \"args\": {";
    appendKeyInt(out, "device", t.pid);
    out += ", ";
    appendKeyInt(out, "stream", t.tid);
    out += '}';
  }
  out += '}';
}

}  // namespace

std::string serializeTrace(const RankTrace& trace) {
  std::string out;
  // ~210 bytes per event with Kineto-style names; a reallocation of a large trace costs a full
  // copy.
  out.reserve(4096 + trace.eventCount() * 256 + trace.flows.size() * 240);
  out += "{\n  ";
  appendKeyInt(out, "schemaVersion", trace.schema_version);
  out += ",\n  \"deviceProperties\": ";
  out += trace.device_properties_json.empty() ? "[]" : trace.device_properties_json;
  // Some tools find the rank by matching the text "rank": R, so keep that spelling exactly.
  out += ",\n  \"distributedInfo\": {";
  if (!trace.distributed_backend.empty()) {
    appendKeyString(out, "backend", trace.distributed_backend);
    out += ", ";
  }
  appendKeyInt(out, "rank", trace.rank);
  if (trace.world_size_declared && trace.world_size >= 1) {  // unknown: left out
    out += ", ";
    appendKeyInt(out, "world_size", trace.world_size);
  }
  out += "},\n  ";
  appendKeyInt(out, "baseTimeNanoseconds", trace.base_time_ns);
  out += ",\n  \"displayTimeUnit\": \"ms\",\n";
  if (trace.ddpscope.present) appendDdpscopeBlock(out, trace.ddpscope);
  out +=
      "  \"traceEvents\": [\n  {\"ph\": \"M\", \"name\": \"ddpscope_writer\", \"pid\": 0, \"tid\": "
      "0, "
      "\"args\": {\"name\": \"ddpscope\"}}";
  for (const auto& [pid, name] : trace.process_names) {
    out += ",\n  {\"ph\": \"M\", \"name\": \"process_name\", ";
    appendKeyInt(out, "pid", pid);
    out += ", \"tid\": 0, \"args\": {";
    appendKeyString(out, "name", name);
    out += "}}";
  }
  for (const auto& [key, name] : trace.thread_names) {
    out += ",\n  {\"ph\": \"M\", \"name\": \"thread_name\", ";
    appendKeyInt(out, "pid", key.first);
    out += ", ";
    appendKeyInt(out, "tid", key.second);
    out += ", \"args\": {";
    appendKeyString(out, "name", name);
    out += "}}";
  }
  for (const auto& t : trace.tracks) {
    for (std::size_t i = 0; i < t.size(); ++i)
      appendEvent(out, trace, t, i);
  }
  for (const auto& f : trace.flows) {
    if (f.from_track < 0 || f.to_track < 0) continue;
    appendFlowEnd(out, trace, f, true);
    appendFlowEnd(out, trace, f, false);
  }
  out += "\n  ]\n}\n";
  return out;
}

std::string writeTraceFile(const RankTrace& trace, const std::string& path,
                           const WriteOptions& options) {
  const bool gzip = options.compression == WriteOptions::Compression::Gzip ||
                    (options.compression == WriteOptions::Compression::ByPath && path.size() >= 3 &&
                     path.compare(path.size() - 3, 3, ".gz") == 0);
  const std::string json = serializeTrace(trace);
  if (gzip)
    return writeFileAtomically(path, gzipBytes(json, options.gzip_level), options.final_path);
  return writeFileAtomically(path, json, options.final_path);
}

}  // namespace ddpscope::trace
