#include "kaas/backends/launch_check.h"

#include <string>

#include "kaas/backends/queue.h"
#include "kaas/common/error.h"

namespace kaas {

void check_launch(const Queue& queue, int64_t groups, int group_size, size_t shared_bytes,
                  const char* kernel_name) {
  const LaunchLimits device = queue.backend().launch_limits(queue.device());
  if (groups >= 0 && groups <= INT32_MAX && group_size >= 1 &&
      group_size <= device.max_group_size && shared_bytes <= device.max_shared_bytes) {
    return;
  }
  const std::string where =
      std::string("launch of ") + kernel_name + " on " + std::string(queue.backend().name());
  require(groups >= 0, where, "groups", ">= 0", std::to_string(groups));
  require(groups <= INT32_MAX, where, "groups", "<= 2147483647", std::to_string(groups));
  require(group_size >= 1 && group_size <= device.max_group_size, where, "group_size",
          "1.." + std::to_string(device.max_group_size), std::to_string(group_size));
  require(shared_bytes <= device.max_shared_bytes, where, "shared_bytes",
          "<= " + std::to_string(device.max_shared_bytes), std::to_string(shared_bytes));
}

}  // namespace kaas
