#include "kaas/backends/cpu/shared_scratch.h"

#include <memory>

#include "kaas/backends/buffer.h"

namespace kaas::detail {

unsigned char* thread_shared_scratch(size_t bytes) {
  struct Scratch {
    unsigned char* data = nullptr;
    size_t capacity = 0;
    ~Scratch() { free_host(data); }
  };
  thread_local Scratch scratch;
  if (bytes > scratch.capacity) {
    free_host(scratch.data);
    scratch.data = nullptr;
    scratch.capacity = 0;
    scratch.data = static_cast<unsigned char*>(allocate_host(bytes));
    scratch.capacity = bytes;
  }
  return scratch.data;
}

}  // namespace kaas::detail
