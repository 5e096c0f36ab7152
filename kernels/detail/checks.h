#pragma once
// Argument checks shared by the public kernel entry points. Each throws kInvalidArgument with
// "<kernel>: <argument>: expected ..., received ..." before anything is launched.

#include <cstdint>
#include <string>

#include "kaas/backends/launch_config.h"
#include "kaas/backends/view.h"
#include "kaas/common/error.h"

namespace kaas::detail {

// A number in an error message.
inline std::string str(int64_t v) {
  return std::to_string(v);
}

template <class T, int Rank>
void check_view(const View<T, Rank>& view, const char* kernel, const char* name) {
  for (int d = 0; d < Rank; ++d) {
    require(view.extent[d] >= 0, kernel, std::string(name) + " extent[" + std::to_string(d) + "]",
            ">= 0", std::to_string(view.extent[d]));
  }
  require(view.size() == 0 || view.data != nullptr, kernel, std::string(name) + " data",
          "a non-null pointer for a non-empty view", "nullptr");
}

inline void check_same_extent(int64_t expected, int64_t received, const char* kernel,
                              const std::string& what) {
  require(expected == received, kernel, what, std::to_string(expected), std::to_string(received));
}

inline void check_config(const LaunchConfig& config, const char* kernel) {
  require(config.group_size >= 0, kernel, "LaunchConfig.group_size", ">= 0 (0 = default)",
          std::to_string(config.group_size));
  require(config.groups >= 0, kernel, "LaunchConfig.groups", ">= 0 (0 = automatic)",
          std::to_string(config.groups));
}

}  // namespace kaas::detail
