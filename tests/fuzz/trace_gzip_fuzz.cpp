// Any bytes as a gzip stream: inflate stops with a TraceError (corrupt, truncated, too large) or
// succeeds within the size limit; never crashes or grows past it.
//
// Oracle: zlib's own inflate, driven as plainly as possible, member by member (the reader takes
// concatenated members as one stream, and zlib members as well as gzip ones). Where the
// project's inflate succeeds, its bytes are exactly zlib's; where zlib decodes the input within
// the limit, the project's inflate succeeds too.
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "tracer/format/file_io.h"
#include "tracer/format/trace_error.h"
#include "tracer/format/trace_reader.h"

using namespace ddpscope;

namespace {

// zlib's inflate of one or more members back to back: a gzip member (1f 8b) with 16+MAX_WBITS,
// a zlib member with MAX_WBITS; zeros after a member end the input, as gzip ignores them. Empty
// when the input is empty, a member is corrupt or cut short, other bytes after a member are not
// another whole member, or the output passes at_most bytes.
std::optional<std::string> zlibInflate(std::string_view in, std::size_t at_most) {
  std::string out;
  const auto* next = reinterpret_cast<const unsigned char*>(in.data());
  std::size_t left = in.size();
  if (left == 0) return std::nullopt;
  for (bool first = true; left > 0; first = false) {
    if (!first && std::all_of(next, next + left, [](unsigned char c) { return c == 0; })) break;
    const bool gzip = left >= 2 && next[0] == 0x1f && next[1] == 0x8b;
    z_stream zs{};
    if (inflateInit2(&zs, gzip ? 16 + MAX_WBITS : MAX_WBITS) != Z_OK) std::abort();
    zs.next_in = const_cast<Bytef*>(next);
    zs.avail_in = static_cast<uInt>(left);  // fuzz inputs are far below 4 GiB
    int rc = Z_OK;
    while (rc == Z_OK) {
      unsigned char chunk[16384];
      zs.next_out = chunk;
      zs.avail_out = sizeof chunk;
      rc = inflate(&zs, Z_NO_FLUSH);
      out.append(reinterpret_cast<const char*>(chunk), sizeof chunk - zs.avail_out);
      if (out.size() > at_most) rc = Z_MEM_ERROR;        // too large: not compared
      if (rc == Z_BUF_ERROR && zs.avail_in == 0) break;  // cut short
      if (rc == Z_BUF_ERROR) rc = Z_OK;                  // output was full: go on
    }
    next = zs.next_in;
    left = zs.avail_in;
    inflateEnd(&zs);
    if (rc != Z_STREAM_END) return std::nullopt;
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  trace::ReadLimits limits;
  limits.max_bytes = 1 << 20;
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  std::optional<trace::PaddedBuffer> plain;
  try {
    plain = trace::inflateBytes(input, "fuzz.json.gz", limits);
  } catch (const trace::TraceError&) {
  }
  const auto reference = zlibInflate(input, limits.max_bytes);
  if (plain) {
    if (plain->size() > limits.max_bytes) std::abort();
    if (!reference) {
      std::fprintf(stderr, "trace_gzip: inflated %zu bytes of an input zlib refuses\n",
                   plain->size());
      std::abort();
    }
    if (plain->view() != *reference) {
      std::fprintf(stderr, "trace_gzip: inflated %zu bytes, zlib %zu; they differ\n", plain->size(),
                   reference->size());
      std::abort();
    }
    try {
      (void)trace::parseTrace(*plain, "fuzz.json.gz");
    } catch (const trace::TraceError&) {
    }
  } else if (reference) {
    std::fprintf(stderr, "trace_gzip: refused an input zlib inflates to %zu bytes\n",
                 reference->size());
    std::abort();
  }
  return 0;
}
