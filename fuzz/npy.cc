// The .npy reader (format versions 1.0 to 3.0).

#include "kaas/models/npy.h"
#include "fuzz/fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  return kaas::fuzz::rejecting_errors(
      [&] { (void)kaas::models::parse_npy(std::string(kaas::fuzz::as_text(data, size)), "fuzz"); });
}
