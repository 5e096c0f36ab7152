#pragma once
// Group-level building blocks shared by kernels. Included by *.kern.cc after backends/kernel.h.

#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS::detail {

struct SumOp {
  template <class T>
  KAAS_HD static T identity() {
    return T(0);
  }
  template <class T>
  KAAS_HD T operator()(T a, T b) const {
    return a + b;
  }
};

struct MaxOp {
  template <class T>
  KAAS_HD static T identity() {
    return -math::infinity();
  }
  template <class T>
  KAAS_HD T operator()(T a, T b) const {
    return math::max(a, b);
  }
};

// Tree reduction of scratch[0..size) in group-shared memory into scratch[0]. Every element of
// the group calls it (it contains sync()); it syncs before reading, so callers only write
// their slot first. Any size >= 1, not only powers of two.
template <class T, class Op>
KAAS_DEVICE void group_reduce(const Ctx& ctx, T* scratch, int size, Op op) {
  ctx.sync();
  int width = 1;
  while (width < size) width *= 2;
  for (width /= 2; width >= 1; width /= 2) {
    for (int64_t e : group_elements(ctx, width)) {
      if (e + width < size) scratch[e] = op(scratch[e], scratch[e + width]);
    }
    ctx.sync();
  }
}

}  // namespace kaas::KAAS_BACKEND_NS::detail
