#pragma once
// Cases of kernels/softmax.h: softmax and log-softmax along an axis, standalone activations.

#include <vector>

#include "cases/case.h"
#include "kaas/kernels/softmax.h"

namespace kaas::cases {

struct SoftmaxCase {
  bool activation;  // activate() with `epilogue`; else softmax of `kind`
  SoftmaxKind kind;
  Epilogue epilogue;
  int64_t outer, length, inner;  // activate: outer * length * inner elements
  float offset;                  // added to every input (large offsets: no overflow, no NaN)
};

std::vector<float> softmax_inputs(const SoftmaxCase& c);
// Reference of one line of `length` values `x[l * stride]`; writes the expected outputs and
// their tolerances (the float rounding of x - max is exact; exp/log and the sum add ~L ulp).
void softmax_reference(SoftmaxKind kind, const float* x, int64_t length, int64_t stride,
                       double* expected, double* tolerance);
double activation_reference(const Epilogue& e, double x);
double activation_tolerance(double expected);

std::vector<SoftmaxCase> softmax_shapes();
std::vector<Case> softmax_cases();

}  // namespace kaas::cases
