#pragma once
// Reductions: per-row (one group per row, shared memory + sync) and over a whole vector (two
// passes: a partial per group, then one group over the partials).

#include "kaas/backends/dispatch.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"

namespace kaas {

enum class ReduceOp { kSum, kMax };

// out[r] = op(x(r, 0), ..., x(r, cols-1)); an empty row gives 0 (sum) or -inf (max).
void reduce_rows(const Queue& queue, ReduceOp op, View2<const float> x, View1<float> out,
                 LaunchConfig config = {});

// out[0] = op over all of x. Allocates a small workspace and waits for the queue before it
// returns; use the workspace overload to stay asynchronous.
void reduce_all(const Queue& queue, ReduceOp op, View1<const float> x, View1<float> out,
                LaunchConfig config = {});
// Groups that reduce_all launches for x of `n` elements; the workspace needs that many floats.
int64_t reduce_all_workspace_size(const Queue& queue, int64_t n, LaunchConfig config = {});
void reduce_all(const Queue& queue, ReduceOp op, View1<const float> x, View1<float> out,
                View1<float> workspace, LaunchConfig config = {});

KAAS_DECLARE_LAUNCHER(void, reduce_rows_launch,
                      (const Queue&, ReduceOp, View2<const float>, View1<float>, LaunchConfig))
KAAS_DECLARE_LAUNCHER(void, reduce_all_launch,
                      (const Queue&, ReduceOp, View1<const float>, View1<float>, View1<float>,
                       LaunchConfig))

}  // namespace kaas
