#pragma once
// Atomics for the CPU backends (serial, openmp, gpu_emu), through std::atomic_ref.

#include <atomic>

namespace kaas::host_atomics {

template <class T>
inline T add(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value, std::memory_order_relaxed);
}

template <class T>
inline T max(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T current = ref.load(std::memory_order_relaxed);
  while (current < value && !ref.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
  return current;
}

template <class T>
inline T min(T* address, T value) {
  std::atomic_ref<T> ref(*address);
  T current = ref.load(std::memory_order_relaxed);
  while (value < current && !ref.compare_exchange_weak(current, value, std::memory_order_relaxed)) {
  }
  return current;
}

// The atomics a kernel context offers, for the contexts of the CPU backends.
struct AtomicOps {
  template <class T>
  T atomic_add(T* address, T value) const {
    return add(address, value);
  }
  template <class T>
  T atomic_max(T* address, T value) const {
    return max(address, value);
  }
  template <class T>
  T atomic_min(T* address, T value) const {
    return min(address, value);
  }
};

}  // namespace kaas::host_atomics
