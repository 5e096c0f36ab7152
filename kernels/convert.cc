#include "kaas/kernels/convert.h"

#include "kaas/kernels/detail/checks.h"

namespace kaas {

namespace {

template <class In, class Out>
void checked_convert(const Queue& queue, View1<const In> x, View1<Out> y, LaunchConfig config) {
  detail::check_view(x, "convert", "x");
  detail::check_view(y, "convert", "y");
  detail::check_same_extent(x.extent[0], y.extent[0], "convert", "y extent (same as x)");
  detail::check_config(config, "convert");
  KAAS_RETURN_LAUNCH(queue, convert_launch, queue, x, y, config);
}

}  // namespace

void convert(const Queue& queue, View1<const float> x, View1<bf16> y, LaunchConfig config) {
  checked_convert(queue, x, y, config);
}
void convert(const Queue& queue, View1<const float> x, View1<fp16> y, LaunchConfig config) {
  checked_convert(queue, x, y, config);
}
void convert(const Queue& queue, View1<const bf16> x, View1<float> y, LaunchConfig config) {
  checked_convert(queue, x, y, config);
}
void convert(const Queue& queue, View1<const fp16> x, View1<float> y, LaunchConfig config) {
  checked_convert(queue, x, y, config);
}

}  // namespace kaas
