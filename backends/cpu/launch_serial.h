#pragma once
// launch() of the serial backend: groups run one after another on the calling thread.

#include "kaas/backends/cpu/host_ctx.h"
#include "kaas/backends/cpu/shared_scratch.h"
#include "kaas/backends/launch_check.h"
#include "kaas/backends/queue.h"

namespace kaas::serial {

template <class Kernel, class... Args>
void launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
            const Kernel& kernel, const Args&... args) {
  check_launch(queue, groups, group_size, shared_bytes, Kernel::kName);
  unsigned char* shared = detail::thread_shared_scratch(shared_bytes);
  for (int64_t g = 0; g < groups; ++g) {
    kernel(Ctx(g, groups, group_size, shared), args...);
  }
}

}  // namespace kaas::serial
