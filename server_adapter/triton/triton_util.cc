#include "kaas/server_adapter/triton/triton_util.h"

#include "kaas/common/error.h"

namespace kaas::triton {

TRITONSERVER_Error_Code to_triton_code(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return TRITONSERVER_ERROR_INVALID_ARG;
    case ErrorCode::kNotFound:
      return TRITONSERVER_ERROR_NOT_FOUND;
    case ErrorCode::kUnavailable:
    case ErrorCode::kResourceExhausted:
    case ErrorCode::kDeadlineExceeded:
      return TRITONSERVER_ERROR_UNAVAILABLE;
    case ErrorCode::kUnimplemented:
      return TRITONSERVER_ERROR_UNSUPPORTED;
    case ErrorCode::kAlreadyExists:
      return TRITONSERVER_ERROR_ALREADY_EXISTS;
    case ErrorCode::kCancelled:
      return TRITONSERVER_ERROR_CANCELLED;
    case ErrorCode::kInternal:
      return TRITONSERVER_ERROR_INTERNAL;
  }
  return TRITONSERVER_ERROR_INTERNAL;
}

TRITONSERVER_Error* to_triton_error(ErrorCode code, const std::string& message) {
  return TRITONSERVER_ErrorNew(to_triton_code(code), message.c_str());
}

TRITONSERVER_Error* to_triton_error(const std::exception& e) {
  if (const auto* error = dynamic_cast<const Error*>(&e))
    return to_triton_error(error->code(), error->what());
  return TRITONSERVER_ErrorNew(TRITONSERVER_ERROR_INTERNAL, e.what());
}

void check(TRITONSERVER_Error* error, const char* what) {
  if (error == nullptr) return;
  std::string message = std::string(what) + ": " + TRITONSERVER_ErrorMessage(error);
  TRITONSERVER_ErrorDelete(error);
  throw Error(ErrorCode::kInternal, message);
}

void log(TRITONSERVER_LogLevel level, const char* file, int line, const std::string& message) {
  if (!TRITONSERVER_LogIsEnabled(level)) return;
  const std::string text = "kaas: " + message;
  if (TRITONSERVER_Error* error = TRITONSERVER_LogMessage(level, file, line, text.c_str()))
    TRITONSERVER_ErrorDelete(error);
}

std::string message_json(TRITONSERVER_Message* message) {
  const char* base = nullptr;
  size_t size = 0;
  check(TRITONSERVER_MessageSerializeToJson(message, &base, &size), "serializing a message");
  return std::string(base, size);
}

std::optional<models::DataType> from_triton_type(TRITONSERVER_DataType type) {
  switch (type) {
    case TRITONSERVER_TYPE_FP32:
      return models::DataType::kFloat32;
    case TRITONSERVER_TYPE_INT32:
      return models::DataType::kInt32;
    case TRITONSERVER_TYPE_INT64:
      return models::DataType::kInt64;
    case TRITONSERVER_TYPE_UINT8:
      return models::DataType::kUint8;
    case TRITONSERVER_TYPE_FP16:
      return models::DataType::kFloat16;
    case TRITONSERVER_TYPE_BF16:
      return models::DataType::kBFloat16;
    default:
      return std::nullopt;
  }
}

TRITONSERVER_DataType to_triton_type(models::DataType type) {
  switch (type) {
    case models::DataType::kFloat32:
      return TRITONSERVER_TYPE_FP32;
    case models::DataType::kInt32:
      return TRITONSERVER_TYPE_INT32;
    case models::DataType::kInt64:
      return TRITONSERVER_TYPE_INT64;
    case models::DataType::kUint8:
      return TRITONSERVER_TYPE_UINT8;
    case models::DataType::kFloat16:
      return TRITONSERVER_TYPE_FP16;
    case models::DataType::kBFloat16:
      return TRITONSERVER_TYPE_BF16;
  }
  return TRITONSERVER_TYPE_INVALID;
}

const char* triton_type_name(TRITONSERVER_DataType type) {
  static constexpr const char* kNames[] = {"INVALID", "BOOL", "UINT8", "UINT16", "UINT32",
                                           "UINT64",  "INT8", "INT16", "INT32",  "INT64",
                                           "FP16",    "FP32", "FP64",  "BYTES",  "BF16"};
  const int index = int(type);
  return index >= 0 && index < int(std::size(kNames)) ? kNames[index] : "INVALID";
}

}  // namespace kaas::triton
