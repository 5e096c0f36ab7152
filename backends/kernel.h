#pragma once
// The one include of a `*.kern.cc`: selects this translation unit's backend and brings in its
// Ctx, loop helpers and launch(). Kernel bodies written against it are the same on every
// backend.
//
// Writing a kernel body (a functor `void operator()(const Ctx& ctx, args...) const` marked
// KAAS_KERNEL, with a `static constexpr const char* kName`):
//  - Express work with the loop helpers, never with raw thread indices:
//      for (int64_t i : uniform_elements(ctx, n))     global elements, spread over all groups
//      for (int64_t g : uniform_groups(ctx, n))       logical groups, spread over launched groups
//      for (int64_t e : group_elements(ctx, n))       elements of the current group
//    On a GPU a group is a block and an element a thread; on the CPU a group is one thread that
//    loops over its elements.
//  - Barrier rule: call ctx.sync() only between element loops, never inside one, and only where
//    every element of the group reaches it (same number of sync() calls for all). Anything that
//    must survive a sync() lives in group-shared memory (ctx.shared<T>()) indexed by the
//    element, never in a local variable: on the CPU one local serves all elements of the group.
//    Values that are the same for every element (loop bounds, pointers) may stay local.
//  - No warp/wavefront intrinsics: warps are 32 wide on NVIDIA and 64 on AMD CDNA.
//  - Math through kaas::math (backends/math.h); atomics through ctx.atomic_add/max/min.
//  - No #ifdef on the backend in a kernel.

#include "kaas/backends/config.h"
#include "kaas/backends/math.h"
#include "kaas/backends/queue.h"
#include "kaas/backends/view.h"
#include "kaas/common/error.h"

#include KAAS_BACKEND_LAUNCH_HEADER

namespace kaas::KAAS_BACKEND_NS {

// This backend's runtime side (defined in backends/<backend>/...).
const Backend& backend_instance();

// Groups for a grid-stride loop over `work_groups` groups' worth of elements: enough to fill
// the device, never more than there is work.
inline int64_t grid_groups(const Queue& queue, int64_t work_groups) {
  const int64_t resident = queue.backend().resident_groups(queue.device());
  return work_groups < resident ? work_groups : resident;
}

// Groups for a grid-stride loop over `elements` elements in groups of `group_size`.
inline int64_t element_grid(const Queue& queue, int64_t elements, int group_size) {
  return grid_groups(queue, math::ceil_div(elements, group_size));
}

}  // namespace kaas::KAAS_BACKEND_NS
