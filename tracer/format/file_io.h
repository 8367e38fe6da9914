#pragma once
// Reading possibly-compressed files into a buffer the JSON parser can use directly, and
// writing files atomically (temporary file + rename) so a crash never leaves half a file.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace ddpscope::trace {

// How a PaddedBuffer's memory is given back.
struct BufferRelease {
  std::size_t mapped_bytes = 0;      // 0: memory from new[]
  int source_fd = -1;                // a mapped file's descriptor, kept open with its map
  std::int64_t source_mtime_ns = 0;  // its modification time when it was kept
  void operator()(char* p) const noexcept;
};

// A byte buffer with zeroed slack after the data (the JSON parser reads a little past the end).
// It either owns memory it filled, or is a private map of a whole file (mapFile): the pages are
// the page cache's, read where they lie, or copied a piece at a time from the file it keeps open
// (readSource) so that most of them are never touched through the map.
class PaddedBuffer {
 public:
  static constexpr std::size_t kPadding = 64;
  PaddedBuffer() = default;
  explicit PaddedBuffer(std::string_view bytes);
  // A moved-from buffer is empty (and owned, not mapped).
  PaddedBuffer(PaddedBuffer&& other) noexcept { *this = std::move(other); }
  PaddedBuffer& operator=(PaddedBuffer&& other) noexcept {
    if (this == &other) return *this;
    data_ = std::move(other.data_);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
    discardable_ = std::exchange(other.discardable_, false);
    writable_map_ = std::exchange(other.writable_map_, false);
    released_.store(other.released_.exchange(false, std::memory_order_relaxed),
                    std::memory_order_relaxed);
    other.data_ = std::unique_ptr<char[], Release>();
    return *this;
  }
  // Maps the first `size` bytes of the open regular file fd, followed by at least kPadding zero
  // bytes; an empty buffer (mapped() false, size 0) when the system refuses (then read the file
  // instead). The map is private: when the system allows, its bytes may be written (a written
  // page becomes a copy of our own; the file never changes), see writable(). The file must not
  // shrink while the buffer lives (a page past its new end would fault).
  static PaddedBuffer mapFile(int fd, std::size_t size);
  // A mapped buffer may keep its file open (closed with the map; the buffer owns fd from here),
  // for readSource: big documents are parsed a piece at a time from copies the kernel makes out
  // of the page cache, and the map's pages are never touched but for a few around each cut.
  // The map is then read-only: the parser copies pieces instead of editing them in place. On a
  // buffer that is not a map, fd is closed.
  void keepSource(int fd) noexcept;
  bool hasSource() const { return data_ && data_.get_deleter().source_fd >= 0; }
  // Copies the file's bytes [from, from + n) to out. False when they cannot be read: *error is
  // 0 when the file ended early (it was shortened since it was opened), EINVAL for a range past
  // the buffer, else the system's errno; *got says how many bytes came.
  bool readSource(std::size_t from, std::size_t n, char* out, int* error,
                  std::size_t* got) const noexcept;
  // Whether the kept file's size or modification time differ from when it was mapped (it was
  // rewritten since); false without a kept file.
  bool sourceChanged() const noexcept;
  const char* data() const { return data_.get(); }
  // Owned buffers, and maps whose bytes may be written (writable()).
  char* data() { return data_.get(); }
  // Whether the bytes of [0, size()) may be written in place: memory of our own, or a private
  // map the system let us make writable. (The reader writes a few bytes around each piece of a
  // big document and puts them back: trace_pieces.cpp.)
  bool writable() const { return data_ && (!mapped() || writable_map_); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }  // size() + at least kPadding
  std::string_view view() const { return {data_.get(), size_}; }
  bool mapped() const { return data_.get_deleter().mapped_bytes > 0; }
  // For a mapped buffer: gives back the resident pages lying wholly inside [from, to) (the bytes
  // stay the file's and are read again if touched). For memory of our own, only once
  // allowDiscard() was called, and then the bytes are gone: those pages read as zeros after.
  // A buffer advised for huge pages gives back only whole 2 MiB blocks. Returns the end of the
  // last page or block given back (the bytes before it from the first whole one on are gone),
  // or `from` when none was: a caller going forward passes it as the next `from`.
  std::size_t releasePages(std::size_t from, std::size_t to) const noexcept;
  // The owner will not read bytes given to releasePages again (or reads them knowing they are
  // zeros, and starts over from the source when pagesDiscarded() says so).
  void allowDiscard() noexcept { discardable_ = true; }
  // Whether releasePages gave back any page of memory of our own (whose bytes are then lost).
  bool pagesDiscarded() const noexcept { return released_.load(std::memory_order_relaxed); }
  // Makes room for at least n more bytes past size(), keeping the padding. Grows by half at a
  // time, but not past at_most bytes of capacity (unless n itself needs more). Owned buffers
  // only, as are append and setSize.
  void reserveMore(std::size_t n, std::size_t at_most = ~std::size_t{0});
  void append(const char* p, std::size_t n);
  void setSize(std::size_t n);  // n <= capacity() - kPadding

 private:
  using Release = BufferRelease;
  std::unique_ptr<char[], Release> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
  bool discardable_ = false;
  bool writable_map_ = false;
  // Set by releasePages, which the threads parsing one file's pieces call at once.
  mutable std::atomic<bool> released_{false};
};

struct ReadLimits {
  // Largest (decompressed) trace accepted; beyond it loading stops with a clear message.
  std::uint64_t max_bytes = std::uint64_t{4095} << 20;  // the JSON parser takes up to 4 GiB
  // Set when DDPSCOPE_MAX_TRACE_MB holds no valid size: reading then refuses with this message
  // rather than quietly applying the default the user meant to change.
  std::string setting_error;
};

// The default limit, overridable by the DDPSCOPE_MAX_TRACE_MB environment variable.
ReadLimits defaultReadLimits();

bool isGzip(std::string_view bytes);

// Reads a file, inflating it when it is gzip (detected by its magic bytes, not its name).
// Throws TraceError naming the file on I/O errors, corrupt/truncated gzip, or size limits (a
// file too large is refused before it is read; a gzip stream stops inflating at the limit), and
// for folders, pipes and devices (never waiting on a pipe for a writer). A plain file of 1 MiB or
// more on a local filesystem comes back mapped (PaddedBuffer::mapFile), its file kept open
// (keepSource) for the parser's copies of its pieces. With `hash`, the file's content hash
// (fileContentHash's value) is stored there when the file's own bytes were in memory on the way
// (a file read, or a gzip file inflated); a plain file that comes back mapped leaves it unset.
// `threads`: the cores this read may use (inflateBytes). With `inflate` false, a gzip file comes
// back as it is (mapped or read, its own bytes), for the caller to inflate.
PaddedBuffer readTraceBytes(const std::string& path, const ReadLimits& limits = defaultReadLimits(),
                            std::optional<std::uint64_t>* hash = nullptr, unsigned threads = 1,
                            bool inflate = true);

// Inflates gzip/zlib data; throws TraceError(name, ...) on corrupt or truncated input. With
// `threads` above 1 and libdeflate in the build, a big output's fresh pages are mapped on a
// second thread while the first inflates (PopulatedBehind); the result is the same.
PaddedBuffer inflateBytes(std::string_view compressed, const std::string& name,
                          const ReadLimits& limits = defaultReadLimits(), unsigned threads = 1);

std::string gzipBytes(std::string_view plain, int level = 3);

// The uncompressed size a single-member gzip stream states in its trailer (RFC 1952, ISIZE:
// the size modulo 2^32), when it is plausible for the compressed size (between half of it and
// gzip's best ratio, 1032:1); nullopt for anything else.
std::optional<std::uint64_t> gzipStatedSize(std::string_view compressed);

// A gzip file inflated on a thread of its own, a MiB per call of zlib's stream, into a buffer of
// the size its trailer states, while the caller reads what is already there: the inflating
// hides behind the reading. The bytes [0, available) are final once waitFor says so (zlib
// reads back only what the call in progress wrote, so the caller may change published bytes).
// The inflating fails, and waitFor answers false, when the stream is corrupt, ends early or
// late, or holds more than one member: the caller then reads the file the usual way, which says
// what is wrong. The destructor stops the thread.
class StreamedInflate {
 public:
  // Starts inflating `compressed` (whose gzipStatedSize is `size`) into buffer().
  StreamedInflate(PaddedBuffer compressed, std::size_t size);
  ~StreamedInflate();
  StreamedInflate(const StreamedInflate&) = delete;
  StreamedInflate& operator=(const StreamedInflate&) = delete;
  // size() bytes (and zeroed padding); only [0, available) may be read.
  PaddedBuffer& buffer() { return out_; }
  // Blocks until at least min(n, size) bytes are final; false when the inflating failed (or
  // was stopped) before. waitFor(size) true: the whole stream was inflated and checked.
  bool waitFor(std::size_t n);
  std::size_t available() const { return available_.load(std::memory_order_acquire); }

 private:
  void run() noexcept;
  PaddedBuffer compressed_;
  PaddedBuffer out_;
  std::atomic<std::size_t> available_{0};
  std::atomic<bool> failed_{false};
  std::atomic<bool> stop_{false};
  std::mutex mutex_;
  std::condition_variable arrived_;
  std::thread thread_;
};

// The 64-bit XXH3 hash (seed 0) of a file's bytes, read a MiB at a time: what `xxhsum -H3`
// prints, so a user can check it. Tells a changed file from the same one (the digest's
// `xxh3_64`, the name of an Nsight report's export in the cache). `after_chunk(bytes read so
// far)` is called after each MiB, and may throw to stop (cancel). Throws TraceError when the file
// cannot be read.
std::uint64_t fileContentHash(const std::string& path,
                              const std::function<void(std::uint64_t)>& after_chunk = {});
// fileContentHash of bytes already in memory (the same value for the same bytes).
std::uint64_t contentHash(std::string_view bytes);
// 16 lower-case hex digits, the form the hashes are written in.
std::string hashHex(std::uint64_t hash);

// Chooses, just before the rename, the name a written file gets (in the same folder as the path
// it is given); empty: that path.
using FinalPath = std::function<std::string(const std::string& path)>;

// Writes bytes to path atomically: a temporary file in the same folder, flushed, then renamed.
// On any failure (disk full, permissions) the temporary is removed, the destination is left as it
// was, and a std::runtime_error says what happened. Returns the path written.
std::string writeFileAtomically(const std::string& path, std::string_view bytes,
                                const FinalPath& final_path = {});

// Writes several files (path, bytes) as one: every file goes to a temporary first, and only when
// all are written are they renamed into place. A failure while writing leaves every destination
// as it was; a std::runtime_error says which file and why. (A report's Markdown, HTML and
// figures are such a set.)
void writeFilesAtomically(const std::vector<std::pair<std::string, std::string_view>>& files);

}  // namespace ddpscope::trace
