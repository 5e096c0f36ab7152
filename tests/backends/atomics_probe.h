#pragma once
// A probe kernel exercising every atomic of the kernel context (compiled for every backend,
// CUDA and HIP included, so the GPU atomics are at least compiled).

#include <cstdint>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/view.h"

namespace kaas {

// For i in [0, n): counts[0] += 1, wide[0] += i, real[0] += 1, high[0] = max(high[0], i),
// low[0] = min(low[0], i), real[1] = max(real[1], i), real[2] = min(real[2], i).
struct AtomicTargets {
  View1<int32_t> counts;  // [1]
  View1<int64_t> wide;    // [1]
  View1<int32_t> high;    // [1]
  View1<int32_t> low;     // [1]
  View1<float> real;      // [3]
};

KAAS_DECLARE_LAUNCHER(void, atomics_probe, (const Queue&, int64_t n, AtomicTargets targets))

inline void run_atomics_probe(const Queue& queue, int64_t n, AtomicTargets targets) {
  KAAS_RETURN_LAUNCH(queue, atomics_probe, queue, n, targets);
}

}  // namespace kaas
