#include "app/analysis/digest.h"
#include "app/analysis/step_breakdown.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>
#include <type_traits>

#include "tracer/format/file_io.h"
#include "tracer/format/importer.h"
#include "tracer/format/parallel.h"
#include "tracer/format/run_loader.h"
#include "tracer/format/trace_error.h"

namespace ddpscope::analysis {

std::uint64_t fileHash(const std::string& path, FileHashKind kind) {
  try {
    if (kind == FileHashKind::Xxh3) return trace::fileContentHash(path);
  } catch (const trace::TraceError& e) {
    throw std::runtime_error(e.what());
  }
  // FNV-1a: only to find the files of a version-1 digest (a byte at a time, 5 to 10 times
  // slower).
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot be read");
  std::uint64_t h = 14695981039346656037ull;  // FNV-1a offset basis
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    for (std::size_t i = 0; i < n; ++i) {
      h ^= static_cast<unsigned char>(buf[i]);
      h *= 1099511628211ull;  // FNV prime
    }
  }
  return h;
}

const char* fileHashKey(FileHashKind kind) {
  return kind == FileHashKind::Xxh3 ? "xxh3_64" : "fnv1a64";
}

namespace {

IntervalSet shifted(const IntervalSet& set, TimeNs by) {
  IntervalSet out;
  out.reserve(set.size());
  for (const auto& i : set)
    out.push_back({i.start + by, i.end + by});
  return out;
}

// A trace without its events: what tells one run from another (runIdentityDifference).
trace::RankTrace identityOf(trace::RankTrace&& t) {
  t.tracks.clear();
  t.tracks.shrink_to_fit();
  t.flows.clear();
  t.flows.shrink_to_fit();
  t.collective_args.clear();
  t.collective_args.shrink_to_fit();
  return std::move(t);
}

}  // namespace

std::vector<RankPartial> digestFile(const std::string& path, const AnalysisOptions& options,
                                    std::size_t file_index) {
  // Read first: a missing or unreadable file is the importer's clear error, not a bare
  // filesystem one from its size.
  // The hash comes from the bytes the reader read anyway when it had them whole (a file of up to
  // 16 MiB, or a gzip file's compressed bytes); a bigger plain file is read again for it.
  std::optional<std::uint64_t> hash;
  trace::ReadOptions read;
  read.content_hash = &hash;
  auto ranks = trace::importFile(path, read);
  DigestFile file;
  file.name = std::filesystem::path(path).filename().string();
  file.bytes = std::filesystem::file_size(path);
  file.hash = hash ? *hash : fileHash(path);
  std::vector<RankPartial> out;
  for (auto& imported : ranks) {
    trace::RankTrace& t = imported.trace;
    if (t.path.empty()) t.path = path;
    RankPartial p;
    RankActivity act;
    p.trace_warnings = t.warnings.size();
    p.report = analyzeRank(t, options, &act);
    checkSerialization(t, act, p.report);
    p.timings = collectiveTimings(t, act);
    for (auto& k : p.timings) {
      k.start += t.base_time_ns;
      k.end += t.base_time_ns;
    }
    p.exposed = shifted(subtract(act.comm, act.compute), t.base_time_ns);
    for (const auto& e : stepExposed(p.report, act))
      p.step_exposed.push_back(shifted(e, t.base_time_ns));
    p.file = file;
    p.written_by_ddpscope = recordedByDdpscope(t);
    p.origin = imported.origin;
    p.file_index = file_index;
    p.base_time_ns = t.base_time_ns;
    p.identity = identityOf(std::move(t));
    out.push_back(std::move(p));
  }
  return out;
}

RunReport mergePartials(std::vector<RankPartial>& parts, bool hta_compat) {
  // Ranks numbered as loading the files as a run numbers them.
  std::size_t file_count = 0;
  for (const auto& p : parts)
    file_count = std::max(file_count, p.file_index + 1);
  std::vector<std::vector<trace::RankNumber>> numbers(file_count);
  std::vector<std::vector<RankPartial*>> of_file(file_count);
  std::stable_sort(parts.begin(), parts.end(), [](const RankPartial& a, const RankPartial& b) {
    return a.file_index < b.file_index;
  });
  for (auto& p : parts) {
    numbers[p.file_index].push_back(
        {p.origin, p.report.rank, p.report.world_size, p.report.world_size_declared, {}});
    of_file[p.file_index].push_back(&p);
  }
  trace::numberRanksAcrossFiles(numbers);
  for (std::size_t f = 0; f < file_count; ++f) {
    for (std::size_t k = 0; k < of_file[f].size(); ++k) {
      RankPartial& p = *of_file[f][k];
      p.report.rank = p.identity.rank = numbers[f][k].rank;
      p.report.world_size = p.identity.world_size = numbers[f][k].world_size;
      // Where loading the run puts it: after the trace's own warnings, before the analysis'.
      if (!numbers[f][k].note.empty()) {
        const auto at = std::min(p.trace_warnings, p.report.warnings.size());
        p.report.warnings.insert(p.report.warnings.begin() + static_cast<std::ptrdiff_t>(at),
                                 numbers[f][k].note);
      }
    }
  }
  std::stable_sort(parts.begin(), parts.end(), [](const RankPartial& a, const RankPartial& b) {
    return a.report.rank < b.report.rank;
  });
  // The first rank that declares its world, as loading the run compares with.
  const auto declared = std::find_if(parts.begin(), parts.end(), [](const RankPartial& p) {
    return p.identity.world_size_declared && p.identity.world_size > 0;
  });
  RunReport out;
  bool written_by_ddpscope = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const auto& p = parts[i];
    if (i > 0 && p.report.rank == parts[i - 1].report.rank) {
      throw std::runtime_error("rank " + std::to_string(p.report.rank) + " is in two files (" +
                               parts[i - 1].report.path + " and " + p.report.path +
                               "): give the files of one run");
    }
    if (i > 0) {
      if (auto why = trace::runIdentityDifference(parts.front().identity, p.identity)) {
        throw std::runtime_error(p.report.path + " is not of the same run as " +
                                 parts.front().report.path + ": " + *why);
      }
    }
    if (declared != parts.end()) {
      if (auto why = trace::rankOutsideDeclaredWorld(declared->identity, p.identity,
                                                     p.origin == trace::RankOrigin::Order))
        throw std::runtime_error(p.report.path + ": " + *why);
    }
    written_by_ddpscope = written_by_ddpscope || p.written_by_ddpscope;
    out.ranks.push_back(p.report);
  }
  checkRunCompleteness(out, written_by_ddpscope);
  {
    std::vector<TimeNs> bases;
    for (const auto& p : parts)
      bases.push_back(p.base_time_ns);
    if (!hta_compat) firstQuietRank(out, bases);  // as analyzeRun
  }
  std::vector<std::vector<CollectiveTiming>> timings;
  std::vector<std::int32_t> rank_numbers;
  for (const auto& p : parts) {
    timings.push_back(p.timings);
    rank_numbers.push_back(p.report.rank);
  }
  CollectiveMatching matching = matchTimings(timings, rank_numbers);
  if (!matchedSplitKnown(out)) {
    if (!matching.matched.empty()) out.warnings.push_back(matchedSplitUnknownWarning(out));
  } else {
    for (std::size_t r = 0; r < parts.size(); ++r)
      applyMatchedSplit(matching, r, parts[r].exposed, out.ranks[r], parts[r].base_time_ns);
  }
  out.matched = std::move(matching.matched);
  // Each step's exposed part inside waits, as analyzeRun splits it (the run summary's
  // exposed_wait_ns_per_step).
  std::vector<std::vector<IntervalSet>> step_exposed;
  for (const auto& p : parts)
    step_exposed.push_back(p.step_exposed);
  splitStepExposed(out, step_exposed);
  out.matched_by = std::move(matching.matched_by);
  for (auto& w : matching.warnings)
    out.warnings.push_back(std::move(w));
  return out;
}

std::vector<RankPartial> digestFiles(const std::vector<std::string>& files,
                                     const DigestOptions& options,
                                     const std::vector<std::size_t>& indices,
                                     std::vector<UnreadableFile>* unreadable) {
  if (options.skip_unreadable && !unreadable)
    throw std::logic_error("digestFiles: skip_unreadable needs a list for the files left out");
  if (files.empty()) return {};
  const unsigned allowed = trace::threadsFor(options.threads, ~std::size_t{0});
  const unsigned threads = std::clamp<unsigned>(allowed, 1, static_cast<unsigned>(files.size()));
  // A file's analysis takes the threads left over (none unless there are fewer files than
  // threads): options.threads bounds the whole.
  AnalysisOptions analysis = options.analysis;
  analysis.threads = std::max(1u, allowed / threads);
  std::vector<std::vector<RankPartial>> per_file(files.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::exception_ptr error;
  std::vector<std::pair<std::size_t, std::string>> left_out;  // (file index, why)
  std::mutex error_mutex;
  std::atomic<bool> cancelled{false};
  auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      if (options.cancel && options.cancel->load()) {
        cancelled = true;
        next = files.size();
        break;
      }
      try {
        per_file[i] = digestFile(files[i], analysis, indices.empty() ? i : indices.at(i));
      } catch (const trace::TraceError& e) {  // a file that cannot be read
        std::lock_guard<std::mutex> lock(error_mutex);
        if (options.skip_unreadable) {
          left_out.emplace_back(i, e.what());
        } else {
          // One of several: the run could be digested without it (not counted: the others
          // stop at their next file).
          if (!error)
            error = files.size() > 1 || !indices.empty()
                        ? std::make_exception_ptr(trace::UnreadableRunFiles(e, 0, 0))
                        : std::current_exception();
          next = files.size();
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next = files.size();  // the others stop at their next file
      }
      if (options.progress) options.progress(++done, files.size());
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (auto& t : pool)
    t.join();
  if (cancelled) throw DigestCancelled();
  if (error) std::rethrow_exception(error);
  for (auto& [i, why] : left_out)
    unreadable->push_back({indices.empty() ? i : indices.at(i), std::move(why)});
  std::vector<RankPartial> parts;
  for (auto& f : per_file)
    for (auto& p : f)
      parts.push_back(std::move(p));
  return parts;
}

std::string finishDigest(std::vector<RankPartial>& parts, const DigestOptions& options,
                         const std::vector<std::string>& skipped_files,
                         std::vector<UnreadableFile> unreadable) {
  // In file order, whichever thread or process met them (the digest is the same bytes).
  std::sort(unreadable.begin(), unreadable.end(),
            [](const UnreadableFile& a, const UnreadableFile& b) { return a.index < b.index; });
  if (parts.empty() && !unreadable.empty())
    throw std::runtime_error("no trace file could be read: " + unreadable.front().why);
  RunReport report = mergePartials(parts, options.analysis.hta_compat);
  if (options.analysis.rules) report.rules = options.analysis.rules->description();
  if (!skipped_files.empty()) report.warnings.push_back(skippedFilesWarning(skipped_files, "read"));
  if (!unreadable.empty()) {
    std::vector<std::string> whys;
    for (auto& u : unreadable)
      whys.push_back(std::move(u.why));
    report.warnings.push_back(unreadableFilesWarning(whys));
  }
  std::vector<DigestFile> digest_files;
  for (const auto& p : parts)
    digest_files.push_back(p.file);
  return digestToJson(report, digest_files,
                      parts.empty() ? DigestProducer{} : digestProducer(parts.front().identity));
}

DigestProducer digestProducer(const trace::RankTrace& first_rank) {
  DigestProducer p;
  p.distributed_backend = first_rank.distributed_backend;
  for (const auto key : trace::runSettingKeys()) {
    if (key == "run_id") continue;  // this run's alone (and may be beyond a 64-bit number)
    if (const auto value = first_rank.ddpscope.configValue(key); !value.empty())
      p.block.config.emplace_back(std::string(key), std::string(value));
  }
  p.block.present = !p.block.config.empty();  // as the reader sets it
  return p;
}

std::string digestRun(const std::vector<std::string>& paths, const DigestOptions& options) {
  std::vector<std::string> skipped;
  const std::vector<std::string> files = trace::expandTracePaths(paths, &skipped);
  if (files.empty()) throw std::runtime_error("no trace files found");
  trace::refuseRepeatedFiles(files);
  std::vector<UnreadableFile> unreadable;
  auto parts = digestFiles(files, options, {}, &unreadable);
  return finishDigest(parts, options, skipped, std::move(unreadable));
}

}  // namespace ddpscope::analysis

// ---------------------------------------------------------------------------------------------
// Partials as bytes, for processes that read their share of a run's files (digest under MPI).
// Fixed-size little-endian-as-the-host values: the processes of one job run one build.

namespace ddpscope::analysis {

namespace {

class Writer {
 public:
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    out_.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void str(const std::string& s) {
    pod<std::uint64_t>(s.size());
    out_ += s;
  }
  template <typename T>
  void opt(const std::optional<T>& v) {
    pod<std::uint8_t>(v ? 1 : 0);
    if (v) pod(*v);
  }
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}
  template <typename T>
  T pod() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (in_.size() - at_ < sizeof(T)) throw std::runtime_error("digest partials: truncated");
    if constexpr (std::is_same_v<T, bool>) {  // a byte that is not 0 or 1 is no bool
      const auto b = static_cast<unsigned char>(in_[at_++]);
      if (b > 1) throw std::runtime_error("digest partials: a flag that is neither 0 nor 1");
      return b == 1;
    } else {
      T v;
      std::memcpy(&v, in_.data() + at_, sizeof v);
      at_ += sizeof v;
      return v;
    }
  }
  std::string str() {
    const auto n = pod<std::uint64_t>();
    if (in_.size() - at_ < n) throw std::runtime_error("digest partials: truncated");
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  template <typename T>
  std::optional<T> opt() {
    if (pod<std::uint8_t>() == 0) return std::nullopt;
    return pod<T>();
  }
  // A number of items that follow: never more than the bytes left (each takes at least one).
  std::size_t count() {
    const auto n = pod<std::uint64_t>();
    if (n > in_.size() - at_) throw std::runtime_error("digest partials: a count past the end");
    return static_cast<std::size_t>(n);
  }
  bool done() const { return at_ == in_.size(); }

 private:
  std::string_view in_;
  std::size_t at_ = 0;
};

void putMetrics(Writer& w, const OverlapMetrics& m) {
  for (TimeNs t : {m.comm_ns, m.compute_ns, m.overlap_ns, m.exposed_ns, m.span_ns, m.busy_ns,
                   m.idle_ns, m.first_ns, m.last_ns})
    w.pod(t);
  w.opt(m.overlap_pct);
  for (const auto& d : {m.idle_pct, m.compute_pct, m.non_compute_pct})
    w.opt(d);
}

OverlapMetrics getMetrics(Reader& r) {
  OverlapMetrics m;
  for (TimeNs* t : {&m.comm_ns, &m.compute_ns, &m.overlap_ns, &m.exposed_ns, &m.span_ns, &m.busy_ns,
                    &m.idle_ns, &m.first_ns, &m.last_ns})
    *t = r.pod<TimeNs>();
  m.overlap_pct = r.opt<double>();
  for (auto* d : {&m.idle_pct, &m.compute_pct, &m.non_compute_pct})
    *d = r.opt<double>();
  return m;
}

void putIntervals(Writer& w, const IntervalSet& set) {
  w.pod<std::uint64_t>(set.size());
  for (const auto& i : set) {
    w.pod(i.start);
    w.pod(i.end);
  }
}

IntervalSet getIntervals(Reader& r) {
  IntervalSet set(r.count());
  for (auto& i : set) {
    i.start = r.pod<TimeNs>();
    i.end = r.pod<TimeNs>();
  }
  return set;
}

// The parts of a rank's report the digest and the run summary use (not its streams, per-kind
// collectives or violations).
void putReport(Writer& w, const RankReport& r) {
  w.pod(r.rank);
  w.pod(r.world_size);
  w.pod(r.world_size_declared);
  w.str(r.source);
  w.str(r.path);
  w.pod(r.incomplete);
  w.pod(r.dropped_records);
  w.pod(r.counts);
  putMetrics(w, r.whole);
  w.pod(r.serialization_checked);
  w.pod(r.buckets_inferred);
  w.str(r.bucket_setting);
  w.opt(r.overlap_setting);
  w.pod<std::uint64_t>(r.steps.size());
  for (const auto& st : r.steps) {
    w.pod(st.step);
    w.pod(st.start_ns);
    w.pod(st.dur_ns);
    putMetrics(w, st.metrics);
    w.pod(st.exposed_tail_ns);
    w.pod(st.compute_critical_ns);
    w.opt(st.dp_efficiency);
    w.pod(st.allreduces);
  }
  w.pod<std::uint64_t>(r.buckets.size());
  for (const auto& b : r.buckets) {
    w.pod(b.step);
    w.pod(b.id);
    w.pod(b.bytes);
    w.pod(b.tensors);
    for (TimeNs t : {b.ready_ns, b.start_ns, b.end_ns, b.wait_ns, b.exposed_ns})
      w.pod(t);
    w.opt(b.algbw_gbps);
    w.opt(b.busbw_gbps);
    w.pod(b.bw_basis);
    w.pod(b.bw_ranks);
    w.pod(b.inferred);
    w.pod(b.device);
    w.pod(b.stream);
  }
  w.pod<std::uint64_t>(r.warnings.size());
  for (const auto& s : r.warnings)
    w.str(s);
}

RankReport getReport(Reader& r) {
  RankReport out;
  out.rank = r.pod<std::int32_t>();
  out.world_size = r.pod<std::int32_t>();
  out.world_size_declared = r.pod<bool>();
  out.source = r.str();
  out.path = r.str();
  out.incomplete = r.pod<bool>();
  out.dropped_records = r.pod<std::int64_t>();
  out.counts = r.pod<decltype(out.counts)>();
  out.whole = getMetrics(r);
  out.serialization_checked = r.pod<bool>();
  out.buckets_inferred = r.pod<bool>();
  out.bucket_setting = r.str();
  out.overlap_setting = r.opt<bool>();
  out.steps.resize(r.count());
  for (auto& st : out.steps) {
    st.step = r.pod<std::int32_t>();
    st.start_ns = r.pod<TimeNs>();
    st.dur_ns = r.pod<TimeNs>();
    st.metrics = getMetrics(r);
    st.exposed_tail_ns = r.pod<TimeNs>();
    st.compute_critical_ns = r.pod<TimeNs>();
    st.dp_efficiency = r.opt<double>();
    st.allreduces = r.pod<std::int32_t>();
  }
  out.buckets.resize(r.count());
  for (auto& b : out.buckets) {
    b.step = r.pod<std::int32_t>();
    b.id = r.pod<std::int32_t>();
    b.bytes = r.pod<std::int64_t>();
    b.tensors = r.pod<std::int32_t>();
    for (TimeNs* t : {&b.ready_ns, &b.start_ns, &b.end_ns, &b.wait_ns, &b.exposed_ns})
      *t = r.pod<TimeNs>();
    b.algbw_gbps = r.opt<double>();
    b.busbw_gbps = r.opt<double>();
    b.bw_basis = r.pod<BandwidthBasis>();
    b.bw_ranks = r.pod<std::int32_t>();
    b.inferred = r.pod<bool>();
    b.device = r.pod<std::int64_t>();
    b.stream = r.pod<std::int64_t>();
  }
  out.warnings.resize(r.count());
  for (auto& s : out.warnings)
    s = r.str();
  return out;
}

}  // namespace

std::string encodePartials(const std::vector<RankPartial>& parts,
                           const std::vector<UnreadableFile>& unreadable) {
  Writer w;
  w.pod<std::uint64_t>(unreadable.size());
  for (const auto& u : unreadable) {
    w.pod<std::uint64_t>(u.index);
    w.str(u.why);
  }
  w.pod<std::uint64_t>(parts.size());
  for (const auto& p : parts) {
    putReport(w, p.report);
    w.pod<std::uint64_t>(p.timings.size());
    for (const auto& k : p.timings) {
      w.pod(k.kind);
      w.pod(k.rule_kind);
      w.str(k.group);
      w.pod(k.seq);
      w.pod(k.start);
      w.pod(k.end);
      w.pod(k.bytes);
      w.pod(k.step);
      w.pod(k.ranks);
      w.pod(k.ref);
    }
    putIntervals(w, p.exposed);
    w.pod<std::uint64_t>(p.step_exposed.size());
    for (const auto& e : p.step_exposed)
      putIntervals(w, e);
    w.str(p.file.name);
    w.pod(p.file.bytes);
    w.pod(p.file.hash);
    w.pod(p.written_by_ddpscope);
    w.pod(p.origin);
    w.pod<std::uint64_t>(p.file_index);
    w.pod<std::uint64_t>(p.trace_warnings);
    w.pod(p.base_time_ns);
    const auto& id = p.identity;
    w.pod(id.world_size);
    w.pod(id.world_size_declared);
    w.str(id.distributed_backend);
    w.pod(id.ddpscope.present);
    w.str(id.ddpscope.source);
    w.pod<std::uint64_t>(id.ddpscope.config.size());
    for (const auto& [key, value] : id.ddpscope.config) {
      w.str(key);
      w.str(value);
    }
  }
  return w.take();
}

std::vector<RankPartial> decodePartials(std::string_view bytes,
                                        std::vector<UnreadableFile>* unreadable) {
  Reader r(bytes);
  std::vector<UnreadableFile> left_out(r.count());
  for (auto& u : left_out) {
    u.index = static_cast<std::size_t>(r.pod<std::uint64_t>());
    u.why = r.str();
  }
  if (unreadable) unreadable->insert(unreadable->end(), left_out.begin(), left_out.end());
  std::vector<RankPartial> parts(r.count());
  for (auto& p : parts) {
    p.report = getReport(r);
    p.timings.resize(r.count());
    for (auto& k : p.timings) {
      k.kind = r.pod<CollectiveKind>();
      k.rule_kind = r.pod<CollectiveKind>();
      k.group = r.str();
      k.seq = r.pod<std::int64_t>();
      k.start = r.pod<TimeNs>();
      k.end = r.pod<TimeNs>();
      k.bytes = r.pod<std::int64_t>();
      k.step = r.pod<std::int32_t>();
      k.ranks = r.pod<std::int32_t>();
      k.ref = r.pod<EventRef>();
    }
    p.exposed = getIntervals(r);
    p.step_exposed.resize(r.count());
    for (auto& e : p.step_exposed)
      e = getIntervals(r);
    p.file.name = r.str();
    p.file.bytes = r.pod<std::uint64_t>();
    p.file.hash = r.pod<std::uint64_t>();
    p.written_by_ddpscope = r.pod<bool>();
    p.origin = r.pod<trace::RankOrigin>();
    p.file_index = static_cast<std::size_t>(r.pod<std::uint64_t>());
    p.trace_warnings = static_cast<std::size_t>(r.pod<std::uint64_t>());
    p.base_time_ns = r.pod<TimeNs>();
    auto& id = p.identity;
    id.path = p.report.path;
    id.rank = p.report.rank;
    id.world_size = r.pod<std::int32_t>();
    id.world_size_declared = r.pod<bool>();
    id.distributed_backend = r.str();
    id.ddpscope.present = r.pod<bool>();
    id.ddpscope.source = r.str();
    id.ddpscope.config.resize(r.count());
    for (auto& [key, value] : id.ddpscope.config) {
      key = r.str();
      value = r.str();
    }
  }
  if (!r.done()) throw std::runtime_error("digest partials: bytes left over");
  return parts;
}

}  // namespace ddpscope::analysis
