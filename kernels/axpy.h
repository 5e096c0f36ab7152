#pragma once
// axpy: y[i] = a * x[i] + y[i], the elementwise example kernel.

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

// x and y: the same extent, any strides, device memory of the queue's backend.
void axpy(const Queue& queue, float a, View1<const float> x, View1<float> y,
          LaunchConfig config = {});

KAAS_DECLARE_LAUNCHER(void, axpy_launch,
                      (const Queue&, float, View1<const float>, View1<float>, LaunchConfig))

}  // namespace kaas
