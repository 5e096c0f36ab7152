#pragma once
// The register-blocked GEMM of the CPU fast paths, written once over a SIMD vector type `V`
// (gemm_avx512.cc: 16 floats, gemm_avx2.cc: 8 floats). Include only from a
// translation unit compiled for V's instruction set.
//
// Tiles of kRows rows x V::kTileVectors vectors; K is walked in blocks of kDepth so a block of B
// stays in cache while every row block of the thread passes over it. With alpha == 1 (every
// model layer) each element of y is one chain of fused multiply-adds over K in order, starting
// from its value on entry: the bits depend on nothing but that row's problem -- not on M or the
// row's position, not on the thread count, and not on how K was cut into blocks or into calls
// (the fused plan's slab passes, whose size follows the model's max batch). The reproducibility
// contract (docs/reproducibility.md) rests on this. Other alphas add alpha * (block sum) per
// K block.

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>

#include "kaas/backends/cpu/openmp_threads.h"

#include "kaas/kernels/cpu/gemm_simd.h"

namespace kaas::simd::tiled {

constexpr int64_t kRows = 6, kDepth = 256;

// y[MR, NV vectors] += alpha * a[MR, kc] . b[kc, NV vectors]; the activation after the last K
// block. Chained (alpha == 1): each element's chain continues from y; a compile-time choice, as
// a runtime one made g++ keep the accumulators on the stack (13 % slower).
template <class V, int MR, int NV, bool Chained>
void tile(const float* a, int64_t lda, const float* b, int64_t ldb, float* y, int64_t ldy,
          int64_t kc, float alpha, bool last, const Epilogue& e) {
  typename V::Reg acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v)
      acc[r][v] = Chained ? V::load(y + r * ldy + V::kLanes * v) : V::zero();
  for (int64_t k = 0; k < kc; ++k) {
    typename V::Reg bv[NV];
    for (int v = 0; v < NV; ++v) bv[v] = V::load(b + k * ldb + V::kLanes * v);
    for (int r = 0; r < MR; ++r) {
      const auto av = V::broadcast(a[r * lda + k]);
      for (int v = 0; v < NV; ++v) acc[r][v] = V::fmadd(av, bv[v], acc[r][v]);
    }
  }
  const auto scale = V::broadcast(alpha);
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      float* p = y + r * ldy + V::kLanes * v;
      auto out = Chained ? acc[r][v] : V::fmadd(scale, acc[r][v], V::load(p));
      if (last) out = V::activate(out, e);
      V::store(p, out);
    }
  }
}

template <class V, int NV, bool Chained>
void tile_rows(int mr, const float* a, int64_t lda, const float* b, int64_t ldb, float* y,
               int64_t ldy, int64_t kc, float alpha, bool last, const Epilogue& e) {
  static_assert(kRows == 6, "tile_rows instantiates row counts 1..6");
  switch (mr) {
    case 1:
      return tile<V, 1, NV, Chained>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 2:
      return tile<V, 2, NV, Chained>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 3:
      return tile<V, 3, NV, Chained>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 4:
      return tile<V, 4, NV, Chained>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 5:
      return tile<V, 5, NV, Chained>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    default:
      return tile<V, 6, NV, Chained>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
  }
}

// A tile of `vecs` (1..V::kTileVectors) vectors.
template <class V, int NV = V::kTileVectors>
void tile_vectors(int vecs, int mr, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* y, int64_t ldy, int64_t kc, float alpha, bool last, const Epilogue& e) {
  if constexpr (NV > 1) {
    if (vecs < NV)
      return tile_vectors<V, NV - 1>(vecs, mr, a, lda, b, ldb, y, ldy, kc, alpha, last, e);
  }
  if (alpha == 1.0f) return tile_rows<V, NV, true>(mr, a, lda, b, ldb, y, ldy, kc, alpha, last, e);
  tile_rows<V, NV, false>(mr, a, lda, b, ldb, y, ldy, kc, alpha, last, e);
}

template <class V>
void gemm(const GemmRowMajorArgs& g) {
  constexpr int64_t cols = V::kLanes * V::kTileVectors;
  static_assert(kPanelColumns % cols == 0, "a tile never straddles two packed panels");
  const int64_t row_blocks = (g.m + kRows - 1) / kRows;
  const int64_t panels = (g.n + cols - 1) / cols;
  const int64_t tiles = row_blocks * panels;  // panel-major: a thread's tiles share B blocks
  // Inside an active parallel region the call stays on the calling thread (as launch()).
  // Threads take contiguous runs of panels (column blocks) and never split K: a split K would
  // need per-thread partial sums, whose order would follow the thread count.
#if defined(_OPENMP)
  const bool parallel = g.parallel && tiles > 1 && !omp_in_parallel();
#pragma omp parallel if (parallel) num_threads(openmp::requested_team())
#endif
  {
#if defined(_OPENMP)
    if (parallel && omp_get_thread_num() == 0) openmp::note_team(omp_get_num_threads());
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
#else  // built without OpenMP (the ThreadSanitizer build): one thread does every tile
    const int64_t threads = 1, t = 0;
#endif
    const int64_t first = tiles * t / threads, end = tiles * (t + 1) / threads;
    for (int64_t k0 = 0; k0 < g.k || (k0 == 0 && g.k == 0); k0 += kDepth) {
      const int64_t kc = std::min(kDepth, g.k - k0);
      const bool last = k0 + kDepth >= g.k;
      for (int64_t tile_index = first; tile_index < end; ++tile_index) {
        const int64_t panel = tile_index / row_blocks, block = tile_index % row_blocks;
        const int64_t r0 = block * kRows, c0 = panel * cols;
        const int mr = int(std::min(kRows, g.m - r0));
        const int vecs = int(std::min<int64_t>(V::kTileVectors, (g.n - c0) / V::kLanes));
        const float* b = g.b_panel_stride != 0 ? g.b + c0 / kPanelColumns * g.b_panel_stride +
                                                     k0 * g.ldb + c0 % kPanelColumns
                                               : g.b + k0 * g.ldb + c0;
        tile_vectors<V>(vecs, mr, g.a + r0 * g.lda + k0, g.lda, b, g.ldb, g.y + r0 * g.ldy + c0,
                        g.ldy, kc, g.alpha, last, g.epilogue);
      }
      if (g.k == 0) break;
    }
  }
}

}  // namespace kaas::simd::tiled
