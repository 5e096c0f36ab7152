// Softmax / log-softmax and elementwise activations for one backend.

#include "kaas/kernels/softmax.h"
#include "kaas/backends/kernel.h"
#include "kaas/kernels/detail/group_reduce.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// One logical group per line (o, i) along the axis: max, then sum of exp(x - max), then the
// normalised values. Partials live in group-shared memory (they cross sync()).
struct SoftmaxKernel {
  static constexpr const char* kName = "softmax";
  KAAS_KERNEL void operator()(const Ctx& ctx, SoftmaxKind kind, View<const float, 3> x,
                              View<float, 3> y) const {
    const int size = ctx.group_size();
    float* partial = ctx.shared<float>();
    float* line_stats = partial + size;  // [0] max, [1] sum
    const int64_t length = x.extent[1], inner = x.extent[2];
    for (int64_t line : uniform_groups(ctx, x.extent[0] * inner)) {
      const int64_t o = line / inner, i = line % inner;
      for (int64_t e : group_elements(ctx, size)) partial[e] = -math::infinity();
      for (int64_t base = 0; base < length; base += size) {
        const int64_t width = math::min<int64_t>(size, length - base);
        for (int64_t e : group_elements(ctx, width)) {
          partial[e] = math::max(partial[e], x(o, base + e, i));
        }
      }
      detail::group_reduce(ctx, partial, size, detail::MaxOp{});
      for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) line_stats[0] = partial[0];
      ctx.sync();
      for (int64_t e : group_elements(ctx, size)) partial[e] = 0.0f;
      for (int64_t base = 0; base < length; base += size) {
        const int64_t width = math::min<int64_t>(size, length - base);
        for (int64_t e : group_elements(ctx, width)) {
          partial[e] += math::exp(x(o, base + e, i) - line_stats[0]);
        }
      }
      detail::group_reduce(ctx, partial, size, detail::SumOp{});
      for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) line_stats[1] = partial[0];
      ctx.sync();
      for (int64_t base = 0; base < length; base += size) {
        const int64_t width = math::min<int64_t>(size, length - base);
        for (int64_t e : group_elements(ctx, width)) {
          const float shifted = x(o, base + e, i) - line_stats[0];
          y(o, base + e, i) = kind == SoftmaxKind::kSoftmax ? math::exp(shifted) / line_stats[1]
                                                            : shifted - math::log(line_stats[1]);
        }
      }
      ctx.sync();  // line_stats and partial are rewritten for the next line
    }
  }
};

// Lines of at most kShortLine values (classifier heads: 3 classes): one element per line, no
// shared memory and no barrier; a group-wide reduction would leave most elements idle.
constexpr int64_t kShortLine = 32;

struct ShortLineSoftmaxKernel {
  static constexpr const char* kName = "softmax.short_lines";
  KAAS_KERNEL void operator()(const Ctx& ctx, SoftmaxKind kind, View<const float, 3> x,
                              View<float, 3> y) const {
    const int64_t length = x.extent[1], inner = x.extent[2];
    for (int64_t line : uniform_elements(ctx, x.extent[0] * inner)) {
      const int64_t o = line / inner, i = line % inner;
      float max = -math::infinity();
      for (int64_t l = 0; l < length; ++l) max = math::max(max, x(o, l, i));
      float sum = 0.0f;
      if (kind == SoftmaxKind::kSoftmax) {  // one exp per value: keep them in y
        for (int64_t l = 0; l < length; ++l) {
          const float e = math::exp(x(o, l, i) - max);
          y(o, l, i) = e;
          sum += e;
        }
        // Divided, not scaled by 1 / sum: the bits of the group kernel and of mlp_two_heads.
        for (int64_t l = 0; l < length; ++l) y(o, l, i) /= sum;
      } else {
        for (int64_t l = 0; l < length; ++l) sum += math::exp(x(o, l, i) - max);
        const float log_sum = math::log(sum);
        for (int64_t l = 0; l < length; ++l) y(o, l, i) = x(o, l, i) - max - log_sum;
      }
    }
  }
};

struct ActivateKernel {
  static constexpr const char* kName = "activate";
  KAAS_KERNEL void operator()(const Ctx& ctx, Epilogue epilogue, View1<const float> x,
                              View1<float> y) const {
    for (int64_t i : uniform_elements(ctx, x.extent[0])) y[i] = apply(epilogue, x[i]);
  }
};

}  // namespace

void softmax_launch(const Queue& queue, SoftmaxKind kind, View<const float, 3> x, View<float, 3> y,
                    LaunchConfig config) {
  const int64_t lines = x.extent[0] * x.extent[2];
  if (x.extent[1] <= kShortLine) {
    const int size = config.group_size_or(256);
    const int64_t groups = config.groups_or(element_grid(queue, lines, size));
    return launch(queue, groups, size, 0, ShortLineSoftmaxKernel{}, kind, x, y);
  }
  // Longer lines: one group each, sized to the line (up to 256 elements).
  int size = config.group_size;
  if (size == 0) {
    size = 1;
    while (size < x.extent[1] && size < 256) size *= 2;
  }
  const int64_t groups = config.groups_or(grid_groups(queue, lines));
  launch(queue, groups, size, (size + 2) * sizeof(float), SoftmaxKernel{}, kind, x, y);
}

void activate_launch(const Queue& queue, Epilogue epilogue, View1<const float> x, View1<float> y,
                     LaunchConfig config) {
  const int size = config.group_size_or(256);
  const int64_t groups = config.groups_or(element_grid(queue, x.extent[0], size));
  launch(queue, groups, size, 0, ActivateKernel{}, epilogue, x, y);
}

}  // namespace kaas::KAAS_BACKEND_NS
