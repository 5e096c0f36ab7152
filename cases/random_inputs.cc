#include <random>

#include "cases/reference.h"
#include "cases/uniform.h"

namespace kaas::cases {

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::vector<float> v(n);
  for (auto& x : v) x = uniform_float(rng, lo, hi);
  return v;
}

template <class T>
std::vector<T> random_integers(size_t n, uint32_t seed, int lo, int hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> dist(lo, hi);
  std::vector<T> v(n);
  for (auto& x : v) x = static_cast<T>(dist(rng));
  return v;
}

template std::vector<float> random_integers(size_t, uint32_t, int, int);
template std::vector<int32_t> random_integers(size_t, uint32_t, int, int);
template std::vector<int64_t> random_integers(size_t, uint32_t, int, int);

}  // namespace kaas::cases
