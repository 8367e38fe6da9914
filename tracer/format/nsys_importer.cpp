// The Nsight Systems importers (nsys_importer.h): readNsysSqlite reads an export's tables in turn
// through the row mapper, and the importers of exports and of .nsys-rep reports.
#include <algorithm>
#include <filesystem>

#include "nsys_internal.h"

namespace ddpscope::trace {

namespace fs = std::filesystem;

std::vector<ImportedRank> readNsysSqlite(const std::string& path, const ReadOptions& options) {
  if (!options.limits.setting_error.empty())
    throw TraceError(path, kNoOffset, options.limits.setting_error);
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw TraceError(path, kNoOffset, "is a folder, not a file");
  if (!fs::exists(path, ec)) throw TraceError(path, kNoOffset, "no such file");
  const auto size = fs::file_size(path, ec);
  if (!ec && size > options.limits.max_bytes) {
    throw TraceError(path, kNoOffset,
                     "the export (" + std::to_string(size >> 20) +
                         " MiB) is larger than the limit of " +
                         std::to_string(options.limits.max_bytes >> 20) +
                         " MiB; set DDPSCOPE_MAX_TRACE_MB (in MiB) to allow more");
  }
  nsys::Database db(path, options);
  auto tables = db.tables();
  const bool any_cupti = std::any_of(tables.begin(), tables.end(), [](const std::string& t) {
    return t.starts_with("CUPTI_ACTIVITY_KIND_");
  });
  if (!tables.count("META_DATA_EXPORT") && !(tables.count("StringIds") && any_cupti)) {
    throw TraceError(path, kNoOffset,
                     "is an SQLite database but not an Nsight Systems export (it has no "
                     "META_DATA_EXPORT, StringIds or CUPTI_ACTIVITY_KIND_* tables); export a "
                     "report with: " +
                         std::string(nsys::kExportHint));
  }
  std::vector<std::string> notes;
  const auto [capture_start, base_utc] = nsys::readSchemaAndClock(db, tables, notes);
  NsysRowMapper mapper(path, capture_start, base_utc);
  for (auto& n : notes)
    mapper.addNote(std::move(n));

  nsys::ExportReader reader(db, std::move(tables), mapper, options);
  // The tables of rows, weighed for progress.
  reader.weigh({"StringIds", "CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY",
                "CUPTI_ACTIVITY_KIND_MEMSET", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS"});
  nsys::readStrings(reader);
  nsys::readProcessesAndRanks(reader);
  nsys::readGpuTables(reader);  // every GPU row before the host rows (gpuRowsDone)
  nsys::readRuntimeCalls(reader);
  nsys::readNvtxRanges(reader);
  db.checkCancel();
  auto ranks = mapper.finish();
  if (options.progress) options.progress(1.0);
  return ranks;
}

namespace {

class NsysImporter final : public Importer {
 public:
  std::string_view name() const override { return "Nsight Systems SQLite export"; }
  std::vector<std::string> extensions() const override { return {".sqlite"}; }
  // Every SQLite database: one that is not an Nsight export gets a clear error from read.
  bool sniff(std::string_view head, std::string_view) const override {
    return head.starts_with(std::string_view("SQLite format 3\0", 16));
  }
  std::vector<ImportedRank> read(const std::string& path,
                                 const ReadOptions& options) const override {
    return readNsysSqlite(path, options);
  }
};

class NsysReportImporter final : public Importer {
 public:
  std::string_view name() const override { return "Nsight Systems report (through nsys export)"; }
  std::vector<std::string> extensions() const override { return {".nsys-rep", ".qdrep"}; }
  // Recognised by its suffix only: the report's container format is not public.
  bool sniff(std::string_view, std::string_view path) const override {
    return path.ends_with(".nsys-rep") || path.ends_with(".qdrep");
  }
  std::vector<ImportedRank> read(const std::string& path,
                                 const ReadOptions& options) const override {
    ReadOptions export_options = options;
    if (options.progress) export_options.progress = [&](double f) { options.progress(0.5 * f); };
    const auto sqlite = exportNsysReport(path, export_options);
    ReadOptions read_options = options;
    if (options.progress)
      read_options.progress = [&](double f) { options.progress(0.5 + 0.5 * f); };
    auto ranks = readNsysSqlite(sqlite, read_options);
    for (auto& r : ranks)
      r.trace.path = path;
    return ranks;
  }
};

}  // namespace

std::shared_ptr<const Importer> makeNsysImporter() {
  return std::make_shared<NsysImporter>();
}
std::shared_ptr<const Importer> makeNsysReportImporter() {
  return std::make_shared<NsysReportImporter>();
}

}  // namespace ddpscope::trace
