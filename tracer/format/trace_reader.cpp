#include "trace_reader.h"

// The reader's parser is in parts (trace_parser.h lists them); this one reads one document: the
// parser's memory, the whole parse, errors located and explained, and the finished RankTrace.
#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <optional>
#include <typeinfo>

#include "importer.h"
#include "json_locate.h"
#include "memory.h"
#include "trace_error.h"
#include "trace_json_values.h"
#include "trace_parser.h"

namespace ddpscope::trace {

namespace reader {

namespace {
constexpr std::size_t kMinParserBytes = std::size_t{16} << 20;
}  // namespace

ReaderScratch& threadScratch() {
  thread_local ReaderScratch scratch;
  return scratch;
}

ReadStats& threadReadStats() {
  thread_local ReadStats stats;
  return stats;
}

TraceError TraceParser::jsonError(simdjson::error_code code) const {
  const std::string_view text = json_.view();
  std::string context;
  if (event_offset_ != kNoOffset) context = " in traceEvents[" + std::to_string(event_index_) + "]";
  if (const auto problem = locateJsonProblem(text)) {
    std::string what = "invalid JSON" + context + " at " + lineAndColumn(text, problem->offset) +
                       ": " + problem->what;
    if (!problem->truncated) {
      const auto near = excerptAt(text, problem->offset);
      if (!near.empty()) what += " (near \"" + near + "\")";
    }
    return TraceError(name_, problem->offset, what);
  }
  return TraceError(name_, event_offset_, describeJsonError(code) + context);
}

void TraceParser::checkTimes() {
  for (const auto& f : out_.flows) {
    min_start_ = std::min({min_start_, f.from_ts, f.to_ts});
    max_end_ = std::max({max_end_, f.from_ts, f.to_ts});
  }
  if (min_start_ > max_end_) return;  // no timed events
  // Exact even when the signed difference would overflow.
  const std::uint64_t span =
      static_cast<std::uint64_t>(max_end_) - static_cast<std::uint64_t>(min_start_);
  if (span > static_cast<std::uint64_t>(kMaxTraceSpanNs)) {
    throw TraceError(name_, kNoOffset,
                     "the events span more than 146 years (from ts " + microsText(min_start_) +
                         " to " + microsText(max_end_) +
                         " us): some timestamps are corrupt or come from different clocks");
  }
  const TimeNs base = out_.base_time_ns;
  if ((min_start_ > 0 && base > std::numeric_limits<TimeNs>::max() - min_start_) ||
      (min_start_ < 0 && base < std::numeric_limits<TimeNs>::min() - min_start_)) {
    throw TraceError(name_, kNoOffset,
                     "baseTimeNanoseconds (" + std::to_string(base) + ") plus the earliest ts (" +
                         microsText(min_start_) +
                         " us) is outside the times a trace can hold (years 1678 to 2261)");
  }
}

void TraceParser::checkCancel(const char* where) {
  if (options_.cancel && options_.cancel->load(std::memory_order_relaxed)) throw LoadCancelled();
  if (options_.progress && json_.size() > 0) {
    const auto off = offsetOf(where);
    if (off != kNoOffset)
      options_.progress(static_cast<double>(off) / static_cast<double>(json_.size()));
  }
}

void TraceParser::prepareScratch(std::size_t parser_bytes, std::size_t json_bytes) {
  out_.path = name_;
  // Fresh parser memory costs a page fault per 4 KiB touched, which dominated loading: reuse
  // one parser per thread, sized with some headroom so the next rank's file of a run usually
  // fits. releaseReaderMemory() gives it back. A helper parsing pieces on a thread of its own
  // has its own, which outlives that thread until its rows are merged.
  scratch_ = owned_scratch_ ? owned_scratch_.get() : &threadScratch();
  if (scratch_->parser.capacity() < parser_bytes) {
    scratch_->parser = od::parser();
    const std::size_t want = std::max(parser_bytes + parser_bytes / 8, kMinParserBytes);
    if (scratch_->parser.allocate(want) != simdjson::SUCCESS) {
      throw TraceError(
          name_, kNoOffset,
          "not enough memory to parse a " + std::to_string(json_.size() >> 20) + " MiB trace");
    }
  }
  staged_ = &scratch_->staged;
  staged_->clear();
  // Our events are about 200 bytes of JSON and Kineto's more: this rarely has to grow.
  const std::size_t estimate = json_bytes / 128 + 1024;
  if (staged_->capacity() < estimate) {
    staged_->reserve(estimate);
    adviseHugePages(staged_->data(), estimate * sizeof(StagedEvent));
  }
}

void TraceParser::parseDocument(const char* begin, std::size_t size, std::size_t capacity) {
  od::document doc = scratch_->parser.iterate(begin, size, capacity);
  od::json_type type = doc.type();
  if (type == od::json_type::array) {
    parseEvents(doc.get_array());  // a bare Chrome-trace event array
  } else if (type == od::json_type::object) {
    parseTopLevel(doc.get_object());
  } else {
    throw TraceError(name_, 0, "expected a JSON object with a \"traceEvents\" array");
  }
  // Anything but whitespace after the document is an error.
  const char* rest = nullptr;
  if (doc.current_location().get(rest) == simdjson::SUCCESS && rest != nullptr) {
    throw TraceError(name_, offsetOf(rest),
                     "unexpected content after the end of the JSON document");
  }
}

RankTrace TraceParser::parse() {
  prepareScratch(json_.size(), json_.size());
  // A UTF-8 byte-order mark is not JSON but harmless (some Windows editors write one): skip it.
  const std::size_t bom =
      json_.size() >= 3 && std::memcmp(json_.data(), "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
  try {
    parseDocument(json_.data() + bom, json_.size() - bom, json_.capacity() - bom);
  } catch (const simdjson::simdjson_error& e) {
    throw jsonError(e.error());
  } catch (const FormatProblem& p) {
    throw TraceError(name_, p.offset,
                     "traceEvents[" + std::to_string(event_index_) + "]: " + p.what);
  }
  return finish();
}

RankTrace TraceParser::finish() {
  if (!saw_events_) {
    // A run digest (ddpscope-cli digest) begins with its version key.
    const std::string_view head(json_.data(), std::min<std::size_t>(json_.size(), 64));
    if (head.find("\"ddpscope_digest\"") != std::string_view::npos)
      throw TraceError(name_, kNoOffset,
                       "this is a run digest (ddpscope-cli digest), not a trace: open it in the "
                       "app's window (its Digest tab), or give the trace files it was made from");
    throw TraceError(name_, kNoOffset,
                     "no \"traceEvents\" array: this is not a Chrome/Kineto trace");
  }
  if (releasable_ != nullptr) *releasable_ = PaddedBuffer();  // json_ is empty from here on
  moveStagedIntoTracks();
  resolveFlows();
  out_.sortCollectiveArgs();
  tallies_.report(out_.warnings);
  if (!saw_rank_) {
    // Fall back to the file name: rank-<r>.json[.gz] (the rule every importer shares).
    if (const auto r = rankFromFileName(name_)) out_.rank = *r;
  }
  if (out_.world_size < 1) out_.world_size = 1;
  out_.world_size_declared = saw_world_size_;
  checkTimes();
  canonicalize(out_);
  out_.rebaseToEarliestEvent();
  return std::move(out_);
}

}  // namespace reader

void releaseReaderMemory() {
  auto& scratch = reader::threadScratch();
  scratch.parser = simdjson::ondemand::parser();
  std::vector<reader::StagedEvent>().swap(scratch.staged);
  scratch.piece = PaddedBuffer();
  scratch.whole = PaddedBuffer();
}

namespace {

SourceUnreadable fileChanged(const std::string& name) {
  return SourceUnreadable(name, kNoOffset,
                          "the file changed while it was loading (its size or time is not what "
                          "it was when loading began): load it again once it is complete");
}

// The document parsed a piece of the event array at a time (parseInPieces), or nothing when
// that path cannot take it: the whole-document parse then reads it, and words every error
// exactly. `releasable`: the parser may release `json` (it is json) once every event is staged;
// `editable`: json, when the parser may write a few bytes around each piece and put them back;
// `source`: the buffer holding the file's map, whose change since it was opened is an error.
std::optional<RankTrace> parsedInPieces(const PaddedBuffer& json, PaddedBuffer* releasable,
                                        PaddedBuffer* editable, const PaddedBuffer& source,
                                        const std::string& name, const ReadOptions& options) {
  try {
    reader::TraceParser pieces(json, name, options);
    pieces.releaseInputWhenParsed(releasable);
    if (editable != nullptr) pieces.editInPlace(editable);
    return pieces.parseInPieces();
  } catch (const LoadCancelled&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (const SourceUnreadable&) {
    throw;  // the whole-document parse would read the same changed file through its map
  } catch (...) {
    // Released: every event was read, and what failed after that (the checks of the whole
    // trace) says the same as the whole-document parse would.
    if (json.size() == 0) throw;
    // A file rewritten since it was opened: its map may now end early (and reading it would
    // fault); what failed may be the rewrite itself.
    if (source.sourceChanged()) throw fileChanged(name);
  }
  return std::nullopt;
}

// `releasable`: the parser may release `json` (it is json) once every event is staged.
RankTrace parseBuffer(const PaddedBuffer& json, PaddedBuffer* releasable, const std::string& name,
                      const ReadOptions& options) {
  if (json.size() == 0) throw TraceError(name, 0, "the file is empty");
  // Big documents are parsed a piece of the event array at a time (bounded, warm parser
  // memory). Whatever that path cannot take, and every error, goes through the whole-document
  // parse, which gives the exact message.
  const bool in_pieces = options.piece_bytes > 0 && json.size() >= 4 * options.piece_bytes;
  const bool copied_whole = json.hasSource() && json.size() <= options.copy_whole_at_most;
  if (in_pieces && !copied_whole) {
    if (auto trace = parsedInPieces(json, releasable, releasable, json, name, options)) {
      return std::move(*trace);
    }
  }
  // A mapped file of up to 16 MiB (by default) is copied whole by the kernel into this thread's
  // warm buffer, as the pieces of a bigger one are, and parsed there (its file hash taken on the
  // way): the map's pages, whose first touch is what costs (PERFORMANCE.md), stay untouched.
  if (copied_whole) {
    PaddedBuffer& copy = reader::threadScratch().whole;
    if (copy.capacity() > 0) copy.setSize(0);
    copy.reserveMore(json.size(), json.size() + PaddedBuffer::kPadding);  // no growth slack
    reader::copySource(json, 0, json.size(), copy.data(), name);
    copy.setSize(json.size());
    if (options.content_hash != nullptr) *options.content_hash = contentHash(copy.view());
    std::optional<RankTrace> trace;
    if (in_pieces) trace = parsedInPieces(copy, nullptr, &copy, json, name, options);
    if (trace) {
      if (releasable != nullptr) *releasable = PaddedBuffer();
      return std::move(*trace);
    }
    try {
      trace = reader::TraceParser(copy, name, options).parse();
    } catch (const LoadCancelled&) {
      throw;
    } catch (const std::bad_alloc&) {
      throw;
    } catch (...) {
      if (json.sourceChanged()) throw fileChanged(name);  // what failed may be the rewrite
      throw;
    }
    if (releasable != nullptr) *releasable = PaddedBuffer();
    reader::threadReadStats() = ReadStats{};
    return std::move(*trace);
  }
  reader::TraceParser parser(json, name, options);
  parser.releaseInputWhenParsed(releasable);
  auto trace = parser.parse();
  reader::threadReadStats() = ReadStats{};
  return trace;
}

}  // namespace

RankTrace parseTrace(const PaddedBuffer& json, const std::string& name,
                     const ReadOptions& options) {
  return parseBuffer(json, nullptr, name, options);
}

ReadStats lastReadStats() {
  return reader::threadReadStats();
}

RankTrace parseTraceText(std::string_view json, const std::string& name,
                         const ReadOptions& options) {
  PaddedBuffer buffer(json);
  return parseTrace(buffer, name, options);
}

namespace {

// What became of a .json.gz given to parseWhileInflating when no trace came back.
enum class Streamed {
  NotTried,      // it does not apply: `compressed` untouched
  NoPieces,      // the layout does not allow pieces: `compressed` now holds the inflated document
  StreamFailed,  // the gzip stream is not what its trailer says: read the file the usual way
  ParseFailed,   // the stream was whole but the pieces failed: the whole-document parse decides
};

// A .json.gz whose events would be parsed in pieces on one thread (PERFORMANCE.md, "Against
// Holistic Trace Analysis"), with a second core to spare, is parsed while a second thread
// inflates it (StreamedInflate): the inflating hides behind the parse.
std::optional<RankTrace> parseWhileInflating(PaddedBuffer& compressed, const std::string& path,
                                             const ReadOptions& options, Streamed* outcome) {
  *outcome = Streamed::NotTried;
  const auto stated = gzipStatedSize(compressed.view());
  if (options.threads < 2 || options.piece_bytes == 0 || !stated ||
      *stated > options.limits.max_bytes || *stated < 4 * options.piece_bytes ||
      reader::piecesThreads(*stated / options.piece_bytes, options.threads) > 1)
    return std::nullopt;
  StreamedInflate stream(std::move(compressed), static_cast<std::size_t>(*stated));
  PaddedBuffer& bytes = stream.buffer();
  bytes.allowDiscard();  // pages of parsed pieces are given back as they go
  try {
    reader::TraceParser pieces(bytes, path, options);
    pieces.releaseInputWhenParsed(&bytes);
    pieces.editInPlace(&bytes);
    pieces.inflatedBy(&stream);
    if (auto trace = pieces.parseInPieces()) return trace;
    // Nothing of the document was parsed or given back yet: it is whole once the stream is.
    *outcome = stream.waitFor(bytes.size()) ? Streamed::NoPieces : Streamed::StreamFailed;
    if (*outcome == Streamed::NoPieces) compressed = std::move(bytes);
    return std::nullopt;
  } catch (const LoadCancelled&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (...) {
    *outcome = stream.waitFor(bytes.size()) ? Streamed::ParseFailed : Streamed::StreamFailed;
    return std::nullopt;
  }
}

// The whole-document parse of a file read again, which words the error exactly (the pieces
// failed already, and their bytes were given back).
RankTrace parseWholeReadAgain(const std::string& path, const ReadOptions& options) {
  ReadOptions whole = options;
  whole.piece_bytes = 0;
  PaddedBuffer bytes = readTraceBytes(path, options.limits);
  return parseBuffer(bytes, &bytes, path, whole);
}

RankTrace readTraceFileAsItIs(const std::string& path, const ReadOptions& options) {
  // The file's bytes are given back as soon as every event is read, before the events are
  // written into the model's columns: the peak holds the one or the other, not both.
  PaddedBuffer bytes =
      readTraceBytes(path, options.limits, options.content_hash, options.threads, false);
  if (isGzip(bytes.view())) {
    Streamed streamed = Streamed::NotTried;
    if (auto trace = parseWhileInflating(bytes, path, options, &streamed)) return std::move(*trace);
    switch (streamed) {
      case Streamed::NotTried:
        bytes = inflateBytes(bytes.view(), path, options.limits, options.threads);
        break;
      case Streamed::NoPieces:
        break;  // inflated whole by the stream
      case Streamed::StreamFailed:
      case Streamed::ParseFailed: {
        // Said in the read's statistics however the read again ends (a trace or an error).
        struct FellBack {
          ~FellBack() { reader::threadReadStats().inflate_stream_fell_back = true; }
        } fell_back;
        if (streamed == Streamed::ParseFailed) return parseWholeReadAgain(path, options);
        ReadOptions usual = options;
        usual.threads = 1;  // inflated whole, then parsed
        return readTraceFileAsItIs(path, usual);
      }
    }
  }
  if (bytes.mapped()) return parseBuffer(bytes, &bytes, path, options);
  // Inflated (or read) into memory of our own: its pages are given back as the pieces are read,
  // as a map's are. Those bytes are then gone, so a trace that fails after some were given back
  // is read once more, whole, for the exact message (a failing file costs twice; none is lost).
  bytes.allowDiscard();
  try {
    return parseBuffer(bytes, &bytes, path, options);
  } catch (const LoadCancelled&) {
    throw;
  } catch (const std::bad_alloc&) {
    throw;
  } catch (...) {
    if (!bytes.pagesDiscarded()) throw;
  }
  // Straight to the whole-document parse, which gives the message (the pieces failed already).
  return parseWholeReadAgain(path, options);
}

// Whether the file's first bytes are gzip's magic number (false when it cannot be read).
bool startsAsGzip(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  char head[2] = {};
  return in.read(head, 2) && isGzip(std::string_view(head, 2));
}

}  // namespace

RankTrace readTraceFile(const std::string& path, const ReadOptions& options) {
  try {
    return readTraceFileAsItIs(path, options);
  } catch (const TraceError& e) {
    // A file named .gz that is not gzip is read as it is (a renamed trace still opens); when it
    // then fails, the name is the likelier mistake, and the message says so. Errors of another
    // kind (a file that changed while read) go on as they are.
    if (typeid(e) != typeid(TraceError)) throw;
    std::string ext = path.size() >= 3 ? path.substr(path.size() - 3) : std::string();
    std::transform(ext.begin(), ext.end(), ext.begin(),
                   [](unsigned char ch) { return static_cast<char>(std::tolower(ch)); });
    if (ext == ".gz" && !startsAsGzip(path))
      throw TraceError(e.file(), e.offset(),
                       e.detail() +
                           " (the name ends in .gz, but the file is not gzip-compressed: it was "
                           "read as plain text)");
    throw;
  }
}

}  // namespace ddpscope::trace
