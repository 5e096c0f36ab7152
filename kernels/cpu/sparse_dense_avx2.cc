// sparse_dense1's AVX2 fast path: 3 windows x 32 columns in 12 ymm accumulators, each load
// of W1 feeding 3 FMAs (see sparse_dense_tiles.h).

#include "kaas/common/error.h"
#include "kaas/kernels/cpu/sparse_dense_simd.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "kaas/kernels/cpu/sparse_dense_tiles.h"

namespace kaas::simd {

namespace {

struct Ymm {
  using Reg = __m256;
  static constexpr int kLanes = 8;
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg broadcast(float x) { return _mm256_set1_ps(x); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg max(Reg a, Reg b) { return _mm256_max_ps(a, b); }
  static Reg sub(Reg a, Reg b) { return _mm256_sub_ps(a, b); }
};

}  // namespace

bool sparse_dense1_avx2_compiled() {
  return true;
}

void sparse_conv_delta_avx2(const SparseConvArgs& args) {
  sparse_tiles::conv_delta<Ymm>(args);
}

void sparse_dense1_avx2(const SparseDense1Args& args) {
  sparse_tiles::run<Ymm, 3, 4, 8>(args);
}

}  // namespace kaas::simd

#else

namespace kaas::simd {

bool sparse_dense1_avx2_compiled() {
  return false;
}

void sparse_conv_delta_avx2(const SparseConvArgs&) {
  throw Error(ErrorCode::kInternal, "sparse_conv_delta: the CPU fast path is not compiled in");
}

void sparse_dense1_avx2(const SparseDense1Args&) {
  throw Error(ErrorCode::kInternal, "sparse_dense1: the AVX2 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
