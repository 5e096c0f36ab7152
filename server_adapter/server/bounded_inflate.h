#pragma once
// Compressed request bodies -- REST Content-Encoding gzip/deflate, gRPC messages sent with
// grpc-encoding gzip/deflate -- inflated to at most a limit: inflation stops as soon as the output
// passes it, so a body of a megabyte that would inflate to gigabytes costs at most the limit of
// memory and the time to produce it, whatever the transport.

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "kaas/common/error.h"

namespace kaas::server {

struct InflateLimit {
  size_t bytes = 0;
  ErrorCode code = ErrorCode::kInvalidArgument;  // of the error past the limit
  std::string why = "";  // what the limit follows, for the error (e.g. "--max-request-bytes")
  // Called once with the first kNarrowAfterBytes inflated (or the whole of a shorter stream): may
  // lower the limit, e.g. to what the model named at the start of an inference request accepts.
  std::function<void(std::string_view first_bytes, InflateLimit& limit)> narrow = nullptr;
};
inline constexpr size_t kNarrowAfterBytes = 4096;

// A gzip or zlib ("deflate") stream given in pieces (a gRPC message's slices), inflated with its
// checksum verified. A truncated stream, a bad checksum or bytes after the end are
// kInvalidArgument naming `encoding`; more than limit.bytes of output is limit.code.
std::string inflate_bounded(std::span<const std::string_view> pieces, std::string_view encoding,
                            const InflateLimit& limit);

}  // namespace kaas::server
