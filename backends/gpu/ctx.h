#pragma once
// Kernel context of the CUDA and HIP backends: a group is a block, an element a thread.

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kaas/backends/gpu/runtime.h"
#include "kaas/backends/range.h"

namespace kaas::KAAS_BACKEND_NS {

class Ctx {
 public:
  __device__ int64_t group_id() const { return blockIdx.x; }
  __device__ int64_t group_count() const { return gridDim.x; }
  __device__ int group_size() const { return static_cast<int>(blockDim.x); }

  template <class T>
  __device__ T* shared(size_t byte_offset = 0) const {
    extern __shared__ __align__(16) unsigned char kaas_dynamic_shared[];
    return reinterpret_cast<T*>(kaas_dynamic_shared + byte_offset);
  }

  __device__ void sync() const { __syncthreads(); }

  template <class T>
  __device__ T atomic_add(T* address, T value) const {
    if constexpr (sizeof(T) == 8 && !std::is_floating_point_v<T>) {
      return static_cast<T>(atomicAdd(reinterpret_cast<unsigned long long*>(address),
                                      static_cast<unsigned long long>(value)));
    } else {
      return atomicAdd(address, value);
    }
  }
  template <class T>
  __device__ T atomic_max(T* address, T value) const {
    if constexpr (std::is_floating_point_v<T>) {
      return atomic_update(address, value, [](T a, T b) { return a < b ? b : a; });
    } else {
      return atomicMax(address, value);
    }
  }
  template <class T>
  __device__ T atomic_min(T* address, T value) const {
    if constexpr (std::is_floating_point_v<T>) {
      return atomic_update(address, value, [](T a, T b) { return b < a ? b : a; });
    } else {
      return atomicMin(address, value);
    }
  }

 private:
  // Compare-and-swap loop on the bit pattern, for operations without a native atomic.
  template <class T, class Op>
  __device__ static T atomic_update(T* address, T value, Op op) {
    static_assert(sizeof(T) == 4, "kaas: float atomics only");
    auto* bits = reinterpret_cast<unsigned int*>(address);
    unsigned int old = *bits, assumed;
    do {
      assumed = old;
      const T updated = op(__uint_as_float(assumed), value);
      old = atomicCAS(bits, assumed, __float_as_uint(updated));
    } while (assumed != old);
    return __uint_as_float(old);
  }
};

__device__ inline StridedRange group_elements(const Ctx&, int64_t n) {
  return {static_cast<int64_t>(threadIdx.x), n, static_cast<int64_t>(blockDim.x)};
}

__device__ inline StridedRange uniform_elements(const Ctx&, int64_t n) {
  const int64_t size = blockDim.x;
  return {static_cast<int64_t>(blockIdx.x) * size + threadIdx.x, n, size * gridDim.x};
}

__device__ inline StridedRange uniform_groups(const Ctx&, int64_t n) {
  return {static_cast<int64_t>(blockIdx.x), n, static_cast<int64_t>(gridDim.x)};
}

}  // namespace kaas::KAAS_BACKEND_NS
