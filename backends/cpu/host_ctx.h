#pragma once
// Kernel context of the serial and OpenMP backends: a group is one CPU thread that runs each
// element loop to completion for all of the group's elements. Included only by translation
// units of those backends (after backends/config.h), so the types land in kaas::serial or
// kaas::openmp.

#include <cstddef>
#include <cstdint>

#include "kaas/backends/cpu/host_atomics.h"
#include "kaas/backends/range.h"

namespace kaas::KAAS_BACKEND_NS {

class Ctx : public host_atomics::AtomicOps {
 public:
  Ctx(int64_t group, int64_t groups, int group_size, unsigned char* shared)
      : group_(group), groups_(groups), group_size_(group_size), shared_(shared) {}

  int64_t group_id() const { return group_; }
  int64_t group_count() const { return groups_; }
  int group_size() const { return group_size_; }

  // Dynamic group-shared memory (the launch's shared_bytes), 64-byte aligned.
  template <class T>
  T* shared(size_t byte_offset = 0) const {
    return reinterpret_cast<T*>(shared_ + byte_offset);
  }

  // Every element loop already ran to completion for all elements of the group before the
  // next statement, so the barrier itself has nothing left to wait for.
  void sync() const {}

 private:
  int64_t group_;
  int64_t groups_;
  int group_size_;
  unsigned char* shared_;
};

// Element indices 0..n-1 of the current group (all of them: the thread is the whole group).
inline StridedRange group_elements(const Ctx&, int64_t n) {
  return {0, n, 1};
}

// Global indices 0..n-1 spread over all groups; here each group takes one contiguous block,
// which keeps the CPU loop vectorisable and cache friendly.
inline StridedRange uniform_elements(const Ctx& ctx, int64_t n) {
  const int64_t groups = ctx.group_count();
  const int64_t g = ctx.group_id();
  const int64_t base = n / groups, extra = n % groups;
  const int64_t first = g * base + (g < extra ? g : extra);
  return {first, first + base + (g < extra ? 1 : 0), 1};
}

// Logical group indices 0..n-1 spread over the launched groups (independent groups).
inline StridedRange uniform_groups(const Ctx& ctx, int64_t n) {
  return {ctx.group_id(), n, ctx.group_count()};
}

}  // namespace kaas::KAAS_BACKEND_NS
