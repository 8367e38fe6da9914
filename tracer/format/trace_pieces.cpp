// A big document's event array parsed a piece at a time, so that the parser's memory stays
// small and warm, and on several threads when allowed; the pieces' rows, names, tracks, flows
// and tallies are merged in document order, so the result is the same as the whole parse's.
#include <algorithm>
#include <array>
#include <cstring>
#include <exception>
#include <string>
#include <thread>

#include "memory.h"
#include "parallel.h"
#include "trace_json_values.h"
#include "trace_parser.h"

namespace ddpscope::trace::reader {

namespace {

// Offset of the '[' that opens the events: the document's own for a bare array, else the value
// of the top-level "traceEvents" key, found by a string-aware scan of at most `limit` bytes.
// npos when not found.
std::size_t findEventArray(std::string_view json, std::size_t limit) {
  std::size_t i = 0;
  while (i < json.size() && isJsonSpace(json[i]))
    ++i;
  if (i < json.size() && json[i] == '[') return i;
  if (i >= json.size() || json[i] != '{') return std::string_view::npos;
  constexpr std::string_view kKey = "\"traceEvents\"";
  std::int64_t depth = 0;
  limit = std::min(limit, json.size());
  for (; i < limit; ++i) {
    const char c = json[i];
    if (c == '"') {
      if (depth == 1 && json.substr(i, kKey.size()) == kKey) {
        std::size_t j = i + kKey.size();
        while (j < json.size() && isJsonSpace(json[j]))
          ++j;
        if (j < json.size() && json[j] == ':') {
          ++j;
          while (j < json.size() && isJsonSpace(json[j]))
            ++j;
          return j < json.size() && json[j] == '[' ? j : std::string_view::npos;
        }
      }
      for (++i; i < limit && json[i] != '"'; ++i) {
        if (json[i] == '\\') ++i;
      }
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return std::string_view::npos;
}

// The first place at or after `from` (and before `limit`) where an event ends and the next
// begins on a new line: ",<space>\n<space>{". JSON strings cannot hold a raw newline, so such a
// place is never inside a string; whether it is between two events of the array (and not inside
// an event) is checked by parsing the piece it ends. When `indent` is given, the line must
// begin with exactly that whitespace (the first event's), which skips most places inside events
// (nested lists are indented deeper). Returns {offset of ',', offset of '{'}.
std::pair<std::size_t, std::size_t> nextEventBoundary(std::string_view json, std::size_t from,
                                                      std::size_t limit,
                                                      const std::optional<std::string>& indent) {
  constexpr auto npos = std::string_view::npos;
  limit = std::min(limit, json.size());
  while (from < limit) {
    const void* hit = std::memchr(json.data() + from, '\n', limit - from);
    if (hit == nullptr) return {npos, npos};
    const std::size_t nl = static_cast<std::size_t>(static_cast<const char*>(hit) - json.data());
    std::size_t after = nl + 1;
    while (after < json.size() && isJsonSpace(json[after]))
      ++after;
    std::size_t before = nl;
    while (before > 0 && isJsonSpace(json[before - 1]))
      --before;
    if (after < json.size() && json[after] == '{' && before > 0 && json[before - 1] == ',' &&
        (!indent || json.substr(nl + 1, after - nl - 1) == *indent)) {
      return {before - 1, after};
    }
    from = nl + 1;
  }
  return {npos, npos};
}

// What a piece of the event array is wrapped in to parse alone, so that its events sit as deep
// as in the whole document (the parser's depth limit must give the same verdict either way).
std::pair<std::string_view, std::string_view> pieceWrapping(bool bare_array) {
  if (bare_array) return {"[", "]"};
  return {"{\"traceEvents\":[", "]}"};
}

}  // namespace

void copySource(const PaddedBuffer& json, std::size_t from, std::size_t n, char* out,
                const std::string& name) {
  int error = 0;
  std::size_t got = 0;
  if (!json.readSource(from, n, out, &error, &got)) {
    throw SourceUnreadable(
        name, from + got,
        error == 0 ? "the file is now shorter than the " + std::to_string(json.size()) +
                         " bytes it had when loading began: was it rewritten while loading? "
                         "Load it again once it is complete"
                   : std::string("cannot read the file again: ") + std::strerror(error));
  }
}

void TraceParser::parsePiece(std::string_view prefix, std::size_t from, std::size_t to,
                             std::string_view suffix) {
  auto& buf = scratch_->piece;
  const std::size_t piece_bytes = options_.piece_bytes;
  if (buf.capacity() == 0) buf.reserveMore(piece_bytes + (piece_bytes >> 2));
  buf.setSize(0);
  buf.append(prefix.data(), prefix.size());
  if (json_.hasSource()) {
    // A mapped file's bytes, copied by the kernel from the page cache into this warm buffer:
    // the map's own pages stay untouched (PERFORMANCE.md, "Reading the file").
    buf.reserveMore(to - from);
    copySource(json_, from, to - from, buf.data() + buf.size(), name_);
    buf.setSize(buf.size() + (to - from));
  } else {
    buf.append(json_.data() + from, to - from);
  }
  buf.append(suffix.data(), suffix.size());
  text_begin_ = buf.data();
  text_end_ = buf.data() + buf.size();
  piece_start_ = buf.data() + prefix.size();
  piece_offset_ = from;
  parseDocument(buf.data(), buf.size(), buf.capacity());
}

namespace {

// Bytes of a writable buffer changed for a while, put back when it goes (an error included).
class BytesLent {
 public:
  explicit BytesLent(char* bytes) : bytes_(bytes) {}
  BytesLent(const BytesLent&) = delete;
  BytesLent& operator=(const BytesLent&) = delete;
  ~BytesLent() {
    for (std::size_t i = 0; i < n_; ++i)
      bytes_[at_[i]] = was_[i];
  }
  void set(std::size_t at, char c) {
    at_[n_] = at;
    was_[n_++] = bytes_[at];
    bytes_[at] = c;
  }

 private:
  char* bytes_;
  std::array<std::size_t, 4> at_{};
  std::array<char, 4> was_{};
  std::size_t n_ = 0;
};

}  // namespace

void TraceParser::parsePieceInPlace(std::size_t open_at, std::size_t close_at, bool bare_array) {
  // Between two events the document holds ",<space>\n<space>{": the comma and the byte after it
  // (whitespace: the newline is still to come) are free to stand in for the brackets around
  // the piece. A bare array's events sit one level deep, "[{", as they do in the document; the
  // events of "{"traceEvents": [...]}" two, here "[[{" (the parser's depth limit gives the same
  // verdict either way). The other threads never read or write these bytes: the first piece of
  // each thread's run is copied (parsePiece), so a comma is only ever lent by one thread.
  BytesLent lent(in_place_);
  lent.set(open_at, '[');
  lent.set(close_at, ']');
  std::size_t end = close_at + 1;
  if (!bare_array) {
    lent.set(open_at + 1, '[');
    lent.set(close_at + 1, ']');
    end = close_at + 2;
  }
  text_begin_ = piece_start_ = json_.data() + open_at;
  text_end_ = json_.data() + end;
  piece_offset_ = open_at;
  od::document doc =
      scratch_->parser.iterate(text_begin_, end - open_at, json_.capacity() - open_at);
  if (bare_array) {
    parseEvents(doc.get_array());
  } else {
    std::size_t arrays = 0;
    for (auto inner : doc.get_array()) {
      if (arrays++ > 0) throw TraceError(name_, offsetOf(text_begin_), "not one array of events");
      parseEvents(inner.get_array());
    }
  }
  const char* rest = nullptr;
  if (doc.current_location().get(rest) == simdjson::SUCCESS && rest != nullptr) {
    throw TraceError(name_, offsetOf(rest), "unexpected content after the events");
  }
}

std::size_t TraceParser::mostPieceBytes(bool bare_array) const {
  const auto [open, close] = pieceWrapping(bare_array);
  return scratch_->parser.capacity() - open.size() - close.size();
}

std::optional<std::size_t> TraceParser::parseMiddlePieces(
    const std::vector<std::pair<std::size_t, std::size_t>>& middle, std::size_t begin,
    std::size_t end, bool bare_array, std::size_t run_begin) {
  const auto [open, close] = pieceWrapping(bare_array);
  // A cut can fall inside an event (a comma, a newline and '{' in a list of objects in its
  // args): neither side then parses alone. A piece that fails is joined with the next ones until
  // they parse (the events read from the failed attempt are taken back and read again). The last
  // piece of all is left to the rest of the document. Anything else still fails, and the
  // whole-document parse gives the exact message.
  const std::size_t most = mostPieceBytes(bare_array);
  for (std::size_t i = begin; i < end; ++i) {
    const Checkpoint mark = checkpoint();
    for (std::size_t last = i;; ++last) {
      saw_events_ = false;  // each wrapper names the one event array again
      try {
        // Where it lies when the buffer may be written, except the first piece of this run: the
        // comma before it is the previous run's to lend (parsePieceInPlace). A mapped file that
        // kept its source is read by copies instead (parsePiece).
        if (in_place_ != nullptr && i > run_begin && !json_.hasSource()) {
          parsePieceInPlace(middle[i - 1].second, middle[last].second, bare_array);
        } else {
          parsePiece(open, middle[i].first, middle[last].second, close);
        }
        // Read: a mapped file's pages of these pieces leave memory (the file and the staged rows
        // are then not both resident whole; an error's whole-document parse reads them again).
        // Pieces copied from the file never brought theirs in. From the first piece of this
        // thread's run on, as far as whole pages (or huge-page blocks) allow so far.
        if (!json_.hasSource()) {
          if (released_to_ == kNothingReleased) released_to_ = middle[i].first;
          released_to_ = json_.releasePages(released_to_, middle[last].second);
        }
        i = last;
        break;
      } catch (const LoadCancelled&) {
        throw;
      } catch (const std::bad_alloc&) {
        throw;
      } catch (const SourceUnreadable&) {
        throw;
      } catch (...) {
        restore(mark);
        if (last + 1 >= end) {
          if (last == i && end == middle.size()) return middle[i].first;
          throw;
        }
        if (last > i && middle[last + 1].second - middle[i].first > most) throw;
      }
    }
  }
  return std::nullopt;
}

TraceParser::Checkpoint TraceParser::checkpoint() const {
  return {staged_->size(), flow_starts_.size(), flow_ends_.size(),
          event_index_,    min_start_,          max_end_,
          tallies_};
}

void TraceParser::restore(const Checkpoint& mark) {
  staged_->resize(mark.staged);
  flow_starts_.resize(mark.flow_starts);
  flow_ends_.resize(mark.flow_ends);
  event_index_ = mark.event_index;
  min_start_ = mark.min_start;
  max_end_ = mark.max_end;
  tallies_ = mark.tallies;
}

void TraceParser::absorb(TraceParser& h) {
  std::vector<NameId> name_of(h.out_.names.size());
  for (std::size_t i = 0; i < name_of.size(); ++i)
    name_of[i] = out_.names.intern(h.out_.names[static_cast<NameId>(i)]);
  std::vector<std::int32_t> track_of(h.out_.tracks.size());
  for (std::size_t j = 0; j < track_of.size(); ++j) {
    const auto& t = h.out_.tracks[j];
    track_of[j] = trackFor(t.kind, t.pid, t.tid);
  }
  // The helper's rows stay where it staged them (copying them here made a big file's peak
  // 28 B/event higher); they are renumbered in place and written after this parser's rows so far.
  for (auto& e : *h.staged_) {
    e.name = name_of[e.name];
    e.cat = name_of[e.cat];
    e.track = track_of[static_cast<std::size_t>(e.track)];
  }
  if (absorbed_.empty()) absorbed_after_ = staged_->size();
  for (auto* list : {&h.flow_starts_, &h.flow_ends_}) {
    auto& into = list == &h.flow_starts_ ? flow_starts_ : flow_ends_;
    for (auto f : *list) {
      f.cat = name_of[f.cat];
      f.name = name_of[f.name];
      into.push_back(f);
    }
  }
  for (auto& c : h.out_.collective_args)
    out_.collective_args.push_back(std::move(c));
  for (const auto& [name, short_name] : h.out_.kernel_short_names)
    out_.addKernelShortName(name_of[name], h.out_.names[short_name]);
  for (const auto& [pid, n] : h.out_.process_names)
    out_.process_names[pid] = n;
  for (const auto& [key, n] : h.out_.thread_names)
    out_.thread_names[key] = n;
  tallies_.merge(h.tallies_, event_index_);
  event_index_ += h.event_index_;
}

std::optional<RankTrace> TraceParser::parseInPieces() {
  constexpr auto npos = std::string_view::npos;
  const std::string_view json = json_.view();
  const std::size_t piece_bytes = options_.piece_bytes;
  // The first n bytes (or more) once they are in: the whole document, unless it is still being
  // inflated (stream_), when every scan looks only at what has arrived.
  const auto arrived = [&](std::size_t n) {
    if (stream_ == nullptr) return json;
    if (!stream_->waitFor(n)) throw InflateFailed{};
    return json.substr(0, stream_->available());
  };
  const std::size_t search =
      std::min(json.size(), std::max(piece_bytes * 4, std::size_t{16} << 20));
  std::size_t events = npos;
  for (std::size_t n = std::size_t{1} << 20;; n *= 2) {
    const std::string_view seen = arrived(n);
    events = findEventArray(seen, search);
    if (events != npos || seen.size() >= search) break;
    // Neither an object nor an array: more bytes will not help.
    if (const auto first = seen.find_first_not_of(" \n\r\t");
        first != npos && seen[first] != '{' && seen[first] != '[')
      break;
  }
  if (events == npos) return std::nullopt;
  std::size_t from = events + 1;
  // The whitespace the first event's line begins with, when it begins a line of its own.
  // A copy: the pages of parsed pieces may be given back while boundaries are still looked for.
  std::optional<std::string> indent;
  const std::string_view head = arrived(from + (std::size_t{64} << 10));
  if (const auto first = head.find_first_not_of(" \n\r\t", from);
      first != npos && head[first] == '{') {
    const auto nl = head.find_last_of('\n', first);
    if (nl != npos && nl >= from) indent = std::string(json.substr(nl + 1, first - nl - 1));
  }
  // The first boundary between two events at or after `at`: in what has arrived, with room
  // after each newline looked at, waiting for more as needed.
  const auto nextBoundary = [&](std::size_t at) -> std::pair<std::size_t, std::size_t> {
    if (stream_ == nullptr) return nextEventBoundary(json, at, json.size(), indent);
    constexpr std::size_t kRoom = std::size_t{64} << 10;
    constexpr std::size_t kMore = std::size_t{256} << 10;
    for (std::size_t want = at + kRoom + kMore;;) {
      const std::string_view seen = arrived(want);
      want = seen.size() + kMore;
      const bool all = seen.size() == json.size();
      const std::size_t limit = all ? seen.size() : seen.size() - kRoom;
      if (at < limit) {
        if (const auto b = nextEventBoundary(seen, at, limit, indent); b.first != npos) return b;
        at = limit;
      }
      if (all) return {npos, npos};
    }
  };
  auto boundary = nextBoundary(from + piece_bytes);
  if (boundary.first == npos) return std::nullopt;  // e.g. all on one line
  prepareScratch(piece_bytes + (piece_bytes >> 2), json.size());
  const bool bare_array = json.find_first_not_of(" \n\r\t") == events;
  if (!bare_array) {
    // The keys before the events, as a document of their own: {..., "traceEvents": []}.
    parsePiece({}, 0, events, "[]}");
  }
  std::vector<std::pair<std::size_t, std::size_t>> middle;  // [from, to) of each piece
  if (stream_ != nullptr) {
    // On this thread, each piece as soon as its bytes (and the room after them) are in; the
    // inflating goes on meanwhile on the other. A piece that does not parse alone (a cut inside
    // an event) is joined with the next, as far as the parser takes; beyond that, it is left
    // with all after it to the rest of the document.
    const std::size_t most = mostPieceBytes(bare_array);
    std::size_t piece_from = from;
    while (boundary.first != npos) {
      middle.emplace_back(piece_from, boundary.first);
      const std::size_t i = middle.size() - 1;
      const bool joined = parseMiddlePieces(middle, i, i + 1, bare_array, 0).has_value();
      if (joined) {
        middle.pop_back();  // not parsed: the next piece begins where it began
      } else {
        piece_from = boundary.second;
      }
      boundary = nextBoundary(boundary.second + piece_bytes);
      if (joined && boundary.first != npos && boundary.first - piece_from > most) break;
    }
    from = piece_from;
    (void)arrived(json.size());  // the whole stream, checked
    return parseRest(from, bare_array, middle.size(), 1);
  }
  while (boundary.first != npos) {
    middle.emplace_back(from, boundary.first);
    from = boundary.second;
    boundary = nextBoundary(from + piece_bytes);
  }
  // Several threads when allowed and worth it (piecesThreads): contiguous runs of pieces, the
  // first on this thread; the others' results are merged in document order.
  const std::size_t threads = piecesThreads(middle.size(), options_.threads);
  if (threads == 1) {
    if (const auto rest = parseMiddlePieces(middle, 0, middle.size(), bare_array, 0)) from = *rest;
  } else {
    ReadOptions helper_options = options_;
    helper_options.progress = nullptr;  // reported by this thread alone
    std::vector<std::unique_ptr<TraceParser>> helpers;
    std::vector<std::exception_ptr> errors(threads);
    std::vector<std::thread> pool;
    auto first_of = [&](std::size_t g) { return middle.size() * g / threads; };
    for (std::size_t g = 1; g < threads; ++g) {
      helpers.push_back(std::make_unique<TraceParser>(json_, name_, helper_options));
      helpers.back()->in_place_ = in_place_;
      helpers.back()->owned_scratch_ = std::make_unique<ReaderScratch>();
    }
    auto join = [&pool] {
      for (auto& t : pool)
        t.join();
    };
    try {
      for (std::size_t g = 1; g < threads; ++g) {
        pool.emplace_back([&, g] {
          try {
            auto& h = *helpers[g - 1];
            const auto begin = first_of(g), end = first_of(g + 1);
            h.prepareScratch(piece_bytes + (piece_bytes >> 2),
                             middle[end - 1].second - middle[begin].first);
            if (const auto rest = h.parseMiddlePieces(middle, begin, end, bare_array, begin)) {
              h.rest_from_ = *rest;
            }
          } catch (...) {
            errors[g] = std::current_exception();
          }
        });
      }
    } catch (...) {  // no thread to be had: stop the ones started, then parse whole
      join();
      throw;
    }
    try {
      parseMiddlePieces(middle, 0, first_of(1), bare_array, 0);
    } catch (...) {
      errors[0] = std::current_exception();
    }
    join();
    // A file that could not be read again wins over any other thread's error: that one may come
    // from the same change to the file, and must not send the reader back through the map.
    rethrowPreferring<SourceUnreadable>(errors);
    for (auto& h : helpers)
      absorb(*h);
    if (helpers.back()->rest_from_) from = *helpers.back()->rest_from_;
    absorbed_ = std::move(helpers);  // their rows are written into the columns by finish()
  }
  return parseRest(from, bare_array, middle.size(), threads);
}

RankTrace TraceParser::parseRest(std::size_t from, bool bare_array, std::size_t middle_pieces,
                                 std::size_t threads) {
  // The rest: the last events, the end of the array and the keys after it. Its "traceEvents"
  // is the one already begun; a second one after it is still an error.
  saw_events_ = false;
  parsePiece(pieceWrapping(bare_array).first, from, json_.size(), {});
  text_begin_ = piece_start_ = json_.data();
  text_end_ = json_.data() + json_.size();
  piece_offset_ = 0;
  auto trace = finish();
  threadReadStats() = {middle_pieces + 1, threads, stream_ != nullptr, false};
  return trace;
}

void TraceParser::moveStagedIntoTracks() {
  // The rows in document order: this parser's first ones, the helpers', then the rest of ours.
  const StagedEvent* const own = staged_->data();
  const std::size_t split = absorbed_.empty() ? staged_->size() : absorbed_after_;
  std::vector<std::pair<const StagedEvent*, const StagedEvent*>> segments;
  segments.emplace_back(own, own + split);
  for (const auto& h : absorbed_)
    segments.emplace_back(h->staged_->data(), h->staged_->data() + h->staged_->size());
  segments.emplace_back(own + split, own + staged_->size());

  std::vector<std::size_t> count(out_.tracks.size(), 0);
  for (const auto& [begin, end] : segments) {
    for (const StagedEvent* e = begin; e != end; ++e)
      ++count[static_cast<std::size_t>(e->track)];
  }
  // Each column sized once, then written by index (no capacity check per value). The two
  // halves of the columns on two threads when allowed: each reads every row and writes its own
  // columns (fresh memory, most of the time this takes).
  std::size_t rows = 0;
  for (auto n : count)
    rows += n;
  auto write = [&](Track::Half half) {
    std::vector<std::size_t> next(out_.tracks.size());
    FreshBuffers fresh;  // every track's new columns: huge pages, populated in one call each
    for (std::size_t i = 0; i < out_.tracks.size(); ++i) {
      auto& t = out_.tracks[i];
      next[i] = half == Track::Half::First ? t.start.size() : t.correlation.size();
      t.reserve(next[i] + count[i], half, fresh);
    }
    fresh.prepare();
    for (std::size_t i = 0; i < out_.tracks.size(); ++i)
      out_.tracks[i].resizeForWrite(next[i] + count[i], half);  // every new row is written below
    for (const auto& [begin, end] : segments) {
      for (const StagedEvent* e = begin; e != end; ++e) {
        const auto ti = static_cast<std::size_t>(e->track);
        out_.tracks[ti].setRow(next[ti]++,
                               {e->start, e->dur, e->name, e->cat, e->kind, e->correlation,
                                e->bucket, e->step, e->bytes},
                               half);
      }
    }
  };
  constexpr std::size_t kRowsWorthAThread = std::size_t{1} << 16;
  forEachIndex(2, rows >= kRowsWorthAThread ? std::max(1u, options_.threads) : 1u,
               [&](std::size_t h) { write(h == 0 ? Track::Half::First : Track::Half::Second); });
  staged_->clear();
  absorbed_.clear();  // the helpers' staging memory with them
}

}  // namespace ddpscope::trace::reader
