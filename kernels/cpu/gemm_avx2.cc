// AVX2 + FMA GEMM for row-major operands (see gemm_simd.h, gemm_simd_tiles.h): tiles of
// 6 rows x 16 columns keep 12 accumulators in ymm registers. Chosen where a row's result must
// not depend on the other rows of the call (the fused EmTrkMichelId plan), which Debian's
// OpenBLAS does not promise.

#include "kaas/common/error.h"
#include "kaas/kernels/cpu/gemm_simd.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "kaas/kernels/cpu/gemm_simd_tiles.h"

namespace kaas::simd {

namespace {

struct Ymm {
  using Reg = __m256;
  static constexpr int kLanes = 8, kTileVectors = 2;
  static Reg zero() { return _mm256_setzero_ps(); }
  static Reg load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm256_storeu_ps(p, v); }
  static Reg broadcast(float x) { return _mm256_set1_ps(x); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm256_fmadd_ps(a, b, c); }
  static Reg activate(Reg v, const Epilogue& e) {
    if (e.activation == Activation::kNone) return v;
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, v);
    for (float& x : lanes) x = apply(e, x);  // the scalar definition, NaN and -0 included
    return _mm256_load_ps(lanes);
  }
};

}  // namespace

bool gemm_avx2_compiled() {
  return true;
}

void gemm_avx2(const GemmRowMajorArgs& g) {
  tiled::gemm<Ymm>(g);
}

}  // namespace kaas::simd

#else

namespace kaas::simd {

bool gemm_avx2_compiled() {
  return false;
}

void gemm_avx2(const GemmRowMajorArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX2 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
