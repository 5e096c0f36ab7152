#pragma once
// Cases of kernels/gemm.h: gemm (ONNX Gemm semantics) and dense, per implementation.

#include <string>
#include <string_view>
#include <vector>

#include "cases/case.h"
#include "kaas/kernels/gemm.h"

namespace kaas::cases {

enum class CKind { kNone, kFull, kRow, kColumn, kScalar };

struct GemmCase {
  int64_t m, k, n;
  bool trans_a, trans_b;
  CKind c_kind;
  Epilogue epilogue;
  float alpha, beta;
  bool integers;  // small integer inputs: exact products and sums, so bit-exact results
  bool dense;     // run through dense() (c is the bias row, alpha = beta = 1)
};

struct GemmInputs {
  std::vector<float> a, b, c;  // a [M,K] or [K,M] (trans_a), b [K,N] or [N,K], c as c_kind says
  int64_t c_rows = 0, c_cols = 0;
};
GemmInputs gemm_inputs(const GemmCase& c);
// Expected y [M,N] in double and per element tolerances: ~sqrt(K) u sum|a.b| (condition-aware),
// 0 where integer inputs make the result exact.
void gemm_reference(const GemmCase& c, const GemmInputs& in, std::vector<double>& expected,
                    std::vector<double>& tolerance);

// The rows of the fp32 gemm table (kernels/gemm.cc) that can run `c` on `queue`, in the table's
// preference order (kAuto not listed): tier, backend and operand layout as gemm() decides them.
std::vector<GemmImpl> gemm_case_impls(const Queue& queue, const GemmCase& c);

std::vector<GemmCase> gemm_shapes();
// bf16 / fp16 operands (cases/gemm_reduced_cases.cc); part of gemm_cases().
std::vector<Case> gemm_reduced_cases();
std::vector<Case> gemm_cases();

}  // namespace kaas::cases
