#pragma once
// Optional launch shape for a kernel call; zero fields are chosen by the kernel for the device.

#include <cstdint>

namespace kaas {

struct LaunchConfig {
  int group_size = 0;  // elements per group; 0 = kernel default (256)
  int64_t groups = 0;  // groups launched; 0 = enough to fill the device, capped by the work

  // What a launcher uses: the caller's choice where given, else the kernel's own.
  int group_size_or(int kernel_default) const {
    return group_size > 0 ? group_size : kernel_default;
  }
  int64_t groups_or(int64_t automatic) const { return groups > 0 ? groups : automatic; }
};

}  // namespace kaas
