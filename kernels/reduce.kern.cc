// Row and whole-vector reductions for one backend.

#include "kaas/kernels/reduce.h"
#include "kaas/backends/kernel.h"
#include "kaas/kernels/detail/group_reduce.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

template <class Op>
struct ReduceRowsKernel {
  static constexpr const char* kName = "reduce_rows";
  KAAS_KERNEL void operator()(const Ctx& ctx, View2<const float> x, View1<float> out) const {
    const int size = ctx.group_size();
    float* partial = ctx.shared<float>();
    const int64_t cols = x.extent[1];
    for (int64_t row : uniform_groups(ctx, x.extent[0])) {
      // Tile by tile, each element folds one value into its own slot: contiguous (and
      // vectorisable) on the CPU, coalesced on a GPU.
      for (int64_t e : group_elements(ctx, size)) partial[e] = Op::template identity<float>();
      for (int64_t base = 0; base < cols; base += size) {
        const int64_t width = math::min<int64_t>(size, cols - base);
        for (int64_t e : group_elements(ctx, width))
          partial[e] = Op{}(partial[e], x(row, base + e));
      }
      detail::group_reduce(ctx, partial, size, Op{});
      for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) out[row] = partial[0];
      ctx.sync();  // partial[] is rewritten for the next row
    }
  }
};

// Group g reduces elements g*size + e, stepping by the whole grid, into out[g]. Launched with
// many groups for the partials, then with one group over the partials.
template <class Op>
struct ReducePartialsKernel {
  static constexpr const char* kName = "reduce_all";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const float> x, View1<float> out) const {
    const int size = ctx.group_size();
    float* partial = ctx.shared<float>();
    const int64_t n = x.extent[0];
    const int64_t step = ctx.group_count() * size;
    for (int64_t e : group_elements(ctx, size)) partial[e] = Op::template identity<float>();
    for (int64_t base = ctx.group_id() * size; base < n; base += step) {
      const int64_t width = math::min<int64_t>(size, n - base);
      for (int64_t e : group_elements(ctx, width)) partial[e] = Op{}(partial[e], x[base + e]);
    }
    detail::group_reduce(ctx, partial, size, Op{});
    for ([[maybe_unused]] int64_t e : group_elements(ctx, 1)) out[ctx.group_id()] = partial[0];
  }
};

template <class Op>
void reduce_rows_with(const Queue& queue, View2<const float> x, View1<float> out,
                      LaunchConfig config) {
  const int size = config.group_size_or(256);
  const int64_t groups = config.groups_or(grid_groups(queue, x.extent[0]));
  launch(queue, groups, size, size * sizeof(float), ReduceRowsKernel<Op>{}, x, out);
}

template <class Op>
void reduce_all_with(const Queue& queue, View1<const float> x, View1<float> out,
                     View1<float> partials, LaunchConfig config) {
  const int size = config.group_size_or(256);
  const int64_t groups = partials.extent[0];
  launch(queue, groups, size, size * sizeof(float), ReducePartialsKernel<Op>{}, x, partials);
  launch(queue, 1, size, size * sizeof(float), ReducePartialsKernel<Op>{},
         View1<const float>(partials), out);
}

}  // namespace

void reduce_rows_launch(const Queue& queue, ReduceOp op, View2<const float> x, View1<float> out,
                        LaunchConfig config) {
  if (op == ReduceOp::kSum) return reduce_rows_with<detail::SumOp>(queue, x, out, config);
  return reduce_rows_with<detail::MaxOp>(queue, x, out, config);
}

void reduce_all_launch(const Queue& queue, ReduceOp op, View1<const float> x, View1<float> out,
                       View1<float> workspace, LaunchConfig config) {
  if (op == ReduceOp::kSum) return reduce_all_with<detail::SumOp>(queue, x, out, workspace, config);
  return reduce_all_with<detail::MaxOp>(queue, x, out, workspace, config);
}

}  // namespace kaas::KAAS_BACKEND_NS
