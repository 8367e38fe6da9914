#include "importer.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <fstream>
#include <limits>
#include <mutex>

#include "kineto_importer.h"
#include "nsys_importer.h"
#include "trace_error.h"

namespace ddpscope::trace {

namespace {

struct Registry {
  std::mutex mutex;
  std::vector<std::shared_ptr<const Importer>> list;
  bool built_in_added = false;
};

Registry& registry() {
  static Registry r;
  return r;
}

// The built-in formats, one line each; the first is the fallback for files no importer
// recognises.
void addBuiltIns(std::vector<std::shared_ptr<const Importer>>& list) {
  list.insert(list.begin(), {makeKinetoImporter(), makeNsysImporter(), makeNsysReportImporter()});
}

std::vector<std::shared_ptr<const Importer>>& builtInsAdded(Registry& r) {
  if (!r.built_in_added) {
    addBuiltIns(r.list);
    r.built_in_added = true;
  }
  return r.list;
}

bool endsWith(std::string_view s, std::string_view suffix) {
  if (s.size() < suffix.size()) return false;
  for (std::size_t i = 0; i < suffix.size(); ++i) {
    const auto a = static_cast<unsigned char>(s[s.size() - suffix.size() + i]);
    const auto b = static_cast<unsigned char>(suffix[i]);
    if (std::tolower(a) != std::tolower(b)) return false;
  }
  return true;
}

}  // namespace

std::string_view rankOriginName(RankOrigin origin) {
  switch (origin) {
    case RankOrigin::Declared:
      return "declared";
    case RankOrigin::Environment:
      return "environment";
    case RankOrigin::Order:
      return "order";
  }
  return "declared";
}

std::vector<std::shared_ptr<const Importer>> importers() {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  return builtInsAdded(r);
}

std::shared_ptr<const Importer> registerImporter(std::shared_ptr<const Importer> importer) {
  if (!importer) return importer;
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  builtInsAdded(r).push_back(importer);
  return importer;
}

void unregisterImporter(const Importer* importer) {
  auto& r = registry();
  std::lock_guard lock(r.mutex);
  auto& list = builtInsAdded(r);
  list.erase(
      std::remove_if(list.begin(), list.end(), [&](const auto& p) { return p.get() == importer; }),
      list.end());
}

std::optional<std::string> readFileHead(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::string head(kSniffBytes, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  if (in.bad()) return std::nullopt;
  head.resize(static_cast<std::size_t>(in.gcount()));
  return head;
}

namespace {
// Bytes no text trace starts with: a NUL or a control character other than white space (a PNG's
// \x1a, an ELF's \0), unless the text is UTF-16 (its byte order mark).
bool looksBinary(std::string_view head) {
  if (head.starts_with("\xFF\xFE") || head.starts_with("\xFE\xFF")) return false;
  return std::any_of(head.begin(), head.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f';
  });
}
}  // namespace

std::shared_ptr<const Importer> importerFor(const std::string& path) {
  const auto list = importers();
  if (list.empty()) throw TraceError(path, kNoOffset, "no importers are registered");
  if (const auto head = readFileHead(path); head && !head->empty()) {
    for (const auto& imp : list) {
      if (imp->sniff(*head, path)) return imp;
    }
    // Binary bytes no importer recognised: only an importer claiming the name's extension (other
    // than the JSON fallback) may still say what the file is; otherwise it is not a trace.
    if (looksBinary(*head)) {
      for (std::size_t i = 1; i < list.size(); ++i) {
        for (const auto& ext : list[i]->extensions()) {
          if (endsWith(path, ext)) return list[i];
        }
      }
      throw TraceError(path, kNoOffset, "not a trace (binary content)");
    }
  }
  for (const auto& imp : list) {
    for (const auto& ext : imp->extensions()) {
      if (endsWith(path, ext)) return imp;
    }
  }
  return list.front();
}

std::vector<ImportedRank> importFile(const std::string& path, const ReadOptions& options) {
  return importerFor(path)->read(path, options);
}

std::vector<std::string> importableExtensions() {
  std::vector<std::string> out;
  for (const auto& imp : importers()) {
    for (auto& ext : imp->extensions()) {
      if (std::find(out.begin(), out.end(), ext) == out.end()) out.push_back(std::move(ext));
    }
  }
  return out;
}

bool hasImportableExtension(std::string_view file_name) {
  const auto exts = importableExtensions();
  return std::any_of(exts.begin(), exts.end(),
                     [&](const std::string& e) { return endsWith(file_name, e); });
}

std::string dialogNameFilter() {
  std::string out = "Traces (";
  bool first = true;
  for (const auto& ext : importableExtensions()) {
    if (!first) out += ' ';
    out += '*';
    out += ext;
    first = false;
  }
  return out + ")";
}

std::optional<std::int32_t> rankFromFileName(std::string_view path) {
  const auto slash = path.find_last_of('/');
  const auto base = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  if (!base.starts_with("rank-") && !base.starts_with("rank_")) return std::nullopt;
  std::int32_t r = 0;
  const auto digits = base.substr(5);
  const auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), r);
  if (ec != std::errc() || ptr == digits.data()) return std::nullopt;
  return r;
}

void finishImportedRank(RankTrace& trace) {
  TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
  for (const auto& t : trace.tracks) {
    for (std::size_t i = 0; i < t.size(); ++i) {
      lo = std::min(lo, t.start[i]);
      hi = std::max(hi, t.start[i] + t.dur[i]);
    }
  }
  if (lo <= hi) {
    const auto spread = static_cast<std::uint64_t>(hi) - static_cast<std::uint64_t>(lo);
    if (spread > static_cast<std::uint64_t>(kMaxTraceSpanNs)) {
      throw TraceError(trace.path, kNoOffset,
                       "its events spread over " + std::to_string(spread / 1'000'000'000) +
                           " s: timestamps this far apart are corrupt or from different clocks");
    }
  }
  canonicalize(trace);
  trace.rebaseToEarliestEvent();
}

void warnCount(RankTrace& trace, std::int64_t count, std::string_view what) {
  if (count > 0) trace.warnings.push_back(std::to_string(count) + " " + std::string(what));
}

}  // namespace ddpscope::trace
