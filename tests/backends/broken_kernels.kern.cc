// The planted bugs of broken_kernels.h. Each kernel works on tiles of group_size elements,
// one logical group per tile.

#include "tests/backends/broken_kernels.h"

#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

// y[tile + e] = x[tile + (e + 1) % size], through group-shared memory.
struct RotateKernel {
  static constexpr const char* kName = "rotate_missing_sync";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const float> x, View1<float> y,
                              bool with_sync) const {
    const int64_t size = ctx.group_size();
    float* slot = ctx.shared<float>();
    for (int64_t tile : uniform_groups(ctx, x.extent[0] / size)) {
      for (int64_t e : group_elements(ctx, size)) slot[e] = x[tile * size + e];
      if (with_sync) ctx.sync();  // (a) the fixed twin; the broken one reads too early
      for (int64_t e : group_elements(ctx, size)) y[tile * size + e] = slot[(e + 1) % size];
      ctx.sync();
    }
  }
};

// Copies x to y through shared memory with a sync() inside the element loop.
struct DivergentSyncKernel {
  static constexpr const char* kName = "divergent_sync";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const float> x, View1<float> y) const {
    float* slot = ctx.shared<float>();
    for (int64_t e : group_elements(ctx, x.extent[0])) {
      slot[e % ctx.group_size()] = x[e];
      ctx.sync();  // (b) elements with fewer loop trips reach fewer barriers
      y[e] = slot[e % ctx.group_size()];
    }
  }
};

// y[tile + size - 1 - e] = x[tile + e].
struct ReverseKernel {
  static constexpr const char* kName = "reverse_local_across_sync";
  KAAS_KERNEL void operator()(const Ctx& ctx, View1<const float> x, View1<float> y,
                              bool fixed) const {
    const int64_t size = ctx.group_size();
    float* slot = ctx.shared<float>();
    for (int64_t tile : uniform_groups(ctx, x.extent[0] / size)) {
      float value = 0.0f;  // (c) one local per CPU group, one per GPU thread
      for (int64_t e : group_elements(ctx, size)) {
        value = x[tile * size + e];
        slot[e] = value;
      }
      ctx.sync();
      for (int64_t e : group_elements(ctx, size)) {
        y[tile * size + size - 1 - e] = fixed ? slot[e] : value;
      }
      ctx.sync();
    }
  }
};

}  // namespace

void rotate_missing_sync(const Queue& queue, View1<const float> x, View1<float> y, int group_size,
                         bool with_sync) {
  launch(queue, 2, group_size, group_size * sizeof(float), RotateKernel{}, x, y, with_sync);
}

void divergent_sync(const Queue& queue, View1<const float> x, View1<float> y, int group_size) {
  launch(queue, 1, group_size, group_size * sizeof(float), DivergentSyncKernel{}, x, y);
}

void reverse_local_across_sync(const Queue& queue, View1<const float> x, View1<float> y,
                               int group_size, bool fixed) {
  launch(queue, 2, group_size, group_size * sizeof(float), ReverseKernel{}, x, y, fixed);
}

}  // namespace kaas::KAAS_BACKEND_NS
