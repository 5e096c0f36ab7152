#pragma once
// What every fuzz target shares: the libFuzzer entry point's signature, and the rule that a
// kaas::Error (a clear rejection) is the expected outcome of bad bytes; anything else escaping
// (another exception, a crash, a sanitizer report) is a finding.

#include <cstddef>
#include <cstdint>
#include <string_view>

#include "kaas/common/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace kaas::fuzz {

inline std::string_view as_text(const uint8_t* data, size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

template <class F>
int rejecting_errors(F&& f) {
  try {
    f();
  } catch (const kaas::Error&) {
  }
  return 0;
}

}  // namespace kaas::fuzz
