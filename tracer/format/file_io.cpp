#include "file_io.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>
#include <zlib.h>

// Header-only: the hash is compiled in, so nothing but the header is needed to build.
#define XXH_INLINE_ALL
#include <xxhash.h>

#ifdef DDPSCOPE_HAVE_LIBDEFLATE
#include <libdeflate.h>
#endif

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <system_error>

#include "memory.h"
#include "trace_error.h"

namespace ddpscope::trace {

PaddedBuffer::PaddedBuffer(std::string_view bytes) {
  append(bytes.data(), bytes.size());
  if (!data_) reserveMore(0);
}

void BufferRelease::operator()(char* p) const noexcept {
  if (mapped_bytes > 0)
    ::munmap(p, mapped_bytes);
  else
    delete[] p;
  if (source_fd >= 0) ::close(source_fd);
}

namespace {
std::int64_t modifiedNs(const struct stat& st) {
  return static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1'000'000'000 + st.st_mtim.tv_nsec;
}
}  // namespace

void PaddedBuffer::keepSource(int fd) noexcept {
  if (!mapped()) {
    if (fd >= 0) ::close(fd);
    return;
  }
  auto& release = data_.get_deleter();
  if (release.source_fd >= 0) ::close(release.source_fd);
  release.source_fd = fd;
  struct stat st {};
  release.source_mtime_ns = ::fstat(fd, &st) == 0 ? modifiedNs(st) : 0;
  // Read-only from here: nothing is edited in place in a map whose pieces are copied.
  if (writable_map_) {
    const long page = ::sysconf(_SC_PAGESIZE);
    const std::size_t file_pages = page > 0 ? (size_ + static_cast<std::size_t>(page) - 1) /
                                                  static_cast<std::size_t>(page) *
                                                  static_cast<std::size_t>(page)
                                            : 0;
    if (file_pages > 0 && ::mprotect(data_.get(), file_pages, PROT_READ) == 0)
      writable_map_ = false;
  }
}

bool PaddedBuffer::sourceChanged() const noexcept {
  if (!hasSource()) return false;
  struct stat st {};
  if (::fstat(data_.get_deleter().source_fd, &st) != 0) return true;
  return static_cast<std::uint64_t>(st.st_size) != size_ ||
         modifiedNs(st) != data_.get_deleter().source_mtime_ns;
}

bool PaddedBuffer::readSource(std::size_t from, std::size_t n, char* out, int* error,
                              std::size_t* got) const noexcept {
  *got = 0;
  *error = EBADF;
  if (!hasSource()) return false;
  *error = EINVAL;
  if (from > size_ || n > size_ - from) return false;
  *error = 0;
  const int fd = data_.get_deleter().source_fd;
  while (*got < n) {
    const ssize_t k = ::pread(fd, out + *got, n - *got, static_cast<off_t>(from + *got));
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      *error = k < 0 ? errno : 0;
      return false;
    }
    *got += static_cast<std::size_t>(k);
  }
  return true;
}

PaddedBuffer PaddedBuffer::mapFile(int fd, std::size_t size) {
  PaddedBuffer out;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (size == 0 || page_size <= 0) return out;
  const auto page = static_cast<std::size_t>(page_size);
  const std::size_t file_pages = (size + page - 1) / page * page;
  // One zero page after the file's last page: the padding, however full that page is. (The rest
  // of the file's last page past its end reads as zeros too.) Reserved as one range first so the
  // file's pages and the zero page are adjacent.
  const std::size_t total = file_pages + page;
  void* range = ::mmap(nullptr, total, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (range == MAP_FAILED) return out;
  // Not populated: a big document is parsed from copies of its pieces (readSource), so most
  // pages of the map are never touched, and a page touched costs its fault once (populating them
  // all did not make the first access to each any cheaper on a virtual machine; PERFORMANCE.md).
  void* file = ::mmap(range, file_pages, PROT_READ, MAP_PRIVATE | MAP_FIXED, fd, 0);
  if (file == MAP_FAILED) {
    ::munmap(range, total);
    return out;
  }
  // Private and writable (until keepSource): a page is copied only when written (a few per
  // piece when a document is parsed where it lies, trace_pieces.cpp); the file itself is never
  // written.
  out.writable_map_ = ::mprotect(file, file_pages, PROT_READ | PROT_WRITE) == 0;
  out.data_ = std::unique_ptr<char[], Release>(static_cast<char*>(range), Release{total});
  out.size_ = size;
  out.capacity_ = total;
  return out;
}

std::size_t PaddedBuffer::releasePages(std::size_t from, std::size_t to) const noexcept {
  if ((!mapped() && !discardable_) || !data_) return from;
  to = std::min(to, size_);
  if (to <= from) return from;
  const long page_size = ::sysconf(_SC_PAGESIZE);
  if (page_size <= 0) return from;
  // Memory of our own advised for huge pages (reserveMore) goes back in whole 2 MiB blocks:
  // dropping part of one splits it, and reading the 4 KiB pages left was then several times
  // slower for the next pieces (PERFORMANCE.md, "Whole huge pages given back").
  const auto unit = static_cast<std::uintptr_t>(
      !mapped() && capacity_ >= kHugePagesAdvisedFrom ? kHugePageBytes : page_size);
  const auto base = reinterpret_cast<std::uintptr_t>(data_.get());
  const std::uintptr_t lo = (base + from + unit - 1) / unit * unit;
  const std::uintptr_t hi = (base + to) / unit * unit;
  if (hi <= lo) return from;
  // A map is private: dropping its pages gives the file's bytes back (read again if touched),
  // which are what a page written in place holds again once its bytes are put back. Memory of
  // our own reads as zeros once dropped.
  if (::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_DONTNEED) != 0) return from;
  if (!mapped()) released_.store(true, std::memory_order_relaxed);
  return hi - base;
}

void PaddedBuffer::reserveMore(std::size_t n, std::size_t at_most) {
  if (mapped()) throw std::logic_error("a mapped file's buffer cannot grow");
  const std::size_t need = size_ + n + kPadding;
  if (data_ && need <= capacity_) return;
  std::size_t cap = std::max<std::size_t>(need, capacity_ + capacity_ / 2);
  cap = std::max<std::size_t>(cap, 4096);
  cap = std::max(need, std::min(cap, at_most));
  std::unique_ptr<char[], Release> fresh(new char[cap]);
  adviseHugePages(fresh.get(), cap);
  if (size_ > 0) std::memcpy(fresh.get(), data_.get(), size_);
  // Only the padding after the data must be zero; the rest is written before it is read.
  std::memset(fresh.get() + size_, 0, kPadding);
  data_ = std::move(fresh);
  capacity_ = cap;
}

void PaddedBuffer::append(const char* p, std::size_t n) {
  reserveMore(n);
  if (n > 0) std::memcpy(data_.get() + size_, p, n);
  size_ += n;
  std::memset(data_.get() + size_, 0, kPadding);
}

void PaddedBuffer::setSize(std::size_t n) {
  if (mapped()) throw std::logic_error("a mapped file's buffer cannot grow");
  size_ = n;
  std::memset(data_.get() + size_, 0, kPadding);
}

ReadLimits defaultReadLimits() {
  ReadLimits limits;
  if (const char* env = std::getenv("DDPSCOPE_MAX_TRACE_MB")) {
    char* end = nullptr;
    const unsigned long long mb = std::strtoull(env, &end, 10);
    // Digits only (strtoull would take "-1" as a huge number); at most 2^40 MiB.
    if (end != env && *end == '\0' && env[0] >= '0' && env[0] <= '9' && mb > 0) {
      limits.max_bytes = std::uint64_t{std::min(mb, 1ull << 40)} << 20;
    } else if (env[0] != '\0') {
      limits.setting_error = std::string("DDPSCOPE_MAX_TRACE_MB=\"") + env +
                             "\" is not a size in MiB (a whole number above 0, e.g. 8192); "
                             "fix it, or unset it for the default of 4095 MiB";
    }
  }
  return limits;
}

bool isGzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace {

// Whole MiB as they are; other sizes of a MiB or more rounded up to a tenth, so that a size just
// over a limit never reads as the limit itself.
std::string sizeText(std::uint64_t bytes) {
  constexpr std::uint64_t kMiB = std::uint64_t{1} << 20;
  if (bytes < kMiB) return std::to_string(bytes) + " bytes";
  if (bytes % kMiB == 0) return std::to_string(bytes / kMiB) + " MiB";
  const std::uint64_t tenths = bytes / kMiB * 10 + ((bytes % kMiB) * 10 + kMiB - 1) / kMiB;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
}

// size: what is known of the trace's size, said in the message ("8192 MiB").
[[noreturn]] void tooLarge(const std::string& name, const ReadLimits& limits,
                           const std::string& size) {
  throw TraceError(name, kNoOffset,
                   "the trace (" + size + ") is larger than the limit of " +
                       sizeText(limits.max_bytes) +
                       " (uncompressed); set DDPSCOPE_MAX_TRACE_MB (in MiB) to allow more");
}

}  // namespace

#ifdef DDPSCOPE_HAVE_LIBDEFLATE
namespace {
// Inflates a single-member gzip stream of exactly `size` bytes into `out` (empty, with room for
// them); false, `out` still empty, when it is not one.
bool inflateWhole(std::string_view compressed, std::uint64_t size, PaddedBuffer& out) {
  struct Free {
    void operator()(libdeflate_decompressor* d) const { libdeflate_free_decompressor(d); }
  };
  thread_local std::unique_ptr<libdeflate_decompressor, Free> d(libdeflate_alloc_decompressor());
  if (!d) return false;
  std::size_t in_used = 0, out_size = 0;
  const auto rc =
      libdeflate_gzip_decompress_ex(d.get(), compressed.data(), compressed.size(), out.data(),
                                    static_cast<std::size_t>(size), &in_used, &out_size);
  if (rc != LIBDEFLATE_SUCCESS || in_used != compressed.size() || out_size != size) return false;
  out.setSize(out_size);
  return true;
}
}  // namespace
#endif

std::optional<std::uint64_t> gzipStatedSize(std::string_view compressed) {
  if (!isGzip(compressed) || compressed.size() < 18) return std::nullopt;
  const auto* tail =
      reinterpret_cast<const unsigned char*>(compressed.data() + compressed.size() - 4);
  const std::uint64_t isize = std::uint64_t{tail[0]} | (std::uint64_t{tail[1]} << 8) |
                              (std::uint64_t{tail[2]} << 16) | (std::uint64_t{tail[3]} << 24);
  if (isize >= compressed.size() / 2 && isize <= compressed.size() * std::uint64_t{1032})
    return isize;
  return std::nullopt;
}

StreamedInflate::StreamedInflate(PaddedBuffer compressed, std::size_t size)
    : compressed_(std::move(compressed)) {
  out_.reserveMore(size, size + PaddedBuffer::kPadding);
  out_.setSize(size);  // the padding after it zeroed; the bytes before are written by run()
  try {
    thread_ = std::thread([this] { run(); });
  } catch (const std::system_error&) {
    run();  // no thread to be had: inflated here, before the reading begins
  }
}

StreamedInflate::~StreamedInflate() {
  stop_.store(true, std::memory_order_relaxed);
  if (thread_.joinable()) thread_.join();
}

bool StreamedInflate::waitFor(std::size_t n) {
  n = std::min(n, out_.size());
  if (available() >= n) return true;
  std::unique_lock lock(mutex_);
  arrived_.wait(lock, [&] { return available() >= n || failed_.load(); });
  return available() >= n;
}

void StreamedInflate::run() noexcept {
  const auto fail = [this] {
    {
      const std::lock_guard lock(mutex_);
      failed_.store(true);
    }
    arrived_.notify_all();
  };
  z_stream zs{};
  if (inflateInit2(&zs, 15 + 16) != Z_OK) return fail();  // gzip only
  const std::string_view in = compressed_.view();
  if (in.size() > std::size_t{~uInt{0}}) {
    inflateEnd(&zs);
    return fail();
  }
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  zs.avail_in = static_cast<uInt>(in.size());
  const std::size_t size = out_.size();
  constexpr std::size_t kChunk = std::size_t{1} << 20;
  std::size_t done = 0;
  int rc = Z_OK;
  while (rc == Z_OK && !stop_.load(std::memory_order_relaxed)) {
    const std::size_t room = std::min(kChunk, size - done);
    if (room == 0) {
      // At the stated size and not at the end: one more byte proves the stream longer.
      Bytef extra = 0;
      zs.next_out = &extra;
      zs.avail_out = 1;
      rc = inflate(&zs, Z_NO_FLUSH);
      if (zs.avail_out == 0) rc = Z_DATA_ERROR;
      break;
    }
    zs.next_out = reinterpret_cast<Bytef*>(out_.data() + done);
    zs.avail_out = static_cast<uInt>(room);
    rc = inflate(&zs, Z_NO_FLUSH);
    done += room - zs.avail_out;
    if (done == size) continue;  // the last bytes count once the stream is checked, below
    {
      const std::lock_guard lock(mutex_);
      available_.store(done, std::memory_order_release);
    }
    arrived_.notify_all();
  }
  inflateEnd(&zs);
  // Whole: the end of the stream, at the stated size, with no other member or bytes after it.
  if (rc != Z_STREAM_END || done != size || zs.avail_in != 0) return fail();
  {
    const std::lock_guard lock(mutex_);
    available_.store(size, std::memory_order_release);
  }
  arrived_.notify_all();
}

PaddedBuffer inflateBytes(std::string_view compressed, const std::string& name,
                          const ReadLimits& limits, unsigned threads) {
  if (!limits.setting_error.empty()) throw TraceError(name, kNoOffset, limits.setting_error);
  PaddedBuffer out;
  // A single-member gzip file ends with its uncompressed size: when it is plausible, allocate
  // that once instead of growing (each growth copies everything).
  std::uint64_t expected = compressed.size() * 4 + 4096;
  // Not refused on the trailer's word alone: a cut or damaged file's last bytes can state any
  // size, and its own error ("truncated") is the one to give. The stream below stops at the limit.
  const auto stated = gzipStatedSize(compressed);
  if (stated) expected = *stated + 1;
  out.reserveMore(std::min<std::uint64_t>(expected, limits.max_bytes + 1));
#ifdef DDPSCOPE_HAVE_LIBDEFLATE
  // One gzip member whose trailer states its size: inflated whole, in one call. Anything else
  // (several members, a size the trailer cannot state, an error) is left to zlib's stream below,
  // which also words the errors.
  if (isGzip(compressed) && expected > 1 && expected - 1 <= limits.max_bytes &&
      out.capacity() - PaddedBuffer::kPadding >= expected - 1) {
    // Not for a trailer that claims more than traces compress to (a cut or damaged file: its
    // last bytes are then anything), whose pages would be mapped for nothing.
    const PopulatedBehind populated(out.data(), expected - 1,
                                    threads > 1 && expected - 1 <= compressed.size() * 64);
    if (inflateWhole(compressed, expected - 1, out)) return out;
  }
#endif
  z_stream zs{};
  // 15 + 32: accept gzip or zlib headers.
  if (inflateInit2(&zs, 15 + 32) != Z_OK) throw TraceError(name, kNoOffset, "zlib init failed");
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data()));
  std::size_t remaining = compressed.size();
  std::optional<std::size_t> member_at;  // where the member being read began, after the first
  std::size_t member_out = 0;            // the output's size there
  // Bytes after a whole member that do not begin another one (not even its first bytes, a
  // gzip magic): named for what they are, not as a cut or corrupt member.
  const auto notAMember = [&] {
    return member_at && out.size() == member_out && !isGzip(compressed.substr(*member_at));
  };
  const auto notAMemberError = [&] {
    const std::size_t n = compressed.size() - *member_at;
    return TraceError(name, *member_at,
                      (n == 1 ? std::string("1 byte after the end of the gzip data is")
                              : std::to_string(n) + " bytes after the end of the gzip data are") +
                          " not another gzip member (the file was appended to after it was "
                          "compressed?); its first " +
                          std::to_string(*member_at) +
                          " bytes are whole gzip data: keep those (head -c " +
                          std::to_string(*member_at) + " FILE > COPY.json.gz) and load the copy");
  };
  int rc = Z_OK;
  for (;;) {
    const auto chunk_in = static_cast<uInt>(std::min<std::size_t>(remaining, 1u << 30));
    zs.avail_in = chunk_in;
    if (out.capacity() - out.size() - PaddedBuffer::kPadding == 0) {
      // Never more than one byte past the limit: that byte proves the trace too large.
      const std::size_t most = static_cast<std::size_t>(
          std::min<std::uint64_t>(limits.max_bytes + 1, ~std::size_t{0} >> 1));
      const std::size_t grow = std::min<std::size_t>(
          std::max<std::size_t>(out.size() / 2, 1u << 20), most - std::min(most - 1, out.size()));
      out.reserveMore(grow, most + PaddedBuffer::kPadding);
    }
    const std::size_t room = out.capacity() - out.size() - PaddedBuffer::kPadding;
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + out.size());
    zs.avail_out = static_cast<uInt>(std::min<std::size_t>(room, 1u << 30));
    const uInt before_out = zs.avail_out;
    rc = inflate(&zs, Z_NO_FLUSH);
    remaining -= chunk_in - zs.avail_in;
    out.setSize(out.size() + (before_out - zs.avail_out));
    if (out.size() > limits.max_bytes) {
      inflateEnd(&zs);
      tooLarge(name, limits,
               "more than " + sizeText(limits.max_bytes) + " when inflated" +
                   (stated && *stated > limits.max_bytes
                        ? "; its gzip trailer states " + sizeText(*stated)
                        : std::string()));
    }
    if (rc == Z_STREAM_END) {
      if (remaining == 0) break;
      // Concatenated members are one stream. Zeros after the last one (a copy padded to a block
      // size) are ignored, as gzip ignores them.
      const std::string_view rest = compressed.substr(compressed.size() - remaining);
      if (rest.find_first_not_of('\0') == std::string_view::npos) break;
      member_at = compressed.size() - remaining;
      member_out = out.size();
      if (inflateReset(&zs) != Z_OK) break;
      continue;
    }
    if (rc == Z_BUF_ERROR && remaining == 0 && zs.avail_in == 0) {
      inflateEnd(&zs);
      if (notAMember()) throw notAMemberError();
      throw TraceError(name, compressed.size(),
                       "the gzip stream is truncated (the file ends before the compressed data "
                       "does); was it copied completely?");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string msg = zs.msg ? zs.msg : "unknown error";
      const auto at = compressed.size() - remaining;
      inflateEnd(&zs);
      if (notAMember()) throw notAMemberError();  // zlib would say "incorrect header check"
      // zlib's words, and what they mean for the file; the byte is one of the compressed file.
      const std::string meaning =
          msg == "incorrect data check"
              ? " (what it inflates to does not match the checksum at its end: the file is "
                "damaged; copy it again from where it was written)"
              : "";
      throw TraceError(
          name, at,
          "corrupt gzip data: " + msg + meaning + "; the byte is counted in the compressed file");
    }
  }
  inflateEnd(&zs);
  return out;
}

namespace {
// Below this a copy costs less than setting up a map.
constexpr std::uint64_t kMapAtLeast = std::uint64_t{1} << 20;

// Whether the file is on a local filesystem. A mapped file whose pages cannot be read (a network
// filesystem's I/O error, a server that went away) faults the process (SIGBUS) where read()
// returns an error we can word, so files on network and FUSE filesystems, where training jobs
// usually write their traces, are read, not mapped.
bool onLocalFilesystem(int fd) {
  struct statfs fs {};
  if (::fstatfs(fd, &fs) != 0) return false;
  switch (static_cast<unsigned long>(fs.f_type)) {
    case 0x6969UL:      // NFS
    case 0x517BUL:      // SMB
    case 0xFF534D42UL:  // CIFS
    case 0xFE534D42UL:  // SMB2
    case 0x65735546UL:  // FUSE
    case 0x0BD00BD0UL:  // Lustre
    case 0x00C36400UL:  // Ceph
    case 0x47504653UL:  // GPFS
    case 0x01021997UL:  // 9p
    case 0x5346414FUL:  // AFS
    case 0x6B414653UL:  // kAFS
    case 0x19830326UL:  // BeeGFS
      return false;
    default:
      return true;
  }
}
}  // namespace

PaddedBuffer readTraceBytes(const std::string& path, const ReadLimits& limits,
                            std::optional<std::uint64_t>* hash, unsigned threads, bool inflate) {
  if (!limits.setting_error.empty()) throw TraceError(path, kNoOffset, limits.setting_error);
  // Non-blocking: opening a named pipe for reading would otherwise wait for a writer.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw TraceError(path, kNoOffset, std::string("cannot open: ") + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const int err = errno;
    const bool dir = S_ISDIR(st.st_mode);
    ::close(fd);
    if (dir) {
      throw TraceError(path, kNoOffset,
                       "is a folder; open it as a run (its rank-<r>.json[.gz] files) instead");
    }
    throw TraceError(path, kNoOffset,
                     err != 0 && st.st_mode == 0
                         ? std::string("cannot read: ") + std::strerror(err)
                         : "not a regular file (a pipe, socket or device); save the trace to a "
                           "file first");
  }
  const auto size = static_cast<std::uint64_t>(st.st_size);
  // Refused before reading: gzip never shrinks a trace by more than its few bytes of framing
  // (the size said is the file's: a gzip file's trace is bigger still).
  if (size > limits.max_bytes + limits.max_bytes / 512 + 4096) {
    ::close(fd);
    tooLarge(path, limits, sizeText(size) + " on disk");
  }
  // Big files on a local filesystem are read in place from a map of the file (no copy of their
  // bytes); small ones, files on network filesystems and any file the system will not map are
  // read into memory of our own.
  if (size >= kMapAtLeast && onLocalFilesystem(fd)) {
    PaddedBuffer mapped = PaddedBuffer::mapFile(fd, static_cast<std::size_t>(size));
    if (mapped.mapped()) {
      if (isGzip(mapped.view())) {
        ::close(fd);
        if (hash != nullptr) *hash = contentHash(mapped.view());
        if (!inflate) return mapped;
        return inflateBytes(mapped.view(), path, limits, threads);
      }
      mapped.keepSource(fd);
      if (mapped.size() > limits.max_bytes) tooLarge(path, limits, sizeText(mapped.size()));
      return mapped;
    }
  }
  PaddedBuffer raw;
  raw.reserveMore(size);
  populateForWrite(raw.data(), size);  // read() fills all of it
  std::size_t got = 0;
  while (got < size) {
    const ssize_t n = ::read(fd, raw.data() + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw TraceError(path, got, std::string("read error: ") + std::strerror(err));
    }
    if (n == 0) break;  // the file shrank while being read
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  raw.setSize(got);
  if (hash != nullptr) *hash = contentHash(raw.view());
  if (isGzip(raw.view()))
    return inflate ? inflateBytes(raw.view(), path, limits, threads) : std::move(raw);
  if (raw.size() > limits.max_bytes) tooLarge(path, limits, sizeText(raw.size()));
  return raw;
}

std::uint64_t contentHash(std::string_view bytes) {
  return XXH3_64bits(bytes.data(), bytes.size());
}

std::uint64_t fileContentHash(const std::string& path,
                              const std::function<void(std::uint64_t)>& after_chunk) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    throw TraceError(path, kNoOffset, std::string("cannot open: ") + std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
    throw TraceError(path, kNoOffset, "cannot read: not a regular file");
  XXH3_state_t state;
  XXH3_64bits_reset(&state);
  std::vector<char> buf(std::size_t{1} << 20);
  std::uint64_t done = 0;
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw TraceError(path, done, std::string("read error: ") + std::strerror(errno));
    if (n == 0) break;
    XXH3_64bits_update(&state, buf.data(), static_cast<std::size_t>(n));
    done += static_cast<std::uint64_t>(n);
    if (after_chunk) after_chunk(done);
  }
  return XXH3_64bits_digest(&state);
}

std::string hashHex(std::uint64_t hash) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, hash >>= 4)
    out[static_cast<std::size_t>(i)] = kHex[hash & 15];
  return out;
}

std::string gzipBytes(std::string_view plain, int level) {
  z_stream zs{};
  // 15 + 16: gzip wrapper; zlib leaves the header's mtime at 0, so output is deterministic.
  if (deflateInit2(&zs, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
    throw std::runtime_error("zlib deflate init failed");
  }
  std::string out;
  out.resize(deflateBound(&zs, static_cast<uLong>(plain.size())) + 64);
  zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(plain.data()));
  std::size_t in_left = plain.size();
  std::size_t produced = 0;
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    const auto in_chunk = static_cast<uInt>(std::min<std::size_t>(in_left, 1u << 30));
    zs.avail_in = in_chunk;
    zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
    const auto out_chunk =
        static_cast<uInt>(std::min<std::size_t>(out.size() - produced, 1u << 30));
    zs.avail_out = out_chunk;
    rc = deflate(&zs, in_left == in_chunk ? Z_FINISH : Z_NO_FLUSH);
    in_left -= in_chunk - zs.avail_in;
    produced += out_chunk - zs.avail_out;
    if (rc != Z_OK && rc != Z_STREAM_END && rc != Z_BUF_ERROR) break;
    if (produced == out.size()) out.resize(out.size() * 2);
  }
  deflateEnd(&zs);
  if (rc != Z_STREAM_END) throw std::runtime_error("zlib deflate failed");
  out.resize(produced);
  return out;
}

namespace {

// Writes bytes to a new temporary file beside `path` and flushes it; returns its name. On
// failure nothing is left behind and a std::runtime_error names `path` and the cause.
std::string writeTemporary(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> counter{0};
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  const std::string tmp = dir + "/." + base + ".tmp-" + std::to_string(::getpid()) + "-" +
                          std::to_string(counter.fetch_add(1));
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error("cannot write " + path + ": " + std::strerror(errno));
  }
  auto fail = [&](const char* what) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + " (" + what + "): " + std::strerror(err) +
                             "; the previous file, if any, is unchanged");
  };
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail("write");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) fail("fsync");
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error("cannot write " + path + " (close): " + std::strerror(err));
  }
  return tmp;
}

// Why the written temporary could not take the target's name, in the user's words: a folder
// in the way is the common case (an output "file" that names a folder).
std::string replaceError(const std::string& target, int err) {
  if (err == EISDIR)
    return "cannot write " + target + ": it is a folder; give a file name (e.g. " +
           (std::filesystem::path(target) / "out").string() + ")";
  return "cannot write " + target + ": " + std::strerror(err) +
         "; the previous file, if any, is unchanged";
}

}  // namespace

std::string writeFileAtomically(const std::string& path, std::string_view bytes,
                                const FinalPath& final_path) {
  const std::string tmp = writeTemporary(path, bytes);
  std::string target = path;
  if (final_path) {
    try {
      target = final_path(path);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), target.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    throw std::runtime_error(replaceError(target, err));
  }
  return target;
}

void writeFilesAtomically(const std::vector<std::pair<std::string, std::string_view>>& files) {
  std::vector<std::string> temps;  // written, not yet renamed
  const auto remove_from = [&](std::size_t first) {
    for (std::size_t i = first; i < temps.size(); ++i)
      ::unlink(temps[i].c_str());
  };
  for (const auto& [path, bytes] : files) {
    try {
      temps.push_back(writeTemporary(path, bytes));
    } catch (const std::runtime_error& e) {
      remove_from(0);
      throw std::runtime_error(std::string(e.what()) + "; none of the " +
                               std::to_string(files.size()) + " files was written");
    }
  }
  for (std::size_t i = 0; i < files.size(); ++i) {
    if (::rename(temps[i].c_str(), files[i].first.c_str()) != 0) {
      const int err = errno;
      remove_from(i);
      throw std::runtime_error(replaceError(files[i].first, err) +
                               (i > 0 ? "; the files before it were written" : ""));
    }
  }
}

}  // namespace ddpscope::trace
