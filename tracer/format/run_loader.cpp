#include "run_loader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <exception>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string_view>
#include <thread>
#include <utility>

#include <zlib.h>

#include "importer.h"
#include "parallel.h"
#include "trace_error.h"

namespace ddpscope::trace {

namespace fs = std::filesystem;

namespace {
bool hasTraceSuffix(const std::string& name) {
  return hasImportableExtension(name);
}

// The settings of the `ddpscope` block that are the same on every rank of one run: the
// producer's configuration. Per-rank entries (a tracer's record counts, a signal that stopped
// one rank) are not among them.
constexpr std::string_view kRunIdentityKeys[] = {"run_id",
                                                 "backend",
                                                 "model",
                                                 "layers",
                                                 "hidden",
                                                 "batch",
                                                 "vocab",
                                                 "bucket_mb",
                                                 "first_bucket_mb",
                                                 "overlap",
                                                 "fusion",
                                                 "steps",
                                                 "seed",
                                                 "lr",
                                                 "rebuild_buckets",
                                                 "sim_math",
                                                 "sim_gemm_tflops",
                                                 "sim_memory_gbps",
                                                 "sim_allreduce_alpha_us",
                                                 "sim_allreduce_busbw_gbps",
                                                 "sim_comm_slowdown",
                                                 "sim_jitter",
                                                 "sim_straggler_rank",
                                                 "sim_straggler_slowdown"};

// Two raw JSON values of a setting are the same when their text is, or when both are numbers
// of the same value: "25", "25.0" and "2.5e1" are one bucket size, whoever wrote them.
bool sameSetting(std::string_view a, std::string_view b) {
  if (a == b) return true;
  // Whole numbers compared digit by digit (a run id of 19 digits is beyond a double's 15 or
  // 16): the sign and the leading zeros aside, the same digits.
  const auto ia = wholeNumberText(a), ib = wholeNumberText(b);
  if (ia && ib) return *ia == *ib;
  const auto number = [](std::string_view v) -> std::optional<double> {
    if (v.empty() || !(v.front() == '-' || (v.front() >= '0' && v.front() <= '9')))
      return std::nullopt;
    double x = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
    if (ec != std::errc{} || end != v.data() + v.size()) return std::nullopt;
    return x;
  };
  const auto x = number(a), y = number(b);
  if (!x || !y) return false;
  if (*x == *y) return true;
  // A 32-bit float written in full ("0.05000000074505806", a float32 learning rate) and the
  // same setting written short ("0.05"): one is exactly a float32 value and the other is that
  // float's shortest decimal form, read back.
  const auto fullAndShort = [](double full, double other) {
    const auto text = float32Text(full);
    double shortest = 0;
    return text &&
           std::from_chars(text->data(), text->data() + text->size(), shortest).ec == std::errc{} &&
           shortest == other;
  };
  return fullAndShort(*x, *y) || fullAndShort(*y, *x);
}

}  // namespace

std::optional<std::string> wholeNumberText(std::string_view raw) {
  const bool negative = raw.starts_with('-');
  if (negative) raw.remove_prefix(1);
  if (raw.empty() || raw.find_first_not_of("0123456789") != std::string_view::npos)
    return std::nullopt;
  raw.remove_prefix(std::min(raw.find_first_not_of('0'), raw.size() - 1));
  return (negative && raw != "0" ? "-" : "") + std::string(raw);
}

std::optional<std::string> float32Text(double v) {
  if (!std::isfinite(v) || std::fabs(v) > std::numeric_limits<float>::max()) return std::nullopt;
  const auto f = static_cast<float>(v);
  if (static_cast<double>(f) != v) return std::nullopt;  // not a float32 value
  char text[64];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, f);
  if (ec != std::errc{}) return std::nullopt;
  return std::string(text, end);
}

std::string settingText(std::string_view key, std::string_view raw) {
  // The simulator's straggler rank is -1 for none.
  if (key == "sim_straggler_rank" && wholeNumberText(raw) == "-1") return "none";
  if (auto whole = wholeNumberText(raw)) return std::move(*whole);
  double v = 0;
  const char* end = raw.data() + raw.size();
  const auto parsed = std::from_chars(raw.data(), end, v);
  if (!raw.empty() && parsed.ec == std::errc() && parsed.ptr == end && std::isfinite(v)) {
    if (auto short_form = float32Text(v)) return std::move(*short_form);
    char buf[32];
    const auto written = std::to_chars(buf, buf + sizeof buf, v);  // shortest that reads back
    if (written.ec == std::errc()) return std::string(buf, written.ptr);
  }
  if (raw.size() >= 2 && raw.front() == '"' && raw.back() == '"')
    return std::string(raw.substr(1, raw.size() - 2));
  return std::string(raw);
}

std::span<const std::string_view> runSettingKeys() {
  return kRunIdentityKeys;
}

bool sameSettingValue(std::string_view a, std::string_view b) {
  return sameSetting(a, b);
}

std::optional<std::string> runIdentityDifference(const RankTrace& a, const RankTrace& b) {
  if (a.source() != b.source())
    return "its source is " + std::string(b.source()) + ", not " + std::string(a.source());
  if (a.world_size_declared && b.world_size_declared && a.world_size > 0 && b.world_size > 0 &&
      a.world_size != b.world_size)
    return "its world size is " + std::to_string(b.world_size) + ", not " +
           std::to_string(a.world_size);
  if (!a.distributed_backend.empty() && !b.distributed_backend.empty() &&
      a.distributed_backend != b.distributed_backend)
    return "its distributed backend is " + b.distributed_backend + ", not " + a.distributed_backend;
  for (const auto key : kRunIdentityKeys) {
    const auto va = a.ddpscope.configValue(key), vb = b.ddpscope.configValue(key);
    // A setting one file lacks is no clash.
    if (va.empty() || vb.empty() || sameSetting(va, vb)) continue;
    return "its " + std::string(key) + " is " + settingText(key, vb) + ", not " +
           settingText(key, va);
  }
  return std::nullopt;
}

bool startsAsRunDigest(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return false;
  gzFile f = gzopen(path.c_str(), "rb");  // reads plain files as they are
  if (!f) return false;
  char head[64] = {};
  const int n = gzread(f, head, sizeof head);
  gzclose(f);
  if (n <= 0) return false;
  const std::string_view s(head, static_cast<std::size_t>(n));
  const auto open = s.find_first_not_of(" \t\r\n");
  if (open == std::string_view::npos || s[open] != '{') return false;
  const auto key = s.find_first_not_of(" \t\r\n", open + 1);
  return key != std::string_view::npos && s.substr(key).starts_with("\"ddpscope_digest\"");
}

namespace {
// The names of a folder's subfolders that hold trace files (sorted; at most `most`).
struct TraceSubfolder {
  std::string name;
  bool has_rank0 = false;  // holds a rank-0 trace: a run of its own, not a node's share
};
std::vector<TraceSubfolder> subfoldersWithTraces(const std::string& folder, std::size_t most) {
  std::vector<TraceSubfolder> out;
  std::error_code ec;
  for (fs::directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code e;
    if (!it->is_directory(e)) continue;
    TraceSubfolder sub{it->path().filename().string()};
    bool any = false;
    for (fs::directory_iterator f(it->path(), e), fend; !e && f != fend; f.increment(e)) {
      std::error_code fe;
      const auto name = f->path().filename().string();
      if (f->is_regular_file(fe) && hasTraceSuffix(name) && !name.starts_with(".") &&
          !startsAsRunDigest(f->path().string())) {
        any = true;
        if (name.starts_with("rank-0.")) {
          sub.has_rank0 = true;
          break;
        }
      }
    }
    if (any) out.push_back(std::move(sub));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  if (out.size() > most) out.resize(most + 1);  // one more than shown: "and more"
  return out;
}
}  // namespace

std::vector<std::string> expandTracePaths(const std::vector<std::string>& paths,
                                          std::vector<std::string>* skipped) {
  std::vector<std::string> files;
  for (const auto& p : paths) {
    std::error_code ec;
    if (!fs::is_directory(p, ec)) {
      files.push_back(p);
      continue;
    }
    std::vector<std::string> ranks, any;
    for (const auto& entry : fs::directory_iterator(p, ec)) {
      if (!entry.is_regular_file(ec)) continue;
      const auto name = entry.path().filename().string();
      if (!hasTraceSuffix(name) || name.starts_with(".")) continue;
      // A digest kept beside its traces is not one of them.
      if (!name.starts_with("rank-") && startsAsRunDigest(entry.path().string())) continue;
      any.push_back(entry.path().string());
      if (name.starts_with("rank-")) ranks.push_back(entry.path().string());
    }
    auto& chosen = ranks.empty() ? any : ranks;
    if (skipped && !ranks.empty() && any.size() > ranks.size()) {
      for (const auto& f : any)
        if (!fs::path(f).filename().string().starts_with("rank-")) skipped->push_back(f);
    }
    if (chosen.empty()) {
      std::string kinds;
      for (const auto& ext : importableExtensions())
        kinds += (kinds.empty() ? "*" : ", *") + ext;
      std::string hint;
      constexpr std::size_t kShown = 4;
      if (const auto subs = subfoldersWithTraces(p, kShown); !subs.empty()) {
        std::string list, example;
        std::size_t own_runs = 0;
        for (std::size_t k = 0; k < std::min(subs.size(), kShown); ++k) {
          list += (list.empty() ? "" : ", ") + subs[k].name;
          example += (example.empty() ? "'" : " '") + (fs::path(p) / subs[k].name).string() + "'";
          own_runs += subs[k].has_rank0 ? 1 : 0;
        }
        if (subs.size() > kShown) list += " and more";
        // Two with a rank 0 each are two runs (a sweep's folders), not one run's nodes.
        if (own_runs >= 2) {
          const auto one =
              std::find_if(subs.begin(), subs.end(), [](const auto& sub) { return sub.has_rank0; });
          hint = "; its subfolders " + list +
                 " hold some, each with a rank 0 (runs of their own): give one of them (e.g. '" +
                 (fs::path(p) / one->name).string() + "')";
        } else {
          hint = "; its subfolders " + list + " hold some: give them together as one run (e.g. " +
                 example + (subs.size() > kShown ? " …" : "") + ")";
        }
      }
      throw TraceError(p, kNoOffset, "the folder contains no trace files (" + kinds + ")" + hint);
    }
    std::sort(chosen.begin(), chosen.end());
    files.insert(files.end(), chosen.begin(), chosen.end());
  }
  return files;
}

namespace {
// The latest time (end of an event, step or flow) of a rank, or 0 when it has none.
TimeNs latestTime(const RankTrace& r) {
  TimeNs latest = 0;
  for (const auto& t : r.tracks) {
    for (std::size_t i = 0; i < t.size(); ++i)
      latest = std::max(latest, t.end(i));
  }
  for (const auto& f : r.flows)
    latest = std::max({latest, f.from_ts, f.to_ts});
  return latest;
}
}  // namespace

void numberRanksAcrossFiles(std::vector<std::vector<RankNumber>>& files) {
  if (files.size() < 2) return;
  std::size_t total = 0;
  for (const auto& f : files)
    total += f.size();
  std::int32_t next_by_order = 0;
  for (auto& f : files) {
    std::int32_t file_max = -1;
    for (auto& r : f) {
      if (r.origin == RankOrigin::Order) {
        const auto own = r.rank;
        r.rank += next_by_order;
        if (r.rank != own) {
          r.note = "numbered rank " + std::to_string(r.rank) + " (rank " + std::to_string(own) +
                   " of its file, after the ranks of the files before it)";
        }
        if (!r.world_size_declared)
          r.world_size = std::max<std::int32_t>(r.world_size, static_cast<std::int32_t>(total));
      }
      file_max = std::max(file_max, r.rank);
    }
    next_by_order = std::max(next_by_order, file_max + 1);
  }
}

void alignRanks(Run& run) {
  if (run.ranks.empty()) return;
  const RankTrace* earliest = &run.ranks.front();
  for (const auto& r : run.ranks) {
    if (r.base_time_ns < earliest->base_time_ns) earliest = &r;
  }
  const TimeNs base = earliest->base_time_ns;
  // Each rank moves later by the distance of its base from the earliest; all of it must still
  // fit in a trace's span. (Unsigned: the exact distance even when TimeNs would overflow.)
  for (const auto& r : run.ranks) {
    const std::uint64_t delta =
        static_cast<std::uint64_t>(r.base_time_ns) - static_cast<std::uint64_t>(base);
    const std::uint64_t latest = static_cast<std::uint64_t>(std::max<TimeNs>(latestTime(r), 0));
    const auto limit = static_cast<std::uint64_t>(kMaxTraceSpanNs);
    if (delta > limit || latest > limit - delta) {
      throw TraceError(r.path, kNoOffset,
                       "its clock (baseTimeNanoseconds " + std::to_string(r.base_time_ns) +
                           ") is " + std::to_string(delta / 1'000'000'000) +
                           " s away from that of " +
                           (earliest->path.empty() ? std::string("another rank") : earliest->path) +
                           " (" + std::to_string(base) +
                           "): ranks that far apart cannot share one time base; open the files "
                           "as separate runs");
    }
  }
  for (auto& r : run.ranks)
    r.shiftTimes(r.base_time_ns - base);
  run.base_time_ns = base;
}

std::optional<std::string> rankOutsideDeclaredWorld(const RankTrace& declared, const RankTrace& r,
                                                    bool numbered_by_order) {
  if (declared.world_size < 2 || r.rank < declared.world_size) return std::nullopt;
  return "its rank " + std::to_string(r.rank) +
         (numbered_by_order ? " (numbered by its processes' order, after the files before it)"
                            : std::string()) +
         " is outside the world of " + std::to_string(declared.world_size) + " ranks that " +
         declared.path + " declares: the files are not from one run (open each run's files " +
         "separately" + (numbered_by_order ? "; if they are, give this file first" : "") + ")";
}

void refuseRepeatedFiles(const std::vector<std::string>& files) {
  std::map<std::string, std::string> seen;  // canonical path -> as given
  for (const auto& f : files) {
    std::error_code ec;
    std::string key = fs::weakly_canonical(f, ec).string();
    if (ec) key = f;
    const auto [it, fresh] = seen.emplace(key, f);
    if (!fresh) {
      throw TraceError(f, kNoOffset,
                       "this file was given twice" +
                           (it->second == f ? std::string() : " (also as " + it->second + ")") +
                           ": give each rank's file once");
    }
  }
}

Run loadRun(const std::vector<std::string>& paths, const RunLoadOptions& options) {
  std::vector<std::string> skipped;
  const auto files = expandTracePaths(paths, &skipped);
  if (files.empty()) throw TraceError("", kNoOffset, "no trace files given");
  refuseRepeatedFiles(files);
  Run run;
  // A file may hold several ranks (an Nsight Systems capture of several processes).
  std::vector<std::vector<ImportedRank>> read(files.size());
  std::vector<std::exception_ptr> errors(files.size());
  std::vector<double> fraction(files.size(), 0.0);
  std::mutex progress_mutex;
  std::atomic<std::size_t> next{0};

  // Files are read in parallel, one per thread; a file gets the cores the others leave free to
  // parse its pieces (one big file: all of them).
  const unsigned cores =
      options.threads ? options.threads : std::max(1u, std::thread::hardware_concurrency());
  const unsigned threads = std::min<unsigned>(cores, static_cast<unsigned>(files.size()));
  const unsigned threads_per_file = std::max(1u, cores / threads);

  auto worker = [&] {
    for (;;) {
      const std::size_t i = next.fetch_add(1);
      if (i >= files.size()) break;
      try {
        ReadOptions ro;
        ro.limits = options.limits;
        ro.cancel = options.cancel;
        ro.threads = threads_per_file;
        if (options.progress) {
          ro.progress = [&, i](double f) {
            std::lock_guard lock(progress_mutex);
            fraction[i] = f;
            double sum = 0;
            for (double x : fraction)
              sum += x;
            options.progress(sum / static_cast<double>(files.size()));
          };
        }
        read[i] = importFile(files[i], ro);
      } catch (...) {
        errors[i] = std::current_exception();
      }
    }
    releaseReaderMemory();
  };
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (auto& t : pool)
    t.join();
  // The failures, once: files that cannot be read (a TraceError each), and any other error
  // (cancellation among them).
  std::vector<std::pair<std::size_t, std::string>> cannot_read;  // (file, why)
  std::optional<UnreadableRunFiles> first_unreadable;
  bool other_error = false;
  const auto read_files =
      static_cast<std::size_t>(std::count(errors.begin(), errors.end(), nullptr));
  for (std::size_t i = 0; i < errors.size(); ++i) {
    if (!errors[i]) continue;
    try {
      std::rethrow_exception(errors[i]);
    } catch (const TraceError& x) {
      if (!first_unreadable) first_unreadable.emplace(x, read_files, files.size() - read_files);
      cannot_read.emplace_back(i, x.what());
    } catch (...) {
      other_error = true;
    }
  }
  std::vector<std::string> unreadable;
  if (read_files > 0 && options.skip_unreadable) {
    // Left out as asked (a run none of whose files can be read is still an error).
    for (auto& [i, why] : cannot_read) {
      unreadable.push_back(std::move(why));
      errors[i] = nullptr;
    }
  } else if (read_files > 0 && first_unreadable && !other_error) {
    // Said so that the caller can offer to load the run without them.
    throw *first_unreadable;
  }
  // Cancellation wins over other errors; otherwise the first failing file is reported.
  rethrowPreferring<LoadCancelled>(errors);
  std::vector<std::vector<RankNumber>> numbers(read.size());
  std::size_t total = 0;
  for (std::size_t i = 0; i < read.size(); ++i) {
    for (const auto& r : read[i])
      numbers[i].push_back(
          {r.origin, r.trace.rank, r.trace.world_size, r.trace.world_size_declared, {}});
    total += read[i].size();
  }
  numberRanksAcrossFiles(numbers);
  std::set<std::string> by_order_paths;  // files whose ranks were numbered by process order
  run.ranks.reserve(total);
  for (std::size_t i = 0; i < read.size(); ++i) {
    for (std::size_t k = 0; k < read[i].size(); ++k) {
      RankTrace& t = read[i][k].trace;
      t.rank = numbers[i][k].rank;
      t.world_size = numbers[i][k].world_size;
      if (!numbers[i][k].note.empty()) t.warnings.push_back(numbers[i][k].note);
      if (numbers[i][k].origin == RankOrigin::Order) by_order_paths.insert(t.path);
      run.ranks.push_back(std::move(t));
    }
  }
  read.clear();
  std::stable_sort(run.ranks.begin(), run.ranks.end(),
                   [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  for (std::size_t i = 1; i < run.ranks.size(); ++i) {
    if (run.ranks[i].rank == run.ranks[i - 1].rank) {
      throw TraceError(run.ranks[i].path, kNoOffset,
                       "rank " + std::to_string(run.ranks[i].rank) + " is also in " +
                           run.ranks[i - 1].path +
                           "; a run holds one file per rank (open the files as separate runs)");
    }
  }
  // Files of different runs: their ranks would be pooled into nonsense numbers.
  // Each file is compared with the first, and with the first that declares its world size.
  const auto declared = std::find_if(run.ranks.begin(), run.ranks.end(), [](const RankTrace& r) {
    return r.world_size_declared && r.world_size > 0;
  });
  for (const auto& r : run.ranks) {
    for (const RankTrace* ref :
         {&run.ranks.front(), declared == run.ranks.end() ? nullptr : &*declared}) {
      if (ref == nullptr || ref == &r) continue;
      if (const auto why = runIdentityDifference(*ref, r)) {
        throw TraceError(r.path, kNoOffset,
                         *why + " as in " + ref->path +
                             ": the files are not from one run (open each run's files separately)");
      }
    }
    if (declared == run.ranks.end()) continue;
    if (const auto why = rankOutsideDeclaredWorld(*declared, r, by_order_paths.contains(r.path)))
      throw TraceError(r.path, kNoOffset, *why);
  }
  alignRanks(run);
  const fs::path first(files.front());
  run.name =
      files.size() == 1 ? first.filename().string() : first.parent_path().filename().string();
  for (const auto& r : run.ranks) {
    for (const auto& w : r.warnings)
      run.warnings.push_back(r.path + ": " + w);
  }
  run.skipped_files = std::move(skipped);
  run.unreadable_files = std::move(unreadable);
  if (options.progress) options.progress(1.0);
  return run;
}

}  // namespace ddpscope::trace
