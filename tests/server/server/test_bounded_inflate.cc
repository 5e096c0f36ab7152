// inflate_bounded: a stream split into pieces (a gRPC message's slices) inflates to the same
// bytes; the limit stops inflation, narrowing lowers it once; broken streams are named.
#include "kaas/server_adapter/server/bounded_inflate.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <string>
#include <vector>

namespace kaas::server {
namespace {

// zlib's own compressor: windowBits 15 (zlib/"deflate") or 31 (gzip).
std::string compress(const std::string& data, int window_bits) {
  z_stream z{};
  EXPECT_EQ(deflateInit2(&z, 9, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&z, uLong(data.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = uInt(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = uInt(out.size());
  EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

std::vector<std::string_view> split(const std::string& s, size_t piece) {
  std::vector<std::string_view> pieces;
  for (size_t i = 0; i < s.size(); i += piece)
    pieces.push_back(std::string_view(s).substr(i, piece));
  return pieces;
}

std::string sample(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = char((i * 7919) % 251 < 200 ? 'a' + i % 3 : i % 256);
  return s;
}

ErrorCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return ErrorCode::kInternal;  // no error: never expected where used
}

TEST(BoundedInflate, PiecesOfAnySizeGiveTheSameBytes) {
  const std::string data = sample(300'000);
  for (int bits : {15, 31}) {
    const std::string packed = compress(data, bits);
    for (size_t piece : {size_t(1), size_t(7), size_t(4096), packed.size()}) {
      const auto pieces = split(packed, piece);
      EXPECT_EQ(inflate_bounded(pieces, "gzip", {.bytes = data.size()}), data)
          << bits << " " << piece;
    }
  }
}

TEST(BoundedInflate, StopsAtTheLimitAndNarrowsOnce) {
  const std::string zeros(64 << 20, '\0');
  const std::string packed = compress(zeros, 31);  // ~64 KB
  try {
    inflate_bounded(split(packed, 1000), "gzip",
                    {.bytes = 1 << 20, .code = ErrorCode::kResourceExhausted, .why = "a test"});
    FAIL() << "inflated past the limit";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kResourceExhausted);
    EXPECT_NE(std::string(e.what()).find("larger than 1048576 bytes after decompression (a test)"),
              std::string::npos)
        << e.what();
  }
  int calls = 0;
  size_t seen = 0;
  InflateLimit limit{.bytes = 32 << 20, .code = ErrorCode::kResourceExhausted, .why = "wide"};
  limit.narrow = [&](std::string_view first, InflateLimit& narrowed) {
    ++calls;
    seen = first.size();
    narrowed.bytes = 100'000;
    narrowed.why = "narrowed";
  };
  try {
    inflate_bounded(split(packed, packed.size()), "gzip", limit);
    FAIL() << "inflated past the narrowed limit";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("100000 bytes after decompression (narrowed)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(calls, 1);
  EXPECT_GE(seen, kNarrowAfterBytes);
  // A stream shorter than the narrowing point is narrowed at its end, and fits.
  calls = 0;
  const std::string small = sample(100);
  EXPECT_EQ(inflate_bounded(split(compress(small, 15), 3), "deflate", limit), small);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(seen, small.size());
}

TEST(BoundedInflate, BrokenStreamsAreNamed) {
  const std::string data = sample(10'000);
  const std::string packed = compress(data, 31);
  auto message_of = [](const std::string& stream) {
    try {
      const std::string_view whole = stream;
      inflate_bounded(std::span(&whole, 1), "gzip", {.bytes = 1 << 20});
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message_of(packed.substr(0, packed.size() - 8)).find("truncated"), std::string::npos);
  EXPECT_NE(message_of(packed + "xx").find("after the end"), std::string::npos);
  std::string bad_crc = packed;
  bad_crc[bad_crc.size() - 8] ^= 0x5a;
  EXPECT_NE(message_of(bad_crc).find("corrupt"), std::string::npos);
  EXPECT_NE(message_of("").find("truncated"), std::string::npos);
  EXPECT_EQ(code_of([] {
              const std::string_view text = "not compressed";
              inflate_bounded(std::span(&text, 1), "deflate", {.bytes = 100});
            }),
            ErrorCode::kInvalidArgument);
}

}  // namespace
}  // namespace kaas::server
