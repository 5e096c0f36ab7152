#pragma once
// Host references and tolerances for the differential harness: the generators and
// condition-aware tolerances are the kernel cases' (cases/reference.h).

#include <cstdint>
#include <vector>

#include "cases/reference.h"

namespace kaas::testing {

using cases::kFloatUnitRoundoff;
using cases::random_floats;
using cases::random_integers;
using cases::reduction_tolerance;

// The sizes every elementwise kernel is tested on, including the empty and odd ones.
inline std::vector<int64_t> standard_sizes() {
  return {0, 1, 31, 32, 33, 1000, (1 << 20) + 7};
}
inline std::vector<int> standard_group_sizes() {
  return {1, 7, 32, 256, 1024};
}

}  // namespace kaas::testing
