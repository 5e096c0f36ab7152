// sparse_dense1's AVX-512 fast path: 4 windows x 64 columns in 16 zmm accumulators, each load
// of W1 feeding 4 FMAs (see sparse_dense_tiles.h).

#include "kaas/common/error.h"
#include "kaas/kernels/cpu/sparse_dense_simd.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include "kaas/kernels/cpu/sparse_dense_tiles.h"

namespace kaas::simd {

namespace {

struct Zmm {
  using Reg = __m512;
  static constexpr int kLanes = 16;
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg broadcast(float x) { return _mm512_set1_ps(x); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg max(Reg a, Reg b) { return _mm512_maskz_max_ps(__mmask16(0xFFFF), a, b); }
  static Reg sub(Reg a, Reg b) { return _mm512_sub_ps(a, b); }
};

}  // namespace

bool sparse_dense1_avx512_compiled() {
  return true;
}

void sparse_conv_delta_avx512(const SparseConvArgs& args) {
  sparse_tiles::conv_delta<Zmm>(args);
}

void sparse_dense1_avx512(const SparseDense1Args& args) {
  sparse_tiles::run<Zmm, 6, 4, 8>(args);
}

}  // namespace kaas::simd

#else

namespace kaas::simd {

bool sparse_dense1_avx512_compiled() {
  return false;
}

void sparse_conv_delta_avx512(const SparseConvArgs&) {
  throw Error(ErrorCode::kInternal, "sparse_conv_delta: the CPU fast path is not compiled in");
}

void sparse_dense1_avx512(const SparseDense1Args&) {
  throw Error(ErrorCode::kInternal, "sparse_dense1: the AVX-512 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
