#pragma once
// Cases of kernels/reduce.h: reduce_rows and reduce_all, sum and max.

#include <vector>

#include "cases/case.h"
#include "kaas/kernels/reduce.h"

namespace kaas::cases {

struct ReduceCase {
  bool per_row;  // reduce_rows over [rows, cols]; else reduce_all over rows * cols elements
  ReduceOp op;
  int64_t rows, cols;
};

std::vector<float> reduce_inputs(const ReduceCase& c);
// The double-precision reduction of n values and its tolerance (0 for max: exact).
struct Reduced {
  double value, tolerance;
};
Reduced reduce_reference(ReduceOp op, const float* x, int64_t n);

std::vector<ReduceCase> reduce_shapes();
std::vector<Case> reduce_cases();

}  // namespace kaas::cases
