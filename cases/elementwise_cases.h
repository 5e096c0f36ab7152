#pragma once
// Cases of kernels/elementwise.h: strided copies (a transpose) and broadcasting Add.

#include <vector>

#include "cases/case.h"

namespace kaas::cases {

struct ElementwiseCase {
  bool copy;                     // copy_strided of a permuted; else binary Add of a and b
  std::vector<int64_t> a, b;     // shapes (dense, row-major); b unused for copies
  std::vector<int> permutation;  // copy: dst dimension i is src dimension permutation[i]
};

// The output shape: the permuted a (copy) or the numpy broadcast of a and b (Add).
std::vector<int64_t> elementwise_output_shape(const ElementwiseCase& c);
// Exact reference: y at every index of the output shape, computed from the index arithmetic.
std::vector<float> elementwise_reference(const ElementwiseCase& c, const std::vector<float>& a,
                                         const std::vector<float>& b);

std::vector<ElementwiseCase> elementwise_shapes();
std::vector<Case> elementwise_cases();

}  // namespace kaas::cases
