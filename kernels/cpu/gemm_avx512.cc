// AVX-512 GEMM for row-major operands (see gemm_simd.h, gemm_simd_tiles.h). Tiles of 6
// rows x 64 columns keep 24 accumulators in zmm registers; K is walked in blocks of 256 so the
// 64 KB block of B stays in L1/L2 while every row block of the thread passes over it.

#include "kaas/common/error.h"
#include "kaas/kernels/cpu/gemm_simd.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include "kaas/kernels/cpu/avx512_activation.h"
#include "kaas/kernels/cpu/gemm_simd_tiles.h"

namespace kaas::simd {

namespace {

// 6 rows x 64 columns (24 accumulators, 4 B vectors, 6 broadcasts per k) measured level with
// 12 x 32 at batch 256 and faster at batch 16 (bench: dense_92928x128).
struct Zmm {
  using Reg = __m512;
  static constexpr int kLanes = 16, kTileVectors = 4;
  static Reg zero() { return _mm512_setzero_ps(); }
  static Reg load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* p, Reg v) { _mm512_storeu_ps(p, v); }
  static Reg broadcast(float x) { return _mm512_set1_ps(x); }
  static Reg fmadd(Reg a, Reg b, Reg c) { return _mm512_fmadd_ps(a, b, c); }
  static Reg activate(Reg v, const Epilogue& e) { return activate_avx512(v, e); }
};

}  // namespace

bool gemm_avx512_compiled() {
  return true;
}

void gemm_avx512(const GemmRowMajorArgs& g) {
  tiled::gemm<Zmm>(g);
}

}  // namespace kaas::simd

#else

namespace kaas::simd {

bool gemm_avx512_compiled() {
  return false;
}

void gemm_avx512(const GemmRowMajorArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX-512 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
