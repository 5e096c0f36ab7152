#pragma once
// Attributes of the ops that the simplification passes (onnx_simplify.cc) and the fused plan
// (onnx_fused.cc) read or rewrite. Ops nobody else looks into keep theirs in their own file.
// Gemm carries a GemmParams (epilogue = fused activation), Relu/LeakyRelu/Sigmoid an Epilogue.

#include <cstdint>
#include <vector>

#include "kaas/kernels/activation.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/softmax.h"

namespace kaas::models::onnx_import {

// A Gemm's C as a broadcast [M, N] view: [M,N], [1,N], [N], [M,1], [1] or a scalar (gemm.cc).
View2<const float> gemm_c_view(const float* data, const std::vector<int64_t>& c);

struct ConvAttrs {
  Conv2dParams conv;                  // layout NCHW from ONNX; NHWC after simplification
  bool c1_as_nhwc = false;            // input stored NCHW with C = 1, read as NHWC (same bytes)
  std::vector<int64_t> kernel_shape;  // when given (checked against the weight)
};

struct SoftmaxAttrs {
  SoftmaxKind kind = SoftmaxKind::kSoftmax;
  bool coerce_2d = false;  // opset < 13: the input is coerced to 2-D at axis
  int64_t axis = -1;
};

struct FlattenAttrs {
  int64_t axis = 1;
};

struct TransposeAttrs {
  std::vector<int64_t> perm;  // empty: reverse the dimensions
};

}  // namespace kaas::models::onnx_import
