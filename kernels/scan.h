#pragma once
// Exclusive prefix sum: y[i] = x[0] + ... + x[i-1], y[0] = 0. Three passes: a sum per chunk
// (one group per chunk), an exclusive scan of the chunk sums (one group), then every group
// scans its chunk tile by tile starting from its chunk's offset. In place (x and y the same
// memory) is allowed.

#include <cstdint>

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

// T: int32_t, int64_t or float. Allocates the chunk-sum workspace and waits for the queue
// before it returns; the workspace overload stays asynchronous.
template <class T>
void exclusive_scan(const Queue& queue, View1<const T> x, View1<T> y, LaunchConfig config = {});
// Chunks (groups) the scan uses for n elements; the workspace needs that many T.
int64_t exclusive_scan_workspace_size(const Queue& queue, int64_t n, LaunchConfig config = {});
template <class T>
void exclusive_scan(const Queue& queue, View1<const T> x, View1<T> y, View1<T> workspace,
                    LaunchConfig config = {});

#define KAAS_DECLARE_SCAN_LAUNCHER(T)                \
  KAAS_DECLARE_LAUNCHER(void, exclusive_scan_launch, \
                        (const Queue&, View1<const T>, View1<T>, View1<T>, LaunchConfig))
KAAS_DECLARE_SCAN_LAUNCHER(int32_t)
KAAS_DECLARE_SCAN_LAUNCHER(int64_t)
KAAS_DECLARE_SCAN_LAUNCHER(float)
#undef KAAS_DECLARE_SCAN_LAUNCHER

}  // namespace kaas
