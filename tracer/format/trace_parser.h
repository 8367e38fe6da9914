#pragma once
// The JSON trace reader's parser (readTraceFile, parseTrace), shared by the reader's files; not
// an interface of the library. Its parts:
//   trace_reader.cpp    one document: scratch memory, errors, the finished RankTrace
//   trace_pieces.cpp    a big document's event array in pieces, on several threads, merged
//   trace_events.cpp    Kineto / Chrome events -> rows of the model's tracks, flows
//   trace_metadata.cpp  the top-level keys: distributedInfo, the "ddpscope" block, ...
//   import_tallies.*    what was tolerated, counted
//   trace_json_values.* keys, strings, integers and times as the parts read them

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "file_io.h"
#include "import_tallies.h"
#include "trace_error.h"
#include "trace_model.h"
#include "trace_reader.h"

namespace ddpscope::trace::reader {

namespace od = simdjson::ondemand;

// A trace-format problem (valid JSON, wrong content), located at an offset.
struct FormatProblem {
  std::uint64_t offset;
  std::string what;
};

struct PendingFlowEnd {
  std::uint64_t id;
  NameId cat;
  NameId name;
  TimeNs ts;
  std::int64_t pid;  // the device of an end on a GPU track
  std::int64_t tid;  // its stream
  // The end names its device or stream in args (as ddpscope's writer does for the ends on GPU
  // tracks): only its GPU track is looked up, and the flow is dropped when there is none.
  bool gpu;
};

// One event as parsed, before it is moved into its track's columns: collecting rows first lets
// every column be allocated once at its exact size (no growth copies, no slack).
struct StagedEvent {
  TimeNs start;
  TimeNs dur;
  std::int64_t correlation;
  std::int64_t bytes;
  NameId name;
  NameId cat;
  std::int32_t bucket;
  std::int32_t step;
  std::int32_t track;
  EventKind kind;
};

// Per-thread memory reused from one file to the next.
struct ReaderScratch {
  od::parser parser;
  std::vector<StagedEvent> staged;
  PaddedBuffer piece;  // a piece copied to be parsed (parsePiece)
  PaddedBuffer whole;  // a mapped file copied whole (ReadOptions::copy_whole_at_most)
};

// Copies bytes [from, from + n) of a mapped file from the file itself (PaddedBuffer::readSource)
// into `out`; a file now shorter, or unreadable, is a SourceUnreadable error that says so.
void copySource(const PaddedBuffer& json, std::size_t from, std::size_t n, char* out,
                const std::string& name);

// This thread's scratch memory, and how its last successful parse went.
ReaderScratch& threadScratch();
ReadStats& threadReadStats();

inline constexpr std::int64_t kMaxId = std::numeric_limits<std::int32_t>::max();  // exclusive

struct TrackKey {
  std::int64_t pid;
  std::int64_t tid;
  TrackKind kind;
  bool operator==(const TrackKey&) const = default;
};

struct TrackKeyHash {
  std::size_t operator()(const TrackKey& k) const noexcept {
    std::uint64_t h = static_cast<std::uint64_t>(k.pid) * 0x9E3779B97F4A7C15ull;
    h ^= static_cast<std::uint64_t>(k.tid) + 0x632BE59BD9B4E019ull + (h << 6) + (h >> 2);
    return static_cast<std::size_t>(h ^ static_cast<std::uint64_t>(k.kind));
  }
};

inline std::array<NameId, 512> filledNameCache() {
  std::array<NameId, 512> cache;
  cache.fill(StringTable::npos);
  return cache;
}

// The threads parseInPieces gives `pieces` pieces when it may use `threads`: at least
// kPiecesPerThread pieces each (a helper's fresh memory and its start cost more than a piece or
// two take; with 8 a 54 MB file stayed on one thread, 10 % slower as a whole process).
inline constexpr std::size_t kPiecesPerThread = 4;
inline std::size_t piecesThreads(std::size_t pieces, unsigned threads) {
  return std::max<std::size_t>(1, std::min<std::size_t>(threads, pieces / kPiecesPerThread));
}

class TraceParser {
 public:
  TraceParser(const PaddedBuffer& json, const std::string& name, const ReadOptions& options)
      : json_(json), name_(name), options_(options) {}

  // The input is this parser's to give back: its bytes are released (a mapped file unmapped)
  // once every event is staged, before the rows are written into the columns, so the two never
  // take memory at the same time. `json` must be the buffer given to the constructor.
  void releaseInputWhenParsed(PaddedBuffer* json) { releasable_ = json; }
  // The input may be written while it is parsed: a piece of the event array is then parsed where
  // it lies, a few bytes around it standing in for the document around the events and put back
  // after (trace_pieces.cpp), instead of being copied first. `json` must be the buffer given to
  // the constructor; nothing happens when it is not writable.
  void editInPlace(PaddedBuffer* json) { in_place_ = json->writable() ? json->data() : nullptr; }
  // The input is being inflated by `stream` (whose buffer() it is) while it is parsed: each scan
  // and piece waits for its bytes, and the pieces are parsed on this thread as they arrive.
  // parseInPieces then throws InflateFailed when the inflating fails.
  void inflatedBy(StreamedInflate* stream) { stream_ = stream; }
  struct InflateFailed {};

  RankTrace parse();
  // The same result, parsing the event array in pieces of about options.piece_bytes so the parser's
  // index stays small and warm (see parseTrace). nullopt when the layout does not allow it;
  // throws on any problem, and the caller then parses the whole document for the exact error.
  std::optional<RankTrace> parseInPieces();

 private:
  // Offset in the file of a position in the text being parsed (the document, or a piece of it
  // with a made-up prefix: see parseInPieces).
  std::uint64_t offsetOf(const char* p) const {
    if (p < text_begin_ || p > text_end_) return kNoOffset;
    if (p < piece_start_) return piece_offset_;
    return piece_offset_ + static_cast<std::uint64_t>(p - piece_start_);
  }
  std::uint64_t locationOf(od::value& v) const {
    const char* p = nullptr;
    if (v.current_location().get(p) != simdjson::SUCCESS) return kNoOffset;
    return offsetOf(p);
  }
  // The parser only knows the kind of a syntax error: find where it is and say what is wrong.
  TraceError jsonError(simdjson::error_code code) const;
  [[noreturn]] void fail(std::string what) { throw FormatProblem{event_offset_, std::move(what)}; }
  template <typename Detail>
  void tally(Tally& t, Detail&& detail) {
    if (t.count++ == 0) {
      t.first_index = event_index_;
      t.first_offset = event_offset_;
      t.first_detail = detail();
    }
  }
  void checkTimes();

  // trace_metadata.cpp
  void parseTopLevel(od::object top);
  void parseDistributedInfo(od::object info);
  void parseDdpscopeBlock(od::object block);

  // trace_events.cpp. What the event loop calls per event is inline, defined and used there
  // alone, so the compiler treats it as file-local (parseArgs inlined, parseEvent's arguments in
  // registers): as plain external functions, loading measured 5 to 10 % slower.
  void parseEvents(od::array events);
  inline void parseEvent(od::object ev);
  [[gnu::always_inline]] inline void parseArgs(od::object args);
  void keepCollectiveArgs();
  void addFlowEnd(char ph, std::uint64_t id, NameId cat, NameId name, TimeNs ts, std::int64_t pid,
                  std::int64_t tid, bool gpu);
  void resolveFlows();
  // The track of a flow end: (pid, tid)'s host track, else its GPU track; GPU first for an end
  // that names its device or stream.
  std::int32_t flowEndTrack(const PendingFlowEnd& end) const;
  std::int32_t trackFor(TrackKind kind, std::int64_t pid, std::int64_t tid);
  // out_.names.intern(s) behind a small direct-mapped cache: events repeat a few names.
  NameId internCached(std::string_view s);
  inline EventKind kindOfCategory(NameId cat, std::string_view text);

  void checkCancel(const char* where);
  void prepareScratch(std::size_t parser_bytes, std::size_t json_bytes);
  void parseDocument(const char* begin, std::size_t size, std::size_t capacity);
  RankTrace finish();

  // trace_pieces.cpp
  // Parses pieces [begin, end) of `middle` (offsets [from, to) in the document) as the middle of
  // the event array.
  // When the last piece of all does not parse (a cut inside an event), it is left for the rest
  // of the document to take: returns its start then.
  // `run_begin`: the first piece of this thread's run (each later one is parsed in place when
  // the buffer may be written; see parsePieceInPlace).
  std::optional<std::size_t> parseMiddlePieces(
      const std::vector<std::pair<std::size_t, std::size_t>>& middle, std::size_t begin,
      std::size_t end, bool bare_array, std::size_t run_begin);
  // The most bytes of events one parse of a piece (joined pieces included) may take: the
  // parser's capacity less the wrapping around them.
  std::size_t mostPieceBytes(bool bare_array) const;
  // What a failed piece may have added, to take it back before the piece is parsed again (names,
  // tracks and metadata it added are the ones the retry adds first, in the same order).
  struct Checkpoint {
    std::size_t staged, flow_starts, flow_ends, event_index;
    TimeNs min_start, max_end;
    ImportTallies tallies;
  };
  Checkpoint checkpoint() const;
  void restore(const Checkpoint& mark);
  // Takes over what a helper parsed from the pieces right after this parser's: names, tracks,
  // rows, flows, metadata, counts; first occurrences keep their place in the document.
  void absorb(TraceParser& helper);
  void parsePiece(std::string_view prefix, std::size_t from, std::size_t to,
                  std::string_view suffix);
  // The events between the boundary commas at `open_at` and `close_at` (at least one event),
  // parsed where they lie (in_place_): see trace_pieces.cpp.
  void parsePieceInPlace(std::size_t open_at, std::size_t close_at, bool bare_array);
  // Writes the staged rows (this parser's and its helpers', in document order) into the columns.
  void moveStagedIntoTracks();
  // Parses the document from `from` on (the last events and what follows the array), then
  // finishes the trace; records the read's statistics.
  RankTrace parseRest(std::size_t from, bool bare_array, std::size_t middle_pieces,
                      std::size_t threads);

  const PaddedBuffer& json_;
  PaddedBuffer* releasable_ = nullptr;  // json_, when it may be released (see above)
  char* in_place_ = nullptr;            // json_'s bytes, when they may be written (see above)
  StreamedInflate* stream_ = nullptr;   // inflating json_ meanwhile (see above)
  const std::string& name_;
  const ReadOptions& options_;
  RankTrace out_;
  bool saw_events_ = false;
  bool saw_rank_ = false;
  bool saw_world_size_ = false;
  std::uint64_t event_offset_ = kNoOffset;
  std::size_t event_index_ = 0;
  ImportTallies tallies_;
  // Earliest start and latest end of the events kept (ts + dur cannot overflow: checked).
  TimeNs min_start_ = std::numeric_limits<TimeNs>::max();
  TimeNs max_end_ = std::numeric_limits<TimeNs>::min();

  // Per-event args, reset for each event.
  struct Args {
    std::int64_t stream = 0, device = 0, correlation = kNoCorrelation, bytes = kNoBytes;
    std::int64_t nelems = -1;
    std::int32_t bucket = kNoBucket, step = kNoStep;
    std::string_view dtype, name;
    // A collective's arguments (Kineto's "Collective name", "Process Group Name", ...).
    std::string_view coll_name, pg_name, pg_desc, pg_ranks;
    std::string_view short_name;  // a kernel's "short name" (RankTrace::kernel_short_names)
    std::int64_t seq = -1, out_nelems = -1, group_size = -1;
    bool has_stream = false, has_device = false;
    const char* out_of_range = nullptr;  // the first value ignored for being out of range
    std::int64_t out_of_range_value = 0;
    void outOfRange(const char* what, std::int64_t value) {
      if (out_of_range == nullptr) {
        out_of_range = what;
        out_of_range_value = value;
      }
    }
  } args_;

  ReaderScratch* scratch_ = nullptr;
  std::unique_ptr<ReaderScratch> owned_scratch_;  // helpers on threads of their own
  std::vector<StagedEvent>* staged_ = nullptr;
  // The text being parsed: the document itself, or a piece of it copied after a prefix.
  const char* text_begin_ = json_.data();
  const char* text_end_ = json_.data() + json_.size();
  const char* piece_start_ = json_.data();  // the first byte copied from the document
  std::uint64_t piece_offset_ = 0;          // its offset in the document
  std::unordered_map<TrackKey, std::int32_t, TrackKeyHash> track_lookup_;
  // Caches in front of the string table and the track map (a slot is checked before it is
  // used, so a collision costs a lookup, never a wrong id).
  std::array<NameId, 512> name_cache_ = filledNameCache();
  std::vector<std::uint8_t> cat_kind_;  // by category id: 1 + EventKind, 0 when not known yet
  struct TrackSlot {
    std::int64_t pid = 0, tid = 0;
    TrackKind kind = TrackKind::Host;
    std::int32_t track = -1;
  };
  std::array<TrackSlot, 64> track_cache_{};
  std::vector<PendingFlowEnd> flow_starts_;
  std::vector<PendingFlowEnd> flow_ends_;
  std::optional<std::size_t> rest_from_;  // a helper's parseMiddlePieces result
  // Where the input's bytes this parser has read and not given back yet begin (its pieces are
  // one run of the document, given back in whole pages or blocks: PaddedBuffer::releasePages).
  static constexpr std::size_t kNothingReleased = std::numeric_limits<std::size_t>::max();
  std::size_t released_to_ = kNothingReleased;
  // Helpers whose rows come after this parser's first absorbed_after_ rows, in document order.
  std::vector<std::unique_ptr<TraceParser>> absorbed_;
  std::size_t absorbed_after_ = 0;
};

}  // namespace ddpscope::trace::reader
