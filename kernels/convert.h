#pragma once
// convert: element-wise conversion between float and the 16-bit storage types of
// backends/half.h: y[i] = x[i] rounded to nearest even (float -> bf16 / fp16), or widened
// exactly (bf16 / fp16 -> float). Infinities and NaNs are kept. Reduced-precision models use it
// to round their weights once at load and their activations between layers.

#include "kaas/backends/dispatch.h"
#include "kaas/backends/half.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

// x and y: the same extent, any strides, device memory of the queue's backend.
void convert(const Queue& queue, View1<const float> x, View1<bf16> y, LaunchConfig config = {});
void convert(const Queue& queue, View1<const float> x, View1<fp16> y, LaunchConfig config = {});
void convert(const Queue& queue, View1<const bf16> x, View1<float> y, LaunchConfig config = {});
void convert(const Queue& queue, View1<const fp16> x, View1<float> y, LaunchConfig config = {});

KAAS_DECLARE_LAUNCHER(void, convert_launch,
                      (const Queue&, View1<const float>, View1<bf16>, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, convert_launch,
                      (const Queue&, View1<const float>, View1<fp16>, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, convert_launch,
                      (const Queue&, View1<const bf16>, View1<float>, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, convert_launch,
                      (const Queue&, View1<const fp16>, View1<float>, LaunchConfig))

}  // namespace kaas
