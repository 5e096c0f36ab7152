#pragma once
// What the reduced-precision (bf16 / fp16) cases share: the operands as the kernel receives them
// (rounded once from the fp32 case's data) and the unit roundoff of a 16-bit result.

#include <type_traits>
#include <vector>

#include "kaas/backends/half.h"

namespace kaas::cases {

template <class T>
constexpr double unit_roundoff() {
  return std::is_same_v<T, bf16> ? 0x1p-8 : 0x1p-11;
}

template <class T>
std::vector<T> rounded(const std::vector<float>& x) {
  std::vector<T> r(x.size());
  for (size_t i = 0; i < x.size(); ++i) r[i] = math::round_to<T>(x[i]);
  return r;
}

template <class T>
std::vector<float> widened(const std::vector<T>& x) {
  std::vector<float> w(x.size());
  for (size_t i = 0; i < x.size(); ++i) w[i] = math::to_float(x[i]);
  return w;
}

}  // namespace kaas::cases
