#include "tests/backends/atomics_probe.h"

#include "kaas/backends/kernel.h"

namespace kaas::KAAS_BACKEND_NS {

struct AtomicsProbeKernel {
  static constexpr const char* kName = "atomics_probe";
  KAAS_KERNEL void operator()(const Ctx& ctx, int64_t n, AtomicTargets t) const {
    for (int64_t i : uniform_elements(ctx, n)) {
      ctx.atomic_add(&t.counts[0], int32_t{1});
      ctx.atomic_add(&t.wide[0], i);
      ctx.atomic_add(&t.real[0], 1.0f);
      ctx.atomic_max(&t.high[0], static_cast<int32_t>(i));
      ctx.atomic_min(&t.low[0], static_cast<int32_t>(i));
      ctx.atomic_max(&t.real[1], static_cast<float>(i));
      ctx.atomic_min(&t.real[2], static_cast<float>(i));
    }
  }
};

void atomics_probe(const Queue& queue, int64_t n, AtomicTargets targets) {
  launch(queue, element_grid(queue, n, 64), 64, 0, AtomicsProbeKernel{}, n, targets);
}

}  // namespace kaas::KAAS_BACKEND_NS
