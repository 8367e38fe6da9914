#include "app/analysis/digest.h"

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "tracer/format/importer.h"
#include "tracer/format/run_loader.h"

namespace ddpscope::analysis {

std::uint64_t fileHash(const std::string& path) {
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

std::vector<RankPartial> digestFile(const std::string& path, const AnalysisOptions& options) {
  DigestFile file;
  file.name = std::filesystem::path(path).filename().string();
  file.bytes = std::filesystem::file_size(path);
  file.hash = fileHash(path);
  std::vector<RankPartial> out;
  for (auto& imported : trace::importFile(path)) {
    trace::RankTrace& t = imported.trace;
    if (t.path.empty()) t.path = path;
    RankPartial p;
    RankActivity act;
    p.report = analyzeRank(t, options, &act);
    checkSerialization(t, act, p.report);
    p.timings = collectiveTimings(t, act);
    for (auto& k : p.timings) {
      k.start += t.base_time_ns;
      k.end += t.base_time_ns;
    }
    p.comm = shifted(act.comm, t.base_time_ns);
    p.compute = shifted(act.compute, t.base_time_ns);
    p.file = file;
    p.written_by_ddpscope = t.ddpscope.present;
    p.identity = identityOf(std::move(t));
    out.push_back(std::move(p));
  }
  return out;
}

RunReport mergePartials(std::vector<RankPartial>& parts) {
  std::stable_sort(parts.begin(), parts.end(), [](const RankPartial& a, const RankPartial& b) {
    return a.report.rank < b.report.rank;
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
    written_by_ddpscope = written_by_ddpscope || p.written_by_ddpscope;
    out.ranks.push_back(p.report);
  }
  checkRunCompleteness(out, written_by_ddpscope);
  std::vector<std::vector<CollectiveTiming>> timings;
  std::vector<std::int32_t> rank_numbers;
  for (const auto& p : parts) {
    timings.push_back(p.timings);
    rank_numbers.push_back(p.report.rank);
  }
  CollectiveMatching matching = matchTimings(timings, rank_numbers);
  for (std::size_t r = 0; r < parts.size(); ++r)
    applyMatchedSplit(matching, r, parts[r].comm, parts[r].compute, out.ranks[r]);
  out.matched = std::move(matching.matched);
  out.matched_by = std::move(matching.matched_by);
  for (auto& w : matching.warnings)
    out.warnings.push_back(std::move(w));
  return out;
}

std::string digestRun(const std::vector<std::string>& paths, const DigestOptions& options) {
  std::vector<std::string> skipped;
  const std::vector<std::string> files = trace::expandTracePaths(paths, &skipped);
  if (files.empty()) throw std::runtime_error("no trace files found");
  unsigned threads = options.threads ? options.threads : std::thread::hardware_concurrency();
  threads = std::clamp<unsigned>(threads, 1, static_cast<unsigned>(files.size()));
  std::vector<std::vector<RankPartial>> per_file(files.size());
  std::atomic<std::size_t> next{0}, done{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto work = [&] {
    for (std::size_t i = next++; i < files.size(); i = next++) {
      try {
        per_file[i] = digestFile(files[i], options.analysis);
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
  if (error) std::rethrow_exception(error);
  std::vector<RankPartial> parts;
  for (auto& f : per_file)
    for (auto& p : f)
      parts.push_back(std::move(p));
  RunReport report = mergePartials(parts);
  if (options.analysis.rules) report.rules = options.analysis.rules->description();
  if (!skipped.empty()) {
    report.warnings.push_back(std::to_string(skipped.size()) +
                              " trace file(s) beside the folder's rank-<r> files were not read");
  }
  std::vector<DigestFile> digest_files;
  for (const auto& p : parts)
    digest_files.push_back(p.file);
  return digestToJson(report, digest_files);
}

}  // namespace ddpscope::analysis
