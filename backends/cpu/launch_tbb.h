#pragma once
// launch() of the tbb backend: groups are spread over a team of oneTBB tasks (host_team.h: the
// caller's arena, so inside a framework's TBB task the launch shares the framework's threads
// instead of starting threads of its own; or an arena of kaas's requested size).

#include "kaas/backends/cpu/host_ctx.h"
#include "kaas/backends/cpu/host_team.h"
#include "kaas/backends/cpu/shared_scratch.h"
#include "kaas/backends/launch_check.h"
#include "kaas/backends/queue.h"

namespace kaas::tbb {

template <class Kernel, class... Args>
void launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
            const Kernel& kernel, const Args&... args) {
  check_launch(queue, groups, group_size, shared_bytes, Kernel::kName);
  host::run_team(HostThreads::kTbb, groups > 1, [&](host::TeamMember& member) {
    const host::Range range = member.share(groups);
    if (range.begin == range.end) return;
    unsigned char* shared = detail::thread_shared_scratch(shared_bytes);
    for (int64_t g = range.begin; g < range.end; ++g) {
      kernel(Ctx(g, groups, group_size, shared), args...);
    }
  });
}

}  // namespace kaas::tbb
