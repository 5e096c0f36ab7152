#pragma once
// The emulated-GPU execution model. Each group runs with group_size "element threads" (fibers
// with their own stacks on the launching OS thread) that take turns one at a time, always in the
// order 0, 1, ..., between barriers: a baton passes at every sync() and when a thread returns. A
// round ends when the last thread hands the baton on; then either all threads wait at a barrier
// (next round), all returned (next group), or some wait while others returned: barrier divergence,
// reported as an Error instead of a hang. Races on group-shared memory thus give the same wrong
// answer every run. Group-shared memory is poisoned (all bytes 0xFF: NaN for floats, -1 for
// integers) before each group, so reading a slot nobody wrote yet is visible.

#include <cstddef>
#include <cstdint>
#include <functional>

namespace kaas::gpu_emu {

class Scheduler;

// What an element thread knows about itself; kernels see it through Ctx.
struct ThreadPlace {
  int64_t group;
  int64_t groups;
  int group_size;
  int thread;
  unsigned char* shared;
  Scheduler* scheduler;
};

// Runs body(place) for every (group, element thread) and returns when all are done. Throws
// kaas::Error(kInternal) on barrier divergence and rethrows an exception a body threw.
void run_emulated(int64_t groups, int group_size, size_t shared_bytes, const char* kernel_name,
                  const std::function<void(const ThreadPlace&)>& body);

// Called by Ctx::sync(): hands the baton on and blocks until this thread's next turn.
void barrier(const ThreadPlace& place);

}  // namespace kaas::gpu_emu
