// AVX-512 GEMM for row-major operands (see gemm_cpu_fast.h). Tiles of 6 rows x 64 columns keep
// 24 accumulators in zmm registers; K is walked in blocks of 256 so the 64 KB block of B stays
// in L1/L2 while every row block of the thread passes over it.

#include <algorithm>

#include "backends/error.h"
#include "kernels/cpu/gemm_cpu_fast.h"

#if defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>
#include <omp.h>

#include "kernels/cpu/avx512_activation.h"

namespace kaas::cpu_fast {

namespace {

// 6 rows x 64 columns (24 accumulators, 4 B vectors, 6 broadcasts per k) measured level with
// 12 x 32 at batch 256 and faster at batch 16 (bench: dense_92928x128).
constexpr int64_t kRows = 6, kVecs = 4, kCols = 16 * kVecs, kDepth = 256;
static_assert(kRows == 6, "tile_rows() instantiates row counts 1..6");

// y[MR, 16 NV] += alpha * a[MR, kc] . b[kc, 16 NV]; the activation after the last K block.
template <int MR, int NV>
void tile(const float* a, int64_t lda, const float* b, int64_t ldb, float* y, int64_t ldy,
          int64_t kc, float alpha, bool last, const Epilogue& e) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = _mm512_loadu_ps(b + k * ldb + 16 * v);
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * lda + k]);
      for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_fmadd_ps(av, bv[v], acc[r][v]);
    }
  }
  const __m512 scale = _mm512_set1_ps(alpha);
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      float* p = y + r * ldy + 16 * v;
      __m512 out = _mm512_fmadd_ps(scale, acc[r][v], _mm512_loadu_ps(p));
      if (last) out = activate_avx512(out, e);
      _mm512_storeu_ps(p, out);
    }
  }
}

template <int NV>
void tile_rows(int mr, const float* a, int64_t lda, const float* b, int64_t ldb, float* y,
               int64_t ldy, int64_t kc, float alpha, bool last, const Epilogue& e) {
  switch (mr) {
#define KAAS_GEMM_TILE(R) \
  case R:                 \
    return tile<R, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    KAAS_GEMM_TILE(1)
    KAAS_GEMM_TILE(2)
    KAAS_GEMM_TILE(3)
    KAAS_GEMM_TILE(4)
    KAAS_GEMM_TILE(5)
    KAAS_GEMM_TILE(6)
#undef KAAS_GEMM_TILE
  }
}

}  // namespace

bool gemm_avx512_compiled() {
  return true;
}

void gemm_avx512(const GemmRowMajorArgs& g) {
  const int64_t row_blocks = (g.m + kRows - 1) / kRows;
  const int64_t panels = (g.n + kCols - 1) / kCols;
  const int64_t tiles = row_blocks * panels;  // panel-major: a thread's tiles share B blocks
  // Inside an active parallel region the call stays on the calling thread (as launch()).
  const bool parallel = g.parallel && tiles > 1 && !omp_in_parallel();
#pragma omp parallel if (parallel)
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t first = tiles * t / threads, end = tiles * (t + 1) / threads;
    for (int64_t k0 = 0; k0 < g.k || (k0 == 0 && g.k == 0); k0 += kDepth) {
      const int64_t kc = std::min(kDepth, g.k - k0);
      const bool last = k0 + kDepth >= g.k;
      for (int64_t tile_index = first; tile_index < end; ++tile_index) {
        const int64_t panel = tile_index / row_blocks, block = tile_index % row_blocks;
        const int64_t r0 = block * kRows, c0 = panel * kCols;
        const int mr = int(std::min(kRows, g.m - r0));
        const float* a = g.a + r0 * g.lda + k0;
        const float* b = g.b + k0 * g.ldb + c0;
        float* y = g.y + r0 * g.ldy + c0;
        const int vecs = int(std::min<int64_t>(kVecs, (g.n - c0) / 16));
        switch (vecs) {
          case 4:
            tile_rows<4>(mr, a, g.lda, b, g.ldb, y, g.ldy, kc, g.alpha, last, g.epilogue);
            break;
          case 3:
            tile_rows<3>(mr, a, g.lda, b, g.ldb, y, g.ldy, kc, g.alpha, last, g.epilogue);
            break;
          case 2:
            tile_rows<2>(mr, a, g.lda, b, g.ldb, y, g.ldy, kc, g.alpha, last, g.epilogue);
            break;
          default:
            tile_rows<1>(mr, a, g.lda, b, g.ldb, y, g.ldy, kc, g.alpha, last, g.epilogue);
        }
      }
      if (g.k == 0) break;
    }
  }
}

}  // namespace kaas::cpu_fast

#else

namespace kaas::cpu_fast {

bool gemm_avx512_compiled() {
  return false;
}

void gemm_avx512(const GemmRowMajorArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX-512 CPU fast path is not compiled in");
}

}  // namespace kaas::cpu_fast

#endif
