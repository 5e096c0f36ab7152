#pragma once
// Vendor BLAS fast paths (OpenBLAS on the openmp backend, cuBLAS on cuda) behind one call, so
// kernels/ never includes a vendor header or tests a backend macro.

#include <cstdint>
#include <string>

#include "kaas/backends/queue.h"

namespace kaas::blas {

// C[m,n] = alpha * op(A)[m,k] . op(B)[k,n] + beta * C, all row-major with leading dimensions;
// op(X) = X^T when the flag is set. Pointers are device memory of the queue's backend.
struct SgemmCall {
  bool transpose_a = false, transpose_b = false;
  int64_t m = 0, n = 0, k = 0;
  float alpha = 1.0f;
  const float* a = nullptr;
  int64_t lda = 0;
  const float* b = nullptr;
  int64_t ldb = 0;
  float beta = 0.0f;
  float* c = nullptr;
  int64_t ldc = 0;
};

// Why the queue's backend has no vendor sgemm (none in this build, or cuBLAS could not be
// loaded: it is opened on first use); empty when it has one.
std::string sgemm_unavailable(const Queue& queue);
bool has_sgemm(const Queue& queue);
// Runs it on the queue (stream-ordered); kUnimplemented when has_sgemm() is false.
void sgemm(const Queue& queue, const SgemmCall& call);
// "OpenBLAS 0.3.21 (Haswell kernels)", "cuBLAS 13.0", or "none".
const char* sgemm_name(const Queue& queue);

// Builds with cuBLAS (KAAS_HAVE_CUBLAS) only: opens it, once, and says why it could not be
// opened; empty when it was. Nothing opens it before the CUDA backend's first sgemm or this.
std::string cublas_unavailable();

}  // namespace kaas::blas
