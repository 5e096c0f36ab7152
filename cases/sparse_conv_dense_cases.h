#pragma once
// Cases of kernels/sparse_conv_dense.h: the three steps (index, conv delta, gathered first dense
// layer) on batches of zero-suppressed patches, each patch its own window; the output is the
// first dense layer after its ReLU, checked against the dense forward pass in double.

#include <vector>

#include "cases/case.h"

namespace kaas::cases {

struct SparseConvDenseCase {
  int64_t patches, height, width, conv_channels, kernel, n1;
  double occupancy;  // fraction of non-zero pixels, placed at random
};

std::vector<SparseConvDenseCase> sparse_conv_dense_shapes();
std::vector<Case> sparse_conv_dense_cases();

}  // namespace kaas::cases
