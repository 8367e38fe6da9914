#include "trace_model.h"

#include <algorithm>
#include <charconv>
#include <numeric>
#include <sstream>
#include <tuple>

#include "memory.h"

namespace ddpscope::trace {

StringTable::StringTable(const StringTable& other) : strings_(other.strings_) {
  index_.reserve(strings_.size());
  for (std::size_t i = 0; i < strings_.size(); ++i)
    index_.emplace(std::string_view(strings_[i]), static_cast<NameId>(i));
}

StringTable& StringTable::operator=(const StringTable& other) {
  if (this != &other) *this = StringTable(other);
  return *this;
}

NameId StringTable::intern(std::string_view s) {
  auto it = index_.find(s);
  if (it != index_.end()) return it->second;
  const auto id = static_cast<NameId>(strings_.size());
  strings_.emplace_back(s);
  index_.emplace(std::string_view(strings_.back()), id);
  return id;
}

NameId StringTable::find(std::string_view s) const {
  auto it = index_.find(s);
  return it == index_.end() ? npos : it->second;
}

EventKind eventKindFromCategory(std::string_view cat) {
  if (cat == "kernel" || cat == "Kernel") return EventKind::Kernel;
  if (cat == "gpu_memcpy" || cat == "Memcpy") return EventKind::Memcpy;
  if (cat == "gpu_memset" || cat == "Memset") return EventKind::Memset;
  if (cat == "cuda_sync") return EventKind::Sync;
  if (cat == "gpu_user_annotation") return EventKind::GpuAnnotation;
  if (cat == "cuda_runtime" || cat == "Runtime") return EventKind::Runtime;
  if (cat == "cuda_driver" || cat == "Driver") return EventKind::Driver;
  if (cat == "cpu_op" || cat == "Operator") return EventKind::CpuOp;
  if (cat == "user_annotation") return EventKind::UserAnnotation;
  return EventKind::Other;
}

std::string_view categoryName(EventKind kind) {
  switch (kind) {
    case EventKind::Kernel:
      return "kernel";
    case EventKind::Memcpy:
      return "gpu_memcpy";
    case EventKind::Memset:
      return "gpu_memset";
    case EventKind::Sync:
      return "cuda_sync";
    case EventKind::GpuAnnotation:
      return "gpu_user_annotation";
    case EventKind::Runtime:
      return "cuda_runtime";
    case EventKind::Driver:
      return "cuda_driver";
    case EventKind::CpuOp:
      return "cpu_op";
    case EventKind::UserAnnotation:
      return "user_annotation";
    case EventKind::Other:
      return "";
  }
  return "";
}

bool isGpuKind(EventKind kind) {
  return isGpuActivity(kind) || kind == EventKind::GpuAnnotation;
}

bool isGpuActivity(EventKind kind) {
  return kind == EventKind::Kernel || kind == EventKind::Memcpy || kind == EventKind::Memset ||
         kind == EventKind::Sync;
}

bool occupiesGpu(EventKind kind) {
  return kind == EventKind::Kernel || kind == EventKind::Memcpy || kind == EventKind::Memset;
}

namespace {
template <typename T>
void reserveColumn(Column<T>& v, std::size_t n, FreshBuffers& fresh) {
  if (v.capacity() >= n) return;
  const bool empty = v.empty();
  v.reserve(n);
  if (empty) fresh.add(v.data(), n * sizeof(T));  // filled right after: see memory.h
}
}  // namespace

void Track::reserve(std::size_t n) {
  FreshBuffers fresh;
  reserve(n, Half::First, fresh);
  reserve(n, Half::Second, fresh);
  fresh.prepare();
}

void Track::reserve(std::size_t n, Half half) {
  FreshBuffers fresh;
  reserve(n, half, fresh);
  fresh.prepare();
}

void Track::reserve(std::size_t n, Half half, FreshBuffers& fresh) {
  if (half == Half::First) {
    reserveColumn(start, n, fresh);
    reserveColumn(dur, n, fresh);
    reserveColumn(name, n, fresh);
    reserveColumn(kind_of, n, fresh);
  } else {
    reserveColumn(correlation, n, fresh);
    reserveColumn(bucket, n, fresh);
    reserveColumn(step, n, fresh);
    reserveColumn(bytes, n, fresh);
  }
}

Track::OtherCategories::const_iterator Track::otherCategory(std::size_t i) const {
  return std::lower_bound(
      cat_other_.begin(), cat_other_.end(), i,
      [](const std::pair<std::uint32_t, NameId>& p, std::size_t k) { return p.first < k; });
}

void Track::setCategory(std::size_t i, EventKind event_kind, NameId cat) {
  NameId& usual = cat_of_kind_[static_cast<std::size_t>(event_kind)];
  if (usual == StringTable::npos) usual = cat;
  const auto index = static_cast<std::uint32_t>(i);
  // Events are written in index order (push, or setRow after resize): the end is the place.
  auto it = cat_other_.empty() || cat_other_.back().first < index
                ? cat_other_.end()
                : cat_other_.begin() + (otherCategory(i) - cat_other_.cbegin());
  const bool there = it != cat_other_.end() && it->first == index;
  if (cat == usual) {
    if (there) cat_other_.erase(it);
  } else if (there) {
    it->second = cat;
  } else {
    cat_other_.insert(it, {index, cat});
  }
}

void Track::settleCategories() {
  if (cat_other_.empty()) return;
  std::array<std::size_t, kKinds> events{};
  for (const auto k : kind_of)
    ++events[static_cast<std::size_t>(k)];
  // Per kind, how many events carry each category kept aside.
  std::map<std::pair<std::size_t, NameId>, std::size_t> aside;
  for (const auto& [i, c] : cat_other_)
    ++aside[{static_cast<std::size_t>(kind_of[i]), c}];
  std::array<std::size_t, kKinds> aside_total{};
  for (const auto& [key, n] : aside)
    aside_total[key.first] += n;
  auto usual = cat_of_kind_;
  std::array<std::size_t, kKinds> best{};
  for (const auto& [key, n] : aside) {
    const std::size_t k = key.first;
    const std::size_t usual_count = events[k] - aside_total[k];
    if (n > usual_count && n > best[k]) {
      best[k] = n;
      usual[k] = key.second;
    }
  }
  if (usual == cat_of_kind_) return;
  OtherCategories kept;
  std::size_t j = 0;
  for (std::size_t i = 0; i < kind_of.size(); ++i) {
    const auto k = static_cast<std::size_t>(kind_of[i]);
    NameId c = cat_of_kind_[k];
    if (j < cat_other_.size() && cat_other_[j].first == i) c = cat_other_[j++].second;
    if (c != usual[k]) kept.emplace_back(static_cast<std::uint32_t>(i), c);
  }
  cat_of_kind_ = usual;
  kept.shrink_to_fit();
  cat_other_.swap(kept);
}

void Track::resize(std::size_t n) {
  start.resize(n, 0);
  dur.resize(n, 0);
  name.resize(n, 0);
  kind_of.resize(n, EventKind{});
  while (!cat_other_.empty() && cat_other_.back().first >= n)
    cat_other_.pop_back();
  correlation.resize(n, 0);
  bucket.resize(n, 0);
  step.resize(n, 0);
  bytes.resize(n, 0);
}

void Track::resizeForWrite(std::size_t n) {
  resizeForWrite(n, Half::First);
  resizeForWrite(n, Half::Second);
}

void Track::resizeForWrite(std::size_t n, Half half) {
  if (half == Half::First) {
    start.resize(n);
    dur.resize(n);
    name.resize(n);
    kind_of.resize(n);
    while (!cat_other_.empty() && cat_other_.back().first >= n)
      cat_other_.pop_back();
  } else {
    correlation.resize(n);
    bucket.resize(n);
    step.resize(n);
    bytes.resize(n);
  }
}

namespace {
template <typename T>
void permute(Column<T>& v, const std::vector<std::uint32_t>& order) {
  Column<T> out;
  out.reserve(v.size());
  for (auto i : order)
    out.push_back(v[i]);
  v.swap(out);
}
}  // namespace

void Track::sortByStart() {
  bool sorted = true;
  for (std::size_t i = 1; i < start.size() && sorted; ++i) {
    sorted = start[i - 1] < start[i] || (start[i - 1] == start[i] && dur[i - 1] >= dur[i]);
  }
  if (sorted) return;
  std::vector<std::uint32_t> order(start.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (start[a] != start[b]) return start[a] < start[b];
    return dur[a] > dur[b];
  });
  permute(start, order);
  permute(dur, order);
  permute(name, order);
  permute(kind_of, order);
  if (!cat_other_.empty()) {
    OtherCategories moved;
    for (std::size_t i = 0; i < order.size(); ++i) {
      const auto it = otherCategory(order[i]);
      if (it != cat_other_.end() && it->first == order[i])
        moved.emplace_back(static_cast<std::uint32_t>(i), it->second);
    }
    cat_other_.swap(moved);
  }
  permute(correlation, order);
  permute(bucket, order);
  permute(step, order);
  permute(bytes, order);
}

std::string_view DdpscopeBlock::configValue(std::string_view key) const {
  for (const auto& [k, v] : config) {
    if (k == key) return v;
  }
  return {};
}

std::string_view RankTrace::source() const {
  if (ddpscope.present && !ddpscope.source.empty()) return ddpscope.source;
  return "imported";
}

const CollectiveArgs* RankTrace::collectiveArgs(std::int64_t correlation) const {
  if (correlation == kNoCorrelation) return nullptr;
  auto it =
      std::lower_bound(collective_args.begin(), collective_args.end(), correlation,
                       [](const CollectiveArgs& a, std::int64_t c) { return a.correlation < c; });
  return it != collective_args.end() && it->correlation == correlation ? &*it : nullptr;
}

void RankTrace::sortCollectiveArgs() {
  std::stable_sort(collective_args.begin(), collective_args.end(),
                   [](const CollectiveArgs& a, const CollectiveArgs& b) {
                     return a.correlation < b.correlation;
                   });
  collective_args.erase(std::unique(collective_args.begin(), collective_args.end(),
                                    [](const CollectiveArgs& a, const CollectiveArgs& b) {
                                      return a.correlation == b.correlation;
                                    }),
                        collective_args.end());
}

std::string_view RankTrace::kernelShortName(NameId name) const {
  const auto it = std::lower_bound(
      kernel_short_names.begin(), kernel_short_names.end(), name,
      [](const std::pair<NameId, NameId>& entry, NameId n) { return entry.first < n; });
  if (it == kernel_short_names.end() || it->first != name) return {};
  return names[it->second];
}

void RankTrace::addKernelShortName(NameId name, std::string_view short_name) {
  if (short_name.empty() || name >= names.size() || names[name] == short_name) return;
  const auto it = std::lower_bound(
      kernel_short_names.begin(), kernel_short_names.end(), name,
      [](const std::pair<NameId, NameId>& entry, NameId n) { return entry.first < n; });
  if (it != kernel_short_names.end() && it->first == name) return;
  kernel_short_names.insert(it, {name, names.intern(short_name)});
}

std::size_t RankTrace::eventCount() const {
  std::size_t n = 0;
  for (const auto& t : tracks)
    n += t.size();
  return n;
}

std::int32_t RankTrace::findTrack(TrackKind kind, std::int64_t pid, std::int64_t tid) const {
  for (std::size_t i = 0; i < tracks.size(); ++i) {
    const auto& t = tracks[i];
    if (t.kind == kind && t.pid == pid && t.tid == tid) return static_cast<std::int32_t>(i);
  }
  return -1;
}

std::int32_t RankTrace::trackIndex(TrackKind kind, std::int64_t pid, std::int64_t tid) {
  auto i = findTrack(kind, pid, tid);
  if (i >= 0) return i;
  Track t;
  t.kind = kind;
  t.pid = pid;
  t.tid = tid;
  tracks.push_back(std::move(t));
  return static_cast<std::int32_t>(tracks.size() - 1);
}

namespace {
// Parses N from "ProfilerStep#N"; false when the name is not a step marker.
bool parseStepMarker(std::string_view name, std::int32_t& number) {
  constexpr std::string_view kPrefix = "ProfilerStep#";
  if (name.substr(0, kPrefix.size()) != kPrefix) return false;
  auto digits = name.substr(kPrefix.size());
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), number);
  // Not negative (-1 means "no step") and leaving room for "the next step".
  return ec == std::errc() && ptr == digits.data() + digits.size() && number >= 0 &&
         number < std::numeric_limits<std::int32_t>::max();
}
}  // namespace

void RankTrace::deriveSteps() {
  steps.clear();
  for (const auto& t : tracks) {
    if (t.kind != TrackKind::Host) continue;
    for (std::size_t i = 0; i < t.size(); ++i) {
      if (t.kind_of[i] != EventKind::UserAnnotation) continue;
      std::int32_t number = 0;
      if (parseStepMarker(names[t.name[i]], number)) {
        steps.push_back({number, t.start[i], t.end(i)});
      }
    }
  }
  std::sort(steps.begin(), steps.end(), [](const StepRange& a, const StepRange& b) {
    return a.start != b.start ? a.start < b.start : a.number < b.number;
  });
}

void RankTrace::shiftTimes(TimeNs delta) {
  if (delta == 0) return;
  for (auto& t : tracks) {
    for (auto& s : t.start)
      s += delta;
  }
  for (auto& f : flows) {
    f.from_ts += delta;
    f.to_ts += delta;
  }
  for (auto& s : steps) {
    s.start += delta;
    s.end += delta;
  }
  base_time_ns -= delta;
}

void RankTrace::rebaseToEarliestEvent() {
  TimeNs earliest = std::numeric_limits<TimeNs>::max();
  for (const auto& t : tracks) {
    if (!t.start.empty()) earliest = std::min(earliest, t.start.front());
  }
  for (const auto& f : flows)
    earliest = std::min({earliest, f.from_ts, f.to_ts});
  if (earliest == std::numeric_limits<TimeNs>::max()) return;
  shiftTimes(-earliest);
}

void canonicalize(RankTrace& trace) {
  trace.sortCollectiveArgs();
  // Track order: GPU tracks by (device, stream), then host tracks by (pid, tid); empty ones
  // dropped.
  std::vector<std::int32_t> order;
  for (std::size_t i = 0; i < trace.tracks.size(); ++i) {
    if (trace.tracks[i].size() > 0) order.push_back(static_cast<std::int32_t>(i));
  }
  std::sort(order.begin(), order.end(), [&](std::int32_t a, std::int32_t b) {
    const auto& x = trace.tracks[static_cast<std::size_t>(a)];
    const auto& y = trace.tracks[static_cast<std::size_t>(b)];
    return std::tie(x.kind, x.pid, x.tid) < std::tie(y.kind, y.pid, y.tid);
  });
  std::vector<std::int32_t> new_index(trace.tracks.size(), -1);
  std::vector<Track> sorted;
  sorted.reserve(order.size());
  for (auto old : order) {
    new_index[static_cast<std::size_t>(old)] = static_cast<std::int32_t>(sorted.size());
    sorted.push_back(std::move(trace.tracks[static_cast<std::size_t>(old)]));
  }
  trace.tracks = std::move(sorted);
  for (auto& t : trace.tracks) {
    t.sortByStart();
    t.settleCategories();
  }
  std::vector<Flow> flows;
  flows.reserve(trace.flows.size());
  for (auto f : trace.flows) {
    if (f.from_track < 0 || f.to_track < 0) continue;
    if (static_cast<std::size_t>(f.from_track) >= new_index.size() ||
        static_cast<std::size_t>(f.to_track) >= new_index.size()) {
      continue;
    }
    f.from_track = new_index[static_cast<std::size_t>(f.from_track)];
    f.to_track = new_index[static_cast<std::size_t>(f.to_track)];
    if (f.from_track >= 0 && f.to_track >= 0) flows.push_back(f);
  }
  std::sort(flows.begin(), flows.end(), [](const Flow& a, const Flow& b) {
    return std::tie(a.from_ts, a.id, a.to_ts, a.to_track) <
           std::tie(b.from_ts, b.id, b.to_ts, b.to_track);
  });
  trace.flows = std::move(flows);
  trace.deriveSteps();
}

std::size_t Run::eventCount() const {
  std::size_t n = 0;
  for (const auto& r : ranks)
    n += r.eventCount();
  return n;
}

std::string_view Run::source() const {
  if (ranks.empty()) return "imported";
  auto s = ranks.front().source();
  for (const auto& r : ranks) {
    if (r.source() != s) return "mixed";
  }
  return s;
}

namespace {
template <typename T>
std::string columnDifference(const char* column, const Column<T>& a, const Column<T>& b) {
  if (a.size() != b.size()) {
    return std::string(column) + ": " + std::to_string(a.size()) + " vs " +
           std::to_string(b.size()) + " entries";
  }
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (!(a[i] == b[i])) return std::string(column) + " differs at index " + std::to_string(i);
  }
  return {};
}
}  // namespace

std::string describeDifference(const RankTrace& a, const RankTrace& b) {
  std::ostringstream out;
  if (a.rank != b.rank) return "rank differs";
  if (a.world_size != b.world_size) return "world_size differs";
  if (a.world_size_declared != b.world_size_declared) return "world_size_declared differs";
  if (a.schema_version != b.schema_version) return "schema_version differs";
  if (a.base_time_ns != b.base_time_ns) {
    return "base_time_ns differs: " + std::to_string(a.base_time_ns) + " vs " +
           std::to_string(b.base_time_ns);
  }
  if (a.distributed_backend != b.distributed_backend) return "distributed backend differs";
  if (a.tracks.size() != b.tracks.size()) return "number of tracks differs";
  for (std::size_t t = 0; t < a.tracks.size(); ++t) {
    const auto& x = a.tracks[t];
    const auto& y = b.tracks[t];
    const std::string where = "track " + std::to_string(t) + " ";
    if (x.kind != y.kind || x.pid != y.pid || x.tid != y.tid) return where + "identity differs";
    for (auto d :
         {columnDifference("start", x.start, y.start), columnDifference("dur", x.dur, y.dur),
          columnDifference("kind", x.kind_of, y.kind_of),
          columnDifference("correlation", x.correlation, y.correlation),
          columnDifference("bucket", x.bucket, y.bucket), columnDifference("step", x.step, y.step),
          columnDifference("bytes", x.bytes, y.bytes)}) {
      if (!d.empty()) return where + d;
    }
    for (std::size_t i = 0; i < x.size(); ++i) {
      if (a.names[x.name[i]] != b.names[y.name[i]])
        return where + "name differs at " + std::to_string(i);
      if (a.names[x.category(i)] != b.names[y.category(i)])
        return where + "cat differs at " + std::to_string(i);
    }
  }
  if (a.flows.size() != b.flows.size()) return "number of flows differs";
  for (std::size_t i = 0; i < a.flows.size(); ++i) {
    const auto& x = a.flows[i];
    const auto& y = b.flows[i];
    if (x.id != y.id || x.from_ts != y.from_ts || x.to_ts != y.to_ts ||
        x.from_track != y.from_track || x.to_track != y.to_track ||
        a.names[x.cat] != b.names[y.cat] || a.names[x.name] != b.names[y.name]) {
      return "flow " + std::to_string(i) + " differs";
    }
  }
  if (a.steps != b.steps) return "steps differ";
  if (a.process_names != b.process_names) return "process names differ";
  if (a.thread_names != b.thread_names) return "thread names differ";
  if (!(a.ddpscope == b.ddpscope)) return "ddpscope block differs";
  if (a.collective_args != b.collective_args) return "collective arguments differ";
  if (a.kernel_short_names.size() != b.kernel_short_names.size())
    return "number of kernel short names differs";
  for (const auto& [name, short_name] : a.kernel_short_names) {
    const NameId other = b.names.find(a.names[name]);
    if (other == StringTable::npos || b.kernelShortName(other) != a.names[short_name])
      return "kernel short name of " + a.names[name] + " differs";
  }
  return {};
}

}  // namespace ddpscope::trace
