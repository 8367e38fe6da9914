#pragma once
// The front door of the trace model (docs/IMPORTERS.md): every file format ddpscope opens is an
// Importer, found in one registry by the file's first bytes. The run loader, ddpscope-cli and
// the app's open dialog and drag-and-drop all go through it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trace_model.h"
#include "trace_reader.h"

namespace ddpscope::trace {

// How an imported rank got its number.
enum class RankOrigin : std::uint8_t {
  Declared,     // the file says so (distributedInfo.rank, the file name, an MPI rank table)
  Environment,  // the process's environment (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...)
  Order,        // the order of the processes in the file; continued across the files of a run
};
std::string_view rankOriginName(RankOrigin origin);  // "declared", "environment", "order"

// One rank read from a file. A file may hold several (an Nsight Systems capture of several
// processes).
struct ImportedRank {
  RankTrace trace;  // canonical (canonicalize, then rebased to its earliest event)
  RankOrigin origin = RankOrigin::Declared;
};

// The number of leading bytes an importer's sniff is given (fewer for shorter files).
inline constexpr std::size_t kSniffBytes = 64;

class Importer {
 public:
  Importer() = default;
  Importer(const Importer&) = delete;
  Importer& operator=(const Importer&) = delete;
  virtual ~Importer() = default;

  // Shown to users ("Kineto / Chrome trace JSON", "Nsight Systems SQLite export").
  virtual std::string_view name() const = 0;
  // File name endings offered in open dialogs and looked for in run folders (".json.gz").
  virtual std::vector<std::string> extensions() const = 0;
  // Whether a file whose first bytes are `head` is this importer's format. By content; `path`
  // is there only for formats whose content cannot be recognised (a vendor's container).
  virtual bool sniff(std::string_view head, std::string_view path) const = 0;
  // Reads every rank of one file. Throws TraceError naming the file on bad input and
  // LoadCancelled when options.cancel becomes true; tolerated oddities go to each rank's
  // warnings. options.progress goes from 0 to 1 over the file.
  virtual std::vector<ImportedRank> read(const std::string& path,
                                         const ReadOptions& options) const = 0;
};

// The registry: the built-in importers (Kineto JSON first, then Nsight Systems) followed by
// those registered at run time, in order. Thread-safe.
std::vector<std::shared_ptr<const Importer>> importers();
// Adds an importer; returns it. A format is added by one such call (or one ImporterRegistration
// object) and nothing else.
std::shared_ptr<const Importer> registerImporter(std::shared_ptr<const Importer> importer);
// Removes an importer added with registerImporter (tests).
void unregisterImporter(const Importer* importer);

// Registers an importer when constructed: `static const ImporterRegistration r{
// std::make_shared<MyImporter>()};` in the importer's own file of an executable.
struct ImporterRegistration {
  explicit ImporterRegistration(std::shared_ptr<const Importer> importer) {
    registerImporter(std::move(importer));
  }
};

// The first kSniffBytes of a file, or none when it cannot be read (missing, a folder, no
// permission: the importer's own read then says why).
std::optional<std::string> readFileHead(const std::string& path);

// The importer for a file: the first whose sniff accepts its first bytes; else the first whose
// extensions end the file name; else the first registered (Kineto JSON), whose reader says what
// is wrong with the file.
std::shared_ptr<const Importer> importerFor(const std::string& path);

// Reads one file with its importer.
std::vector<ImportedRank> importFile(const std::string& path, const ReadOptions& options = {});

// Whether a file name ends in an extension some importer offers.
bool hasImportableExtension(std::string_view file_name);
// Every extension offered, in registry order without repeats (".json", ".json.gz", ...).
std::vector<std::string> importableExtensions();
// An open dialog's name filter: "Traces (*.json *.json.gz ...)".
std::string dialogNameFilter();

// Steps every importer shares.
// The rank a file name gives (rank-<r>... or rank_<r>...), or none.
std::optional<std::int32_t> rankFromFileName(std::string_view path);
// Puts an imported rank into the canonical form readTraceFile gives: canonical order, steps
// derived, times rebased so the earliest event is at 0 (base_time_ns keeps absolute times).
// Throws TraceError naming the file when its events spread wider than kMaxTraceSpanNs.
void finishImportedRank(RankTrace& trace);
// Adds "<count> <what>" to the warnings when count > 0.
void warnCount(RankTrace& trace, std::int64_t count, std::string_view what);

}  // namespace ddpscope::trace
