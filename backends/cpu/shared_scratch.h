#pragma once
// Per-thread group-shared memory for the CPU backends: reused between launches so a launch
// allocates nothing after the first one on a thread.

#include <cstddef>

namespace kaas::detail {

// At least `bytes` of 64-byte aligned memory owned by the calling thread.
unsigned char* thread_shared_scratch(size_t bytes);

}  // namespace kaas::detail
