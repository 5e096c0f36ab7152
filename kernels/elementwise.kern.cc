// Strided copy / broadcasting binary op for one backend (see backends/kernel.h).

#include "kaas/kernels/elementwise.h"
#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

struct BinaryKernel {
  static constexpr const char* kName = "binary";
  // b.extent[0] == 0 means "no second operand": a plain copy.
  KAAS_KERNEL void operator()(const Ctx& ctx, BinaryOp op, View<const float, 6> a,
                              View<const float, 6> b, View<float, 6> y) const {
    const bool has_b = b.extent[0] != 0;
    for (int64_t i : uniform_elements(ctx, y.size())) {
      int64_t rest = i, offset_a = 0, offset_b = 0, offset_y = 0;
      for (int d = 5; d >= 0; --d) {
        const int64_t index = rest % y.extent[d];
        rest /= y.extent[d];
        offset_a += index * a.stride[d];
        offset_b += index * b.stride[d];
        offset_y += index * y.stride[d];
      }
      float value = a.data[offset_a];
      if (has_b) {
        switch (op) {
          case BinaryOp::kAdd:
            value += b.data[offset_b];
            break;
          case BinaryOp::kMax:
            value = value < b.data[offset_b] ? b.data[offset_b] : value;
            break;
          case BinaryOp::kMin:
            value = value > b.data[offset_b] ? b.data[offset_b] : value;
            break;
        }
      }
      y.data[offset_y] = value;
    }
  }
};

void binary_launch(const Queue& queue, BinaryOp op, View<const float, 6> a, View<const float, 6> b,
                   View<float, 6> y, LaunchConfig config) {
  if (y.size() == 0) return;
  const int group_size = config.group_size_or(256);
  const int64_t groups = config.groups_or(element_grid(queue, y.size(), group_size));
  launch(queue, groups, group_size, 0, BinaryKernel{}, op, a, b, y);
}

}  // namespace kaas::KAAS_BACKEND_NS
