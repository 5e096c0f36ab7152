#pragma once
// Reading a gRPC request message as received: kaas-server runs with gRPC's per-message
// decompression off (gRPC 1.51 inflates a message whole before any limit), so each method parses
// its request here and a compressed one inflates at most to the method's bound.

#include <grpc/byte_buffer.h>
#include <grpc/compression.h>
#include <grpc/slice.h>
#include <grpcpp/grpcpp.h>

#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "kaas/common/error.h"
#include "kaas/server_adapter/server/bounded_inflate.h"

namespace kaas::server {

// A kaas error as a gRPC status with the matching code; anything else INTERNAL.
inline grpc::Status to_status(const std::exception& e) {
  if (const auto* k = dynamic_cast<const Error*>(&e))
    return grpc::Status(static_cast<grpc::StatusCode>(grpc_status_code(k->code())), k->what());
  return grpc::Status(grpc::StatusCode::INTERNAL, e.what());
}

// The message as gRPC received it: the server runs with per-message decompression off, so a
// compressed message is still compressed here. grpc::ByteBuffer is a standard-layout wrapper of
// exactly this pointer (its header asserts the representation), hence pointer-interconvertible
// with it.
inline grpc_byte_buffer* core_buffer(grpc::ByteBuffer& buffer) {
  static_assert(std::is_standard_layout_v<grpc::ByteBuffer> &&
                sizeof(grpc::ByteBuffer) == sizeof(grpc_byte_buffer*));
  return *reinterpret_cast<grpc_byte_buffer**>(&buffer);
}

// The request in `received`, inflated to at most limit_of().bytes when the client compressed it
// (the limit is worked out only then: an uncompressed message pays nothing for it).
template <class Message, class LimitOf>
grpc::Status parse_bounded(grpc::ByteBuffer& received, const LimitOf& limit_of, Message& message) {
  const grpc_byte_buffer* raw = core_buffer(received);
  if (raw == nullptr) return grpc::Status(grpc::StatusCode::INTERNAL, "no request message");
  if (raw->type != GRPC_BB_RAW || raw->data.raw.compression == GRPC_COMPRESS_NONE)
    return grpc::SerializationTraits<Message>::Deserialize(&received, &message);
  const char* algorithm = "compressed";
  grpc_compression_algorithm_name(raw->data.raw.compression, &algorithm);
  std::vector<std::string_view> pieces;
  const grpc_slice_buffer& slices = raw->data.raw.slice_buffer;
  for (size_t i = 0; i < slices.count; ++i) {
    pieces.emplace_back(reinterpret_cast<const char*>(GRPC_SLICE_START_PTR(slices.slices[i])),
                        GRPC_SLICE_LENGTH(slices.slices[i]));
  }
  try {
    const std::string inflated = inflate_bounded(pieces, algorithm, limit_of());
    if (!message.ParseFromString(inflated))
      return grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          "the " + std::string(algorithm) + " message is not a valid " + message.GetTypeName());
  } catch (const std::exception& e) {
    return to_status(e);
  }
  return grpc::Status::OK;
}

}  // namespace kaas::server
