#pragma once
// Turns a GPU runtime status into a kaas::Error naming the failed call.

#include <string>

#include "kaas/backends/gpu/runtime.h"
#include "kaas/common/error.h"

namespace kaas::KAAS_BACKEND_NS::rt {

inline void check(error_t status, const char* call) {
  if (status == kSuccess) return;
  throw Error(ErrorCode::kInternal,
              std::string(kRuntimeName) + " call " + call + " failed: " + error_string(status));
}

}  // namespace kaas::KAAS_BACKEND_NS::rt
