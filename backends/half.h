#pragma once
// 16-bit floating-point storage types for reduced-precision kernels: bf16 (8-bit exponent, 7-bit
// mantissa: fp32's range) and fp16 (IEEE binary16). Kernels load them into float, compute and
// accumulate in float, and round back once when they store. Usable in kernel bodies on every
// backend: math::to_float / math::round_to<T> are native conversions under nvcc and hipcc
// (backends/gpu/half_native.h) and the portable integer versions below everywhere else; both
// round to nearest, ties to even, and keep infinities and NaNs (a NaN stays a quiet NaN).

#include <cstdint>
#include <type_traits>

#include "kaas/backends/portability.h"

namespace kaas {

struct bf16 {
  uint16_t bits;  // trivial, like float: device arrays of it are not initialised
};
struct fp16 {
  uint16_t bits;  // trivial, like float: device arrays of it are not initialised
};
static_assert(sizeof(bf16) == 2 && sizeof(fp16) == 2);

namespace math {

KAAS_INLINE_HD uint32_t float_bits(float f) {
  uint32_t u;
  __builtin_memcpy(&u, &f, sizeof u);
  return u;
}
KAAS_INLINE_HD float bits_float(uint32_t u) {
  float f;
  __builtin_memcpy(&f, &u, sizeof f);
  return f;
}

// The portable conversions: integer arithmetic only, the same bits with every compiler and on
// every backend. They are the oracle the native paths are tested against.
namespace portable {

KAAS_INLINE_HD float bf16_to_float(bf16 v) {
  return bits_float(uint32_t(v.bits) << 16);
}

KAAS_INLINE_HD bf16 float_to_bf16(float f) {
  const uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x0040u)};  // quiet NaN
  // Adding 0x7fff plus the lowest kept bit rounds to nearest, ties to even; a carry out of the
  // mantissa bumps the exponent, up to infinity for values beyond bf16's largest finite.
  const uint32_t rounded = u + 0x7fffu + ((u >> 16) & 1u);
  return bf16{uint16_t(rounded >> 16)};
}

KAAS_INLINE_HD float fp16_to_float(fp16 v) {
  const uint32_t sign = uint32_t(v.bits & 0x8000u) << 16;
  const uint32_t exponent = (v.bits >> 10) & 0x1fu;
  const uint32_t mantissa = v.bits & 0x3ffu;
  if (exponent == 0x1f) return bits_float(sign | 0x7f800000u | (mantissa << 13));  // inf, NaN
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = float(mantissa) * 5.9604644775390625e-8f;
    return bits_float(sign | float_bits(magnitude));
  }
  return bits_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

KAAS_INLINE_HD fp16 float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t magnitude = u & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {  // NaN: quiet, the top payload bits kept
    return fp16{uint16_t(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu))};
  }
  if (magnitude >= 0x477ff000u) return fp16{uint16_t(sign | 0x7c00u)};  // >= 65520: infinity
  if (magnitude >= 0x38800000u) {  // a normal fp16 (>= 2^-14): rebias, round 23 -> 10 bits
    const uint32_t rebiased = magnitude - 0x38000000u;
    const uint32_t rounded = rebiased + 0xfffu + ((rebiased >> 13) & 1u);
    return fp16{uint16_t(sign | (rounded >> 13))};
  }
  if (magnitude <= 0x33000000u) return fp16{sign};  // <= 2^-25: rounds to (signed) zero
  // Subnormal: the value in units of 2^-24, rounded to nearest even (may round up to the
  // smallest normal, 0x400, which is the right encoding).
  const uint32_t exponent = magnitude >> 23;  // 102 .. 112
  const uint32_t significand = (magnitude & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14 .. 24
  uint32_t quotient = significand >> shift;
  const uint32_t remainder = significand & ((1u << shift) - 1u);
  const uint32_t half = 1u << (shift - 1u);
  if (remainder > half || (remainder == half && (quotient & 1u))) ++quotient;
  return fp16{uint16_t(sign | quotient)};
}

}  // namespace portable

}  // namespace math
}  // namespace kaas

#if KAAS_GPU_COMPILER
#include "kaas/backends/gpu/half_native.h"  // native conversions in the device pass
#endif
#if !defined(__CUDA_ARCH__)  // host code (half_native.h: nvcc's device pass)
namespace kaas::math {
inline float to_float(bf16 v) {
  return portable::bf16_to_float(v);
}
inline float to_float(fp16 v) {
  return portable::fp16_to_float(v);
}
inline bf16 to_bf16(float f) {
  return portable::float_to_bf16(f);
}
inline fp16 to_fp16(float f) {
  return portable::float_to_fp16(f);
}
}  // namespace kaas::math
#endif

namespace kaas::math {

KAAS_INLINE_HD float to_float(float v) {
  return v;
}

// Rounds a float result to the storage type T (float, bf16 or fp16).
template <class T>
KAAS_INLINE_HD T round_to(float f) {
  if constexpr (std::is_same_v<T, float>) {
    return f;
  } else if constexpr (std::is_same_v<T, bf16>) {
    return to_bf16(f);
  } else {
    static_assert(std::is_same_v<T, fp16>, "round_to: float, bf16 or fp16");
    return to_fp16(f);
  }
}

}  // namespace kaas::math
