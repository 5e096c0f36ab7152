#pragma once
// Math wrappers usable inside kernels on every backend: device intrinsics under nvcc/hipcc,
// the C library on the CPU. Kernels call kaas::math::*, never std:: or CUDA names directly.

#include <cmath>
#include <cstdint>

#include "kaas/backends/portability.h"

namespace kaas::math {

template <class T>
KAAS_INLINE_HD T min(T a, T b) {
  return b < a ? b : a;
}
template <class T>
KAAS_INLINE_HD T max(T a, T b) {
  return a < b ? b : a;
}
template <class T>
KAAS_INLINE_HD T abs(T a) {
  return a < T(0) ? -a : a;
}

KAAS_INLINE_HD float exp(float x) {
  return ::expf(x);
}
KAAS_INLINE_HD float log(float x) {
  return ::logf(x);
}
KAAS_INLINE_HD float sqrt(float x) {
  return ::sqrtf(x);
}
KAAS_INLINE_HD float tanh(float x) {
  return ::tanhf(x);
}
KAAS_INLINE_HD float fma(float a, float b, float c) {
  return ::fmaf(a, b, c);
}
KAAS_INLINE_HD double exp(double x) {
  return ::exp(x);
}
KAAS_INLINE_HD double log(double x) {
  return ::log(x);
}
KAAS_INLINE_HD double sqrt(double x) {
  return ::sqrt(x);
}
KAAS_INLINE_HD double fma(double a, double b, double c) {
  return ::fma(a, b, c);
}

KAAS_INLINE_HD float infinity() {
  return __builtin_huge_valf();
}
KAAS_INLINE_HD bool isfinite(float x) {
  return x - x == 0.0f;
}

// The index of the lowest set bit of x != 0 (a candidate mask's next candidate).
KAAS_INLINE_HD int lowest_bit(uint32_t x) {
#if defined(__CUDA_ARCH__)
  return __ffs(static_cast<int>(x)) - 1;
#else
  return __builtin_ctz(x);
#endif
}

// A hint that p will be read or written soon (host code; nothing on a GPU, whose caches and
// thread switches hide the latency).
KAAS_INLINE_HD void prefetch_for_write(const void* p) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  (void)p;
#else
  __builtin_prefetch(p, 1);
#endif
}

// Integer division rounding up, for group counts and tiles.
KAAS_INLINE_HD int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

}  // namespace kaas::math
