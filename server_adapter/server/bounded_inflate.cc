#include "kaas/server_adapter/server/bounded_inflate.h"

#include <zlib.h>

#include <algorithm>
#include <climits>

namespace kaas::server {

std::string inflate_bounded(std::span<const std::string_view> pieces, std::string_view encoding,
                            const InflateLimit& given) {
  InflateLimit limit = given;
  z_stream z{};
  if (inflateInit2(&z, 15 + 32) != Z_OK)  // 15 + 32: zlib or gzip header, detected
    throw Error(ErrorCode::kInternal, "zlib: cannot initialise inflate");
  std::string out;
  // Reserved once: pages are touched only as bytes arrive, and a growing string would briefly
  // hold its old and new copies (up to 3x what was inflated).
  out.reserve(limit.bytes);
  char chunk[1 << 16];
  size_t next_piece = 0;
  std::string_view rest;  // of the current piece, not yet given to zlib (uInt counts < 4 GiB)
  auto input_left = [&] { return z.avail_in > 0 || !rest.empty() || next_piece < pieces.size(); };
  int status = Z_OK;
  while (status == Z_OK) {
    while (z.avail_in == 0 && (!rest.empty() || next_piece < pieces.size())) {
      if (rest.empty()) rest = pieces[next_piece++];
      const size_t take = std::min<size_t>(rest.size(), UINT_MAX);
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(rest.data()));
      z.avail_in = uInt(take);
      rest.remove_prefix(take);
    }
    z.next_out = reinterpret_cast<Bytef*>(chunk);
    z.avail_out = sizeof(chunk);
    status = inflate(&z, Z_NO_FLUSH);
    const size_t produced = sizeof(chunk) - z.avail_out;
    const bool fits = out.size() + produced <= limit.bytes;
    if (fits) out.append(chunk, produced);
    if (limit.narrow && (out.size() >= kNarrowAfterBytes || status != Z_OK || !fits)) {
      auto narrow = std::move(limit.narrow);  // once
      limit.narrow = nullptr;
      narrow(out, limit);
    }
    if (!fits || out.size() > limit.bytes) {
      inflateEnd(&z);
      throw Error(limit.code, "request larger than " + std::to_string(limit.bytes) +
                                  " bytes after decompression (" + limit.why + ")");
    }
    // Z_BUF_ERROR with a fresh output chunk: zlib needs input and none is left (truncated).
  }
  const bool complete = status == Z_STREAM_END && !input_left();
  const std::string reason = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (!complete)
    throw Error(
        ErrorCode::kInvalidArgument,
        std::string(encoding) + " compression: " +
            (status == Z_STREAM_END   ? std::string("bytes after the end of the stream")
             : status == Z_DATA_ERROR ? "corrupt data (" + reason + ")"
                                      : std::string("truncated stream (no end / checksum)")));
  return out;
}

}  // namespace kaas::server
