#pragma once
// Small bridges between kaas and Triton's C API: errors both ways, logging, JSON messages and
// data types.

#include <exception>
#include <optional>
#include <string>

#include "kaas/models/tensor.h"
#include "kaas/server_adapter/triton/triton_api.h"

namespace kaas::triton {

// A Triton error (owned by the caller) for a kaas::Error, or kInternal for anything else.
TRITONSERVER_Error* to_triton_error(const std::exception& e);
TRITONSERVER_Error* to_triton_error(ErrorCode code, const std::string& message);
TRITONSERVER_Error_Code to_triton_code(ErrorCode code);

// Throws kaas::Error (kInternal) with `what` and Triton's message when `error` is set, and
// deletes it.
void check(TRITONSERVER_Error* error, const char* what);

void log(TRITONSERVER_LogLevel level, const char* file, int line, const std::string& message);
#define KAAS_TRITON_LOG(level, message) \
  ::kaas::triton::log(TRITONSERVER_LOG_##level, __FILE__, __LINE__, (message))

// The JSON text of a message (the message stays the caller's).
std::string message_json(TRITONSERVER_Message* message);

std::optional<models::DataType> from_triton_type(TRITONSERVER_DataType type);
TRITONSERVER_DataType to_triton_type(models::DataType type);
const char* triton_type_name(TRITONSERVER_DataType type);

}  // namespace kaas::triton
