#pragma once
// The register-blocked GEMM of the CPU fast paths, written once over a SIMD vector type `V`
// (gemm_avx512.cc: 16 floats, gemm_avx2.cc: 8 floats). Include only from a
// translation unit compiled for V's instruction set.
//
// Tiles of kRows rows x V::kTileVectors vectors; K is walked in blocks of kDepth so a block of B
// stays in cache while every row block of the thread passes over it. Every element of y is
// accumulated over K in the same order whatever M is and wherever its row sits, so a row's
// result does not depend on the other rows of the call (a patch's scores do not depend on how
// it was batched).

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <vector>

#include "kaas/backends/cpu/openmp_threads.h"

#include "kaas/kernels/cpu/gemm_simd.h"

namespace kaas::simd::tiled {

constexpr int64_t kRows = 6, kDepth = 256;

// y[MR, NV vectors] += alpha * a[MR, kc] . b[kc, NV vectors]; the activation after the last K
// block.
template <class V, int MR, int NV>
void tile(const float* a, int64_t lda, const float* b, int64_t ldb, float* y, int64_t ldy,
          int64_t kc, float alpha, bool last, const Epilogue& e) {
  typename V::Reg acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = V::zero();
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
      auto out = V::fmadd(scale, acc[r][v], V::load(p));
      if (last) out = V::activate(out, e);
      V::store(p, out);
    }
  }
}

template <class V, int NV>
void tile_rows(int mr, const float* a, int64_t lda, const float* b, int64_t ldb, float* y,
               int64_t ldy, int64_t kc, float alpha, bool last, const Epilogue& e) {
  static_assert(kRows == 6, "tile_rows instantiates row counts 1..6");
  switch (mr) {
    case 1:
      return tile<V, 1, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 2:
      return tile<V, 2, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 3:
      return tile<V, 3, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 4:
      return tile<V, 4, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    case 5:
      return tile<V, 5, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
    default:
      return tile<V, 6, NV>(a, lda, b, ldb, y, ldy, kc, alpha, last, e);
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
  tile_rows<V, NV>(mr, a, lda, b, ldb, y, ldy, kc, alpha, last, e);
}

// Few rows and a long K (a batch-1 dense layer: B is megabytes, each element used once): the
// (row block, panel) tiles would give each thread a few columns of every B row, so both threads
// walk all of B. Instead each thread takes a contiguous run of K blocks (its own stretch of B,
// streamed once) and keeps every block's sums; then the sums are added into y block by block in K
// order. That is the tiled kernel's exact sequence of operations: the same bits for every M.
template <class V>
void gemm_few_rows(const GemmRowMajorArgs& g, int64_t blocks) {
  const int64_t block_values = g.m * g.n;
  thread_local std::vector<float> block_sums;  // the caller's: [blocks][m][n]
  // -0 is the identity of x + -0 for every x (+0 included): a block's sum is stored exactly.
  block_sums.assign(size_t(blocks * block_values), -0.0f);
  float* const sums = block_sums.data();
  constexpr int64_t cols = V::kLanes * V::kTileVectors;
  const int mr = int(g.m);
#if defined(_OPENMP)
#pragma omp parallel num_threads(openmp::requested_team())
#endif
  {
#if defined(_OPENMP)
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    if (t == 0) openmp::note_team(int(threads));
#else
    const int64_t threads = 1, t = 0;
#endif
    const Epilogue none{};
    for (int64_t block = blocks * t / threads; block < blocks * (t + 1) / threads; ++block) {
      const int64_t k0 = block * kDepth, kc = std::min(kDepth, g.k - k0);
      // One row: 128 columns per pass, so each B row is read in long runs.
      constexpr int kRowVectors = 128 / V::kLanes;
      const int64_t pass_cols = mr == 1 ? kRowVectors * V::kLanes : cols;
      for (int64_t c0 = 0; c0 < g.n; c0 += pass_cols) {
        const int64_t left = (g.n - c0) / V::kLanes;
        float* block_sum = sums + block * block_values + c0;
        const float* b = g.b + k0 * g.ldb + c0;
        if (mr == 1 && left >= kRowVectors)
          tile<V, 1, kRowVectors>(g.a + k0, g.lda, b, g.ldb, block_sum, g.n, kc, 1.0f, false, none);
        else
          for (int64_t c = 0; c < pass_cols && c < g.n - c0; c += cols)
            tile_vectors<V>(int(std::min<int64_t>(V::kTileVectors, (g.n - c0 - c) / V::kLanes)), mr,
                            g.a + k0, g.lda, b + c, g.ldb, block_sum + c, g.n, kc, 1.0f, false,
                            none);
      }
    }
#if defined(_OPENMP)
#pragma omp barrier
#endif
    // y += alpha * sum, block after block, as the tiles do; columns spread over the threads.
    const int64_t vectors = g.n / V::kLanes;
    const auto scale = V::broadcast(g.alpha);
    for (int r = 0; r < mr; ++r) {
      for (int64_t v = vectors * t / threads; v < vectors * (t + 1) / threads; ++v) {
        float* p = g.y + r * g.ldy + v * V::kLanes;
        auto out = V::load(p);
        for (int64_t block = 0; block < blocks; ++block)
          out =
              V::fmadd(scale, V::load(sums + block * block_values + r * g.n + v * V::kLanes), out);
        V::store(p, V::activate(out, g.epilogue));
      }
    }
  }
}

template <class V>
void gemm(const GemmRowMajorArgs& g) {
  constexpr int64_t cols = V::kLanes * V::kTileVectors;
  const int64_t row_blocks = (g.m + kRows - 1) / kRows;
  const int64_t panels = (g.n + cols - 1) / cols;
  const int64_t tiles = row_blocks * panels;  // panel-major: a thread's tiles share B blocks
  // Inside an active parallel region the call stays on the calling thread (as launch()).
#if defined(_OPENMP)
  const bool parallel = g.parallel && tiles > 1 && !omp_in_parallel();
  const int64_t k_blocks = (g.k + kDepth - 1) / kDepth;
  if (g.parallel && !omp_in_parallel() && row_blocks == 1 &&
      k_blocks >= 4 * openmp::requested_team() && openmp::requested_team() > 1)
    return gemm_few_rows<V>(g, k_blocks);
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
        tile_vectors<V>(vecs, mr, g.a + r0 * g.lda + k0, g.lda, g.b + k0 * g.ldb + c0, g.ldb,
                        g.y + r0 * g.ldy + c0, g.ldy, kc, g.alpha, last, g.epilogue);
      }
      if (g.k == 0) break;
    }
  }
}

}  // namespace kaas::simd::tiled
