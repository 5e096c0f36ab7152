#include "kaas/kernels/axpy.h"

#include "kaas/kernels/detail/checks.h"

namespace kaas {

void axpy(const Queue& queue, float a, View1<const float> x, View1<float> y, LaunchConfig config) {
  detail::check_view(x, "axpy", "x");
  detail::check_view(y, "axpy", "y");
  detail::check_same_extent(x.extent[0], y.extent[0], "axpy", "y extent (same as x)");
  detail::check_config(config, "axpy");
  KAAS_RETURN_LAUNCH(queue, axpy_launch, queue, a, x, y, config);
}

}  // namespace kaas
