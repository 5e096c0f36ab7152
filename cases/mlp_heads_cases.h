#pragma once
// Cases of kernels/mlp_heads.h: hidden dense layer, then a softmax head and an activated head.

#include <vector>

#include "cases/case.h"
#include "kaas/kernels/activation.h"

namespace kaas::cases {

struct MlpHeadsCase {
  int64_t rows, in, hidden, out_a, out_b;
  Epilogue hidden_epilogue, head_b_epilogue;
  bool transposed_hidden;  // the hidden weight stored [hidden, in] and passed with swapped strides
};

struct MlpHeadsInputs {
  std::vector<float> x, w_hidden, b_hidden, w_a, b_a, w_b, b_b;
};
MlpHeadsInputs mlp_heads_inputs(const MlpHeadsCase& c);

// Expected outputs (out_a [rows, out_a], out_b [rows, out_b]) and tolerances: the rounding of
// each dot product (~sqrt(K) u sum|a.b|) carried through the next layer's |weights|, the
// softmax's and activation's own rounding on top.
struct MlpHeadsReference {
  std::vector<double> a, a_tolerance, b, b_tolerance;
};
MlpHeadsReference mlp_heads_reference(const MlpHeadsCase& c, const MlpHeadsInputs& in);

std::vector<MlpHeadsCase> mlp_heads_shapes();
std::vector<Case> mlp_heads_cases();

}  // namespace kaas::cases
