#pragma once
// Kernel context of the emulated-GPU backend: like a GPU, every element of a group is its own
// thread of execution (a fiber); scheduler.h has the turn-taking rules that make races
// deterministic.

#include <cstddef>
#include <cstdint>

#include "kaas/backends/cpu/host_atomics.h"
#include "kaas/backends/gpu_emu/scheduler.h"
#include "kaas/backends/range.h"

namespace kaas::gpu_emu {

class Ctx : public host_atomics::AtomicOps {
 public:
  explicit Ctx(const ThreadPlace& place) : place_(place) {}

  int64_t group_id() const { return place_.group; }
  int64_t group_count() const { return place_.groups; }
  int group_size() const { return place_.group_size; }

  template <class T>
  T* shared(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(place_.shared + byte_offset);
  }

  void sync() const { barrier(place_); }

 private:
  friend StridedRange group_elements(const Ctx&, int64_t);
  friend StridedRange uniform_elements(const Ctx&, int64_t);
  ThreadPlace place_;
};

inline StridedRange group_elements(const Ctx& ctx, int64_t n) {
  return {ctx.place_.thread, n, ctx.place_.group_size};
}

inline StridedRange uniform_elements(const Ctx& ctx, int64_t n) {
  const int64_t size = ctx.place_.group_size;
  return {ctx.place_.group * size + ctx.place_.thread, n, ctx.place_.groups * size};
}

inline StridedRange uniform_groups(const Ctx& ctx, int64_t n) {
  return {ctx.group_id(), n, ctx.group_count()};
}

}  // namespace kaas::gpu_emu
