#pragma once
// Uniform floats from std::mt19937, spelled out: the values std::uniform_real_distribution<float>
// gives with libstdc++ (one 32-bit draw scaled by 2^-32, kept below 1, then lo + (hi - lo) u), so
// the kernel cases' inputs and the digests made from them do not change. libstdc++ computes its
// draw count with logl on every call; g++ folds that, clang++ calls it, and it was 55-70 % of the
// clang kernel tests' and kaas-self-check's time.

#include <cmath>
#include <random>

namespace kaas::cases {

inline float uniform_float(std::mt19937& rng, float lo, float hi) {
  float unit = static_cast<float>(rng() - std::mt19937::min()) / 4294967296.0f;
  if (unit >= 1.0f) unit = std::nextafter(1.0f, 0.0f);
  return unit * (hi - lo) + lo;
}

}  // namespace kaas::cases
