#pragma once
// launch() of the emulated-GPU backend. Slow by design (a fiber per element); tests only.

#include "kaas/backends/gpu_emu/ctx.h"
#include "kaas/backends/launch_check.h"
#include "kaas/backends/queue.h"

namespace kaas::gpu_emu {

template <class Kernel, class... Args>
void launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
            const Kernel& kernel, const Args&... args) {
  check_launch(queue, groups, group_size, shared_bytes, Kernel::kName);
  run_emulated(groups, group_size, shared_bytes, Kernel::kName,
               [&](const ThreadPlace& place) { kernel(Ctx(place), args...); });
}

}  // namespace kaas::gpu_emu
