#pragma once
// launch() of the CUDA and HIP backends: one block per group on the queue's stream.

#include <string>

#include "kaas/backends/gpu/check.h"
#include "kaas/backends/gpu/ctx.h"
#include "kaas/backends/launch_check.h"
#include "kaas/backends/queue.h"

namespace kaas::KAAS_BACKEND_NS {

template <class Kernel, class... Args>
__global__ void kernel_entry(Kernel kernel, Args... args) {
  kernel(Ctx{}, args...);
}

template <class Kernel, class... Args>
void launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
            const Kernel& kernel, const Args&... args) {
  check_launch(queue, groups, group_size, shared_bytes, Kernel::kName);
  if (groups == 0) return;
  rt::check(rt::set_device(queue.device()), "set_device");
  auto stream = static_cast<rt::stream_t>(queue.native_stream());
  kernel_entry<<<static_cast<unsigned>(groups), static_cast<unsigned>(group_size), shared_bytes,
                 stream>>>(kernel, args...);
  const rt::error_t status = rt::get_last_error();
  if (status != rt::kSuccess) {
    throw Error(ErrorCode::kInternal, std::string(rt::kRuntimeName) + " launch of " +
                                          Kernel::kName + " failed: " + rt::error_string(status));
  }
}

}  // namespace kaas::KAAS_BACKEND_NS
