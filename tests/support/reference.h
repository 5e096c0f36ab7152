#pragma once
// Host references and tolerances for the differential harness.

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace kaas::testing {

inline constexpr double kFloatUnitRoundoff = std::numeric_limits<float>::epsilon() / 2;

// Condition-aware bound for a float reduction of k terms whose magnitudes sum to `magnitude`:
// c * sqrt(k) * u * sum|a| (the typical growth of rounding errors), c = 4.
inline double reduction_tolerance(int64_t k, double magnitude) {
  return 4.0 * std::sqrt(static_cast<double>(k > 1 ? k : 1)) * kFloatUnitRoundoff * magnitude +
         std::numeric_limits<float>::denorm_min();
}

// The sizes every elementwise kernel is tested on, including the empty and odd ones.
inline std::vector<int64_t> standard_sizes() {
  return {0, 1, 31, 32, 33, 1000, (1 << 20) + 7};
}
inline std::vector<int> standard_group_sizes() {
  return {1, 7, 32, 256, 1024};
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

}  // namespace kaas::testing
