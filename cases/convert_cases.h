#pragma once
// Cases of kernels/convert.h: float <-> bf16 / fp16.

#include <cstdint>
#include <vector>

#include "cases/case.h"
#include "kaas/backends/half.h"

namespace kaas::cases {

// The 16-bit value nearest to x, ties to even, found in double precision (not with the bit
// manipulation of backends/half.h): x scaled by the format's quantum at x's binade is rounded
// by nearbyint, a result beyond the largest finite value is infinity, NaN stays NaN.
bf16 reference_bf16(float x);
fp16 reference_fp16(float x);

// Floats that exercise every rounding path: random magnitudes over both formats' ranges and
// beyond, exact ties between neighbouring 16-bit values, subnormals, +-0, +-inf and NaNs.
std::vector<float> convert_inputs(int64_t n, uint32_t seed);

std::vector<Case> convert_cases();

}  // namespace kaas::cases
