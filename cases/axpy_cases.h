#pragma once
// Cases of kernels/axpy.h: y = a * x + y.

#include <vector>

#include "cases/case.h"

namespace kaas::cases {

struct AxpyCase {
  int64_t n;
  float a;
};

struct AxpyInputs {
  std::vector<float> x, y;
};
AxpyInputs axpy_inputs(int64_t n);
// The double-precision result and its tolerance: one rounding of the product and one of the
// sum (or a single one with FMA).
double axpy_expected(float a, float x, float y);
double axpy_tolerance(float a, float x, float y);

std::vector<AxpyCase> axpy_shapes();
std::vector<Case> axpy_cases();

}  // namespace kaas::cases
