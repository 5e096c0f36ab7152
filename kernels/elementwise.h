#pragma once
// Strided copies and broadcasting binary operations over tensors of rank <= 6, the data
// movement ops of imported graphs: Transpose (a copy from permuted strides), Concat (copies into
// slices of the output), Add (numpy broadcasting by stride 0) and Clip (Max, then Min, with a
// broadcast scalar). Views of lower rank are padded
// with leading extent-1 dimensions by the caller (to_rank6).

#include <cstdint>
#include <span>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

// kMax / kMin keep a NaN in a (numpy's clip), so Clip passes NaN through as ONNX does.
enum class BinaryOp { kAdd, kMax, kMin };

// dst[i] = src[i] for every index of dst; src and dst have equal extents, any strides (src may
// have stride 0 to broadcast). dst must not overlap src.
void copy_strided(const Queue& queue, View<const float, 6> src, View<float, 6> dst,
                  LaunchConfig config = {});

// y[i] = a[i] op b[i]; a, b and y have equal extents, a and b any strides (0 broadcasts). y may
// be a itself (each element reads its own index before writing it).
void binary(const Queue& queue, BinaryOp op, View<const float, 6> a, View<const float, 6> b,
            View<float, 6> y, LaunchConfig config = {});

// A rank-6 view of `data` with `shape` (rank <= 6) and the given strides (dense row-major when
// empty); the missing leading dimensions get extent 1.
template <class T>
View<T, 6> to_rank6(T* data, std::span<const int64_t> shape, std::span<const int64_t> strides = {});

// The broadcast view of a tensor of `shape` (dense, row-major) seen with `target` extents
// (numpy rules: the shapes are right-aligned; extent-1 dimensions get stride 0). Throws
// kInvalidArgument when the shapes do not broadcast.
template <class T>
View<T, 6> broadcast_view(T* data, std::span<const int64_t> shape, std::span<const int64_t> target);

KAAS_DECLARE_LAUNCHER(void, binary_launch,
                      (const Queue&, BinaryOp, View<const float, 6>, View<const float, 6>,
                       View<float, 6>, LaunchConfig))

}  // namespace kaas
