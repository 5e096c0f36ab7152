#include "kaas/models/precision.h"

#include "kaas/common/error.h"

namespace kaas::models {

std::string_view to_string(Precision precision) {
  switch (precision) {
    case Precision::kFp32:
      return "fp32";
    case Precision::kBf16:
      return "bf16";
    case Precision::kFp16:
      return "fp16";
  }
  return "unknown";
}

Precision precision_from_string(std::string_view name, const std::string& where) {
  for (Precision p : {Precision::kFp32, Precision::kBf16, Precision::kFp16}) {
    if (to_string(p) == name) return p;
  }
  throw Error(
      ErrorCode::kInvalidArgument,
      where + ": precision: expected fp32, bf16 or fp16, received '" + std::string(name) + "'");
}

}  // namespace kaas::models
