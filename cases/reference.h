#pragma once
// Host-side building blocks of every case: deterministic input generators and the
// condition-aware tolerances the kernels are held to.

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

// The accumulation loops of the host references, on raw arrays: the yardstick, not the code
// under test. Under AddressSanitizer + UBSan (the test command's step 2, there for the kernels'
// index arithmetic) they run uninstrumented; instrumented, conv2d's took two thirds of the
// ASan kernel test of the EmTrkMichelId first layer (bench/results/test-command-cpu.md).
// GCC inlines only between functions of the same sanitizer settings: such a loop calls
// nothing, or only functions marked alike.
#if defined(__SANITIZE_ADDRESS__)
#define KAAS_REFERENCE_LOOP __attribute__((no_sanitize("address", "undefined")))
#else
#define KAAS_REFERENCE_LOOP
#endif

namespace kaas::cases {

inline constexpr double kFloatUnitRoundoff = std::numeric_limits<float>::epsilon() / 2;

// Condition-aware bound for a float reduction of k terms whose magnitudes sum to `magnitude`:
// c * sqrt(k) * u * sum|a| (the typical growth of rounding errors), c = 4.
inline double reduction_tolerance(int64_t k, double magnitude) {
  return 4.0 * std::sqrt(static_cast<double>(k > 1 ? k : 1)) * kFloatUnitRoundoff * magnitude +
         std::numeric_limits<float>::denorm_min();
}

// Deterministic inputs (std::mt19937 from `seed`), defined in cases/random_inputs.cc: under
// AddressSanitizer that file is compiled uninstrumented, like the loops above (the random engine
// took ~13 % of the ASan kernel tests instrumented).
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -1.0f, float hi = 1.0f);

// Small integers stored as T (float, int32_t, int64_t): sums of them are exact, so results must
// match bit for bit.
template <class T>
std::vector<T> random_integers(size_t n, uint32_t seed, int lo, int hi);

}  // namespace kaas::cases
