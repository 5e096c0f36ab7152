#pragma once
// Launch-argument validation shared by every backend's launch(): a bad launch is an
// InvalidArgument error naming the kernel, never undefined behaviour on the device.

#include <cstddef>
#include <cstdint>

namespace kaas {

class Queue;

void check_launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
                  const char* kernel_name);

}  // namespace kaas
