#pragma once
// The one error type of kaas. Its code maps 1:1 onto gRPC / KServe statuses so the server can
// forward library errors unchanged.

#include <cstdint>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

namespace kaas {

enum class ErrorCode {
  kInvalidArgument,    // bad shape, dtype, size, attribute, malformed model or request
  kNotFound,           // unknown model, backend, tensor name
  kUnavailable,        // device or server not present / not ready
  kResourceExhausted,  // out of memory, queue full
  kUnimplemented,      // valid request that kaas does not support (yet)
  kInternal,           // a bug or a runtime failure (GPU launch error, barrier divergence)
  kDeadlineExceeded,   // the caller's deadline passed before the answer came
  kAlreadyExists,      // a name registered twice (shared-memory regions)
  kCancelled,          // the client went away (cancelled the call) before the answer came
};

std::string_view to_string(ErrorCode code);
int grpc_status_code(ErrorCode code);  // google.rpc.Code value
int http_status_code(ErrorCode code);  // Triton's HTTP mapping

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message);
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

// Outside bytes as error messages quote them: printable ASCII as is, everything else as \xNN,
// at most `limit` bytes (then "..."), so a reply never carries raw user bytes.
std::string escape_for_message(std::string_view bytes, size_t limit = 256);

// "[2,48,48,1]": how error messages write a shape.
std::string shape_string(std::span<const int64_t> shape);

// Throws kInvalidArgument "<where>: <what>: expected <expected>, received <received>" unless ok.
void require(bool ok, std::string_view where, std::string_view what, std::string_view expected,
             std::string_view received);

}  // namespace kaas
