#include "kaas/common/error.h"

#include <sstream>

namespace kaas {

std::string_view to_string(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case ErrorCode::kNotFound:
      return "NOT_FOUND";
    case ErrorCode::kUnavailable:
      return "UNAVAILABLE";
    case ErrorCode::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case ErrorCode::kUnimplemented:
      return "UNIMPLEMENTED";
    case ErrorCode::kInternal:
      return "INTERNAL";
    case ErrorCode::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case ErrorCode::kAlreadyExists:
      return "ALREADY_EXISTS";
    case ErrorCode::kCancelled:
      return "CANCELLED";
  }
  return "INTERNAL";
}

int grpc_status_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 3;
    case ErrorCode::kNotFound:
      return 5;
    case ErrorCode::kUnavailable:
      return 14;
    case ErrorCode::kResourceExhausted:
      return 8;
    case ErrorCode::kUnimplemented:
      return 12;
    case ErrorCode::kInternal:
      return 13;
    case ErrorCode::kDeadlineExceeded:
      return 4;
    case ErrorCode::kAlreadyExists:
      return 6;
    case ErrorCode::kCancelled:
      return 1;
  }
  return 13;
}

int http_status_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return 400;
    case ErrorCode::kNotFound:
      return 404;
    case ErrorCode::kUnavailable:
      return 503;
    case ErrorCode::kResourceExhausted:
      return 503;  // Triton answers a full queue with 503 Service Unavailable.
    case ErrorCode::kUnimplemented:
      return 501;
    case ErrorCode::kInternal:
      return 500;
    case ErrorCode::kDeadlineExceeded:
      return 504;
    case ErrorCode::kAlreadyExists:
    case ErrorCode::kCancelled:
      return 400;  // as Triton
  }
  return 500;
}

Error::Error(ErrorCode code, const std::string& message)
    : std::runtime_error(message), code_(code) {}

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t d = 0; d < shape.size(); ++d) {
    if (d > 0) s += ",";
    s += std::to_string(shape[d]);
  }
  return s + "]";
}

void require(bool ok, std::string_view where, std::string_view what, std::string_view expected,
             std::string_view received) {
  if (ok) return;
  std::ostringstream message;
  message << where << ": " << what << ": expected " << expected << ", received " << received;
  throw Error(ErrorCode::kInvalidArgument, message.str());
}

std::string escape_for_message(std::string_view bytes, size_t limit) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += char(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  if (bytes.size() > limit) out += "...";
  return out;
}

}  // namespace kaas
