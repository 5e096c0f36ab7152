#pragma once
// launch() of the OpenMP backend: groups are spread over requested_team() threads
// (openmp_threads.h: the caller's or the process's setting, else OpenMP's own). Called from inside
// an active parallel region, the launch runs on the calling thread only, so kaas nests inside
// task-based frameworks without oversubscribing the machine.

#include <omp.h>

#include "kaas/backends/cpu/host_ctx.h"
#include "kaas/backends/cpu/openmp_threads.h"
#include "kaas/backends/cpu/shared_scratch.h"
#include "kaas/backends/launch_check.h"
#include "kaas/backends/queue.h"

namespace kaas::openmp {

template <class Kernel, class... Args>
void launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
            const Kernel& kernel, const Args&... args) {
  check_launch(queue, groups, group_size, shared_bytes, Kernel::kName);
  const bool go_parallel = groups > 1 && !omp_in_parallel();
#pragma omp parallel if (go_parallel) num_threads(requested_team())
  {
    if (go_parallel && omp_get_thread_num() == 0) note_team(omp_get_num_threads());
    unsigned char* shared = detail::thread_shared_scratch(shared_bytes);
#pragma omp for schedule(static)
    for (int64_t g = 0; g < groups; ++g) {
      kernel(Ctx(g, groups, group_size, shared), args...);
    }
  }
}

}  // namespace kaas::openmp
