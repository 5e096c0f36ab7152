#include "kaas/backends/buffer.h"

#include <cstdlib>
#include <new>

namespace kaas::detail {

void* allocate_host(size_t bytes) {
  constexpr size_t kAlignment = 64;  // a cache line; also enough for AVX-512 loads
  const size_t rounded = (bytes + kAlignment - 1) / kAlignment * kAlignment;
  void* ptr = std::aligned_alloc(kAlignment, rounded);
  if (ptr == nullptr) {
    throw Error(ErrorCode::kResourceExhausted,
                "host allocation of " + std::to_string(bytes) + " bytes failed");
  }
  return ptr;
}

void free_host(void* ptr) noexcept {
  std::free(ptr);
}

}  // namespace kaas::detail
