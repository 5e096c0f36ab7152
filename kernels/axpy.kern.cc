// axpy for one backend (see backends/kernel.h for how kernels are written).

#include "kaas/kernels/axpy.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

struct AxpyKernel {
  static constexpr const char* kName = "axpy";
  KAAS_KERNEL void operator()(const Ctx& ctx, float a, View1<const float> x, View1<float> y) const {
    for (int64_t i : uniform_elements(ctx, x.extent[0])) y[i] = a * x[i] + y[i];
  }
};

void axpy_launch(const Queue& queue, float a, View1<const float> x, View1<float> y,
                 LaunchConfig config) {
  const int group_size = config.group_size_or(256);
  const int64_t groups = config.groups_or(element_grid(queue, x.extent[0], group_size));
  launch(queue, groups, group_size, 0, AxpyKernel{}, a, x, y);
}

}  // namespace kaas::KAAS_BACKEND_NS
