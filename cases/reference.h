#pragma once
// Host-side building blocks of every case: deterministic input generators and the
// condition-aware tolerances the kernels are held to.

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace kaas::cases {

inline constexpr double kFloatUnitRoundoff = std::numeric_limits<float>::epsilon() / 2;

// Condition-aware bound for a float reduction of k terms whose magnitudes sum to `magnitude`:
// c * sqrt(k) * u * sum|a| (the typical growth of rounding errors), c = 4.
inline double reduction_tolerance(int64_t k, double magnitude) {
  return 4.0 * std::sqrt(static_cast<double>(k > 1 ? k : 1)) * kFloatUnitRoundoff * magnitude +
         std::numeric_limits<float>::denorm_min();
}

inline std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Small integers stored as T: sums of them are exact, so results must match bit for bit.
template <class T>
std::vector<T> random_integers(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

}  // namespace kaas::cases
