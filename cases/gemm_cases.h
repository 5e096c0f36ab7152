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

std::string_view gemm_impl_name(GemmImpl impl);
GemmImpl gemm_impl_from_name(std::string_view name);  // throws kInvalidArgument
// Every implementation this build and CPU offer on `backend` (kPortable first, kAuto not listed).
std::vector<GemmImpl> gemm_impls_available(const Queue& queue);
// Whether `impl` accepts the operands of `c` (the CPU fast paths need row-major operands and
// N a multiple of their vector width).
bool gemm_impl_applies(GemmImpl impl, const GemmCase& c);

std::vector<GemmCase> gemm_shapes();
// bf16 / fp16 operands (cases/gemm_reduced_cases.cc); part of gemm_cases().
std::vector<Case> gemm_reduced_cases();
std::vector<Case> gemm_cases();

}  // namespace kaas::cases
