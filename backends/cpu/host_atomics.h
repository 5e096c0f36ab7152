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

}  // namespace kaas::host_atomics
