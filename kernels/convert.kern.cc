// convert for one backend (see backends/kernel.h for how kernels are written).

#include "kaas/kernels/convert.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

template <class In, class Out>
struct ConvertKernel {
  static constexpr const char* kName = "convert";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const In> x, View1<Out> y) const {
    for (int64_t i : uniform_elements(ctx, x.extent[0])) {
      y[i] = math::round_to<Out>(math::to_float(x[i]));
    }
  }
};

template <class In, class Out>
void launch_convert(const Queue& queue, View1<const In> x, View1<Out> y, LaunchConfig config) {
  const int group_size = config.group_size_or(256);
  const int64_t groups = config.groups_or(element_grid(queue, x.extent[0], group_size));
  launch(queue, groups, group_size, 0, ConvertKernel<In, Out>{}, x, y);
}

void convert_launch(const Queue& queue, View1<const float> x, View1<bf16> y, LaunchConfig config) {
  launch_convert(queue, x, y, config);
}
void convert_launch(const Queue& queue, View1<const float> x, View1<fp16> y, LaunchConfig config) {
  launch_convert(queue, x, y, config);
}
void convert_launch(const Queue& queue, View1<const bf16> x, View1<float> y, LaunchConfig config) {
  launch_convert(queue, x, y, config);
}
void convert_launch(const Queue& queue, View1<const fp16> x, View1<float> y, LaunchConfig config) {
  launch_convert(queue, x, y, config);
}

}  // namespace kaas::KAAS_BACKEND_NS
