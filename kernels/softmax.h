#pragma once
// Softmax / log-softmax along one axis, and elementwise activations (relu, leaky relu,
// sigmoid) as standalone kernels. The same activations are fused epilogues of conv2d and gemm
// (kernels/activation.h).

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/kernels/activation.h"

namespace kaas {

enum class SoftmaxKind { kSoftmax, kLogSoftmax };

// A tensor of any rank with a reduction axis is viewed as [outer, axis, inner] (strides
// allowed); every (outer, inner) line along the axis is normalised. Numerically stable
// (max-shifted, three passes): lines of up to 32 values take one element each, longer lines one
// group each with the partials in group-shared memory.
void softmax(const Queue& queue, SoftmaxKind kind, View<const float, 3> x, View<float, 3> y,
             LaunchConfig config = {});

// Convenience: contiguous row-major tensor of `rank` dims `extents`, normalised along `axis`
// (negative counts from the end, ONNX opset 13 semantics).
void softmax(const Queue& queue, SoftmaxKind kind, const float* x, float* y, const int64_t* extents,
             int rank, int64_t axis);

// y[i] = activation(x[i]); x and y may be the same memory.
void activate(const Queue& queue, const Epilogue& epilogue, View1<const float> x, View1<float> y,
              LaunchConfig config = {});

KAAS_DECLARE_LAUNCHER(void, softmax_launch,
                      (const Queue&, SoftmaxKind, View<const float, 3>, View<float, 3>,
                       LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, activate_launch,
                      (const Queue&, Epilogue, View1<const float>, View1<float>, LaunchConfig))

}  // namespace kaas
