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
// contract (docs/reproducibility.md) rests on this. With a K chunk (GemmRowMajorArgs::k_chunk)
// each chunk of K is one such chain from zero and the chunk sums are added to y in order: a
// batch-1 product then splits K over the threads by whole chunks, and a call may end at any
// chunk boundary. Other alphas add alpha * (block sum) per K block.

#include <algorithm>
#include <vector>

#include "kaas/backends/cpu/host_team.h"

#include "kaas/kernels/cpu/gemm_simd.h"

namespace kaas::simd::tiled {

constexpr int64_t kRows = 6, kDepth = 256;

// Where a tile's accumulators start and where they go: each element is one chain of fused
// multiply-adds, continued exactly through memory when a K range is cut into blocks.
enum class Start { kZero, kLoad };  // from zero, or from `from` (a chain continued)
enum class End { kStore, kAddTo };  // stored to `to`, or to = to + alpha * sum

// to[MR, NV vectors] = (from or 0) + a[MR, kc] . b[kc, NV vectors] (kStore), or
// to += alpha * a . b (kAddTo, from zero); the activation when `last`. Compile-time modes: a
// runtime choice made g++ keep the accumulators on the stack (13 % slower).
template <class V, int MR, int NV, Start S, End E>
void tile(const float* a, int64_t lda, const float* b, int64_t ldb, const float* from, int64_t ldf,
          float* to, int64_t ldt, int64_t kc, float alpha, bool last, const Epilogue& e) {
  typename V::Reg acc[MR][NV];
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v)
      acc[r][v] = S == Start::kLoad ? V::load(from + r * ldf + V::kLanes * v) : V::zero();
  }
  // Two K steps per pass: the loop counter and branch cost issue slots the FMAs share.
#pragma GCC unroll 2
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
      float* p = to + r * ldt + V::kLanes * v;
      auto out = E == End::kStore ? acc[r][v] : V::fmadd(scale, acc[r][v], V::load(p));
      if (last) out = V::activate(out, e);
      V::store(p, out);
    }
  }
}

template <class V, int NV, Start S, End E>
void tile_rows(int mr, const float* a, int64_t lda, const float* b, int64_t ldb, const float* from,
               int64_t ldf, float* to, int64_t ldt, int64_t kc, float alpha, bool last,
               const Epilogue& e) {
  static_assert(kRows == 6, "tile_rows instantiates row counts 1..6");
  switch (mr) {
    case 1:
      return tile<V, 1, NV, S, E>(a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
    case 2:
      return tile<V, 2, NV, S, E>(a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
    case 3:
      return tile<V, 3, NV, S, E>(a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
    case 4:
      return tile<V, 4, NV, S, E>(a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
    case 5:
      return tile<V, 5, NV, S, E>(a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
    default:
      return tile<V, 6, NV, S, E>(a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
  }
}

// A tile of `vecs` (1..V::kTileVectors) vectors in the given modes.
template <class V, Start S, End E, int NV = V::kTileVectors>
void tile_modes(int vecs, int mr, const float* a, int64_t lda, const float* b, int64_t ldb,
                const float* from, int64_t ldf, float* to, int64_t ldt, int64_t kc, float alpha,
                bool last, const Epilogue& e) {
  if constexpr (NV > 1) {
    if (vecs < NV)
      return tile_modes<V, S, E, NV - 1>(vecs, mr, a, lda, b, ldb, from, ldf, to, ldt, kc, alpha,
                                         last, e);
  }
  tile_rows<V, NV, S, E>(mr, a, lda, b, ldb, from, ldf, to, ldt, kc, alpha, last, e);
}

// A tile of y. `chain` (with alpha 1): continue y's chain; else sum this K range from zero and
// add it to y (a K chunk: alpha 1 adds exactly).
template <class V>
void tile_vectors(int vecs, int mr, const float* a, int64_t lda, const float* b, int64_t ldb,
                  float* y, int64_t ldy, int64_t kc, float alpha, bool last, const Epilogue& e,
                  bool chain = true) {
  if (chain && alpha == 1.0f)
    return tile_modes<V, Start::kLoad, End::kStore>(vecs, mr, a, lda, b, ldb, y, ldy, y, ldy, kc,
                                                    alpha, last, e);
  tile_modes<V, Start::kZero, End::kAddTo>(vecs, mr, a, lda, b, ldb, nullptr, 0, y, ldy, kc, alpha,
                                           last, e);
}

// One K block [s0, s0 + sc) of a K chunk longer than a block: the chunk's sum is built from zero
// in `sum` (the tile's own [mr, vecs vectors] of an [M, N] scratch), block after block, and
// added to y after its last block. The chain per element is the one-block chain (the partial sums
// pass through memory exactly): the same bits, with A and B blocks that stay in L2 and L1.
template <class V>
void tile_chunk_block(bool first, bool final, int vecs, int mr, const float* a, int64_t lda,
                      const float* b, int64_t ldb, float* sum, int64_t lds, float* y, int64_t ldy,
                      int64_t sc, bool last, const Epilogue& e) {
  if (first && final) {
    tile_modes<V, Start::kZero, End::kAddTo>(vecs, mr, a, lda, b, ldb, nullptr, 0, y, ldy, sc, 1.0f,
                                             last, e);
  } else if (first) {
    tile_modes<V, Start::kZero, End::kStore>(vecs, mr, a, lda, b, ldb, nullptr, 0, sum, lds, sc,
                                             1.0f, false, e);
  } else if (!final) {
    tile_modes<V, Start::kLoad, End::kStore>(vecs, mr, a, lda, b, ldb, sum, lds, sum, lds, sc, 1.0f,
                                             false, e);
  } else {
    // y + sum, as the one-block path adds it: fmadd(1, sum, y) rounds once, like y + sum.
    tile_modes<V, Start::kLoad, End::kStore>(vecs, mr, a, lda, b, ldb, sum, lds, sum, lds, sc, 1.0f,
                                             false, e);
    const auto one = V::broadcast(1.0f);
    for (int r = 0; r < mr; ++r) {
      for (int v = 0; v < vecs; ++v) {
        float* p = y + r * ldy + V::kLanes * v;
        auto out = V::fmadd(one, V::load(sum + r * lds + V::kLanes * v), V::load(p));
        if (last) out = V::activate(out, e);
        V::store(p, out);
      }
    }
  }
}

// Few rows (a batch-1 dense layer: B is megabytes, each element used once) and K in chunks: each
// thread sums its own contiguous run of chunks (its stretch of B, streamed once, 128 columns per
// pass so a row of B is read in one run); then the chunk sums are added to y in chunk order.
// The same sequence of operations per element as the tiled path: the same bits.
template <class V>
void gemm_few_rows_chunks(const GemmRowMajorArgs& g, int64_t chunks) {
  const int64_t chunk_values = g.m * g.n;
  thread_local std::vector<float> chunk_sums;  // the caller's: [chunks][m][n]
  chunk_sums.assign(size_t(chunks * chunk_values), 0.0f);
  float* const sums = chunk_sums.data();
  constexpr int64_t cols = V::kLanes * V::kTileVectors;
  constexpr int kRowVectors = 128 / V::kLanes;
  const int mr = int(g.m);
  // Each member sums its own contiguous run of chunks.
  host::run_team(g.threads, true, [&](host::TeamMember& member) {
    const Epilogue none{};
    const host::Range run = member.share(chunks);
    for (int64_t chunk = run.begin; chunk < run.end; ++chunk) {
      const int64_t k_end = std::min(g.k, (chunk + 1) * g.k_chunk);
      float* chunk_sum = sums + chunk * chunk_values;
      for (int64_t k0 = chunk * g.k_chunk; k0 < k_end; k0 += kDepth) {
        const int64_t kc = std::min(kDepth, k_end - k0);
        const int64_t pass_cols = mr == 1 ? kRowVectors * V::kLanes : cols;
        for (int64_t c0 = 0; c0 < g.n; c0 += pass_cols) {
          const float* b = g.b + k0 * g.ldb + c0;
          if (mr == 1 && (g.n - c0) / V::kLanes >= kRowVectors) {
            tile<V, 1, kRowVectors, Start::kLoad, End::kStore>(g.a + k0, g.lda, b, g.ldb,
                                                               chunk_sum + c0, g.n, chunk_sum + c0,
                                                               g.n, kc, 1.0f, false, none);
            continue;
          }
          for (int64_t c = 0; c < pass_cols && c < g.n - c0; c += cols)
            tile_vectors<V>(int(std::min<int64_t>(V::kTileVectors, (g.n - c0 - c) / V::kLanes)), mr,
                            g.a + k0, g.lda, b + c, g.ldb, chunk_sum + c0 + c, g.n, kc, 1.0f, false,
                            none);
        }
      }
    }
  });
  // y = y + sum, chunk after chunk; columns spread over the members.
  const int64_t vectors = g.n / V::kLanes;
  host::for_shares(g.threads, true, vectors, [&](int64_t first, int64_t end) {
    const auto one = V::broadcast(1.0f);
    for (int r = 0; r < mr; ++r) {
      for (int64_t v = first; v < end; ++v) {
        float* p = g.y + r * g.ldy + v * V::kLanes;
        auto out = V::load(p);
        for (int64_t chunk = 0; chunk < chunks; ++chunk)
          out = V::fmadd(one, V::load(sums + chunk * chunk_values + r * g.n + v * V::kLanes), out);
        V::store(p, V::activate(out, g.epilogue));
      }
    }
  });
}

template <class V>
void gemm(const GemmRowMajorArgs& g) {
  constexpr int64_t cols = V::kLanes * V::kTileVectors;
  const int64_t row_blocks = (g.m + kRows - 1) / kRows;
  const int64_t panels = (g.n + cols - 1) / cols;
  const int64_t tiles = row_blocks * panels;  // panel-major: a thread's tiles share B blocks
  // K in chunks (alpha 1): each chunk summed from zero, then added to y in order.
  const bool chunked = g.k_chunk > 0 && g.k > 0 && g.alpha == 1.0f;
  const int64_t chunks = chunked ? (g.k + g.k_chunk - 1) / g.k_chunk : 1;
  // Inside a team member (or another active OpenMP region) the call stays on the calling thread,
  // as launch() does. Members take contiguous runs of panels (column blocks); K is split over
  // them only by whole chunks, whose sums are added in chunk order whatever the team size.
  const int team = host::team_size(g.threads);
  if (chunked && row_blocks == 1 && team > 1 && chunks >= 2 * team)
    return gemm_few_rows_chunks<V>(g, chunks);
  // A chunk longer than a block is walked in blocks (tile_chunk_block), its partial sums in a
  // scratch [M, N] of the caller's thread, each member writing only its own tiles.
  const bool blocked = chunked && g.k_chunk > kDepth;
  thread_local std::vector<float> chunk_scratch;
  if (blocked) chunk_scratch.resize(size_t(g.m * g.n));
  float* const scratch = chunk_scratch.data();
  // A tile's B rows [k, k + sc) x its columns, when they are a narrow slice of wider rows, are
  // copied once per K block into a contiguous strip the thread's row blocks then read: strided
  // slices map to a few L1 sets (AVX2's 64-byte slice of 512-byte rows: 8 of 64 sets), so each
  // row block fetched them again from L2. The values and their order are the same: the same bits.
  // Not for 3 row blocks or fewer, where the copy cost more than it saved (M = 16: 5-10 %).
  // Packed panels narrower than a tile (or not a multiple of it) would split tiles: read b.
  const int64_t packed_width = g.b_panel_columns;
  const float* const b_packed = packed_width > 0 && packed_width % cols == 0 ? g.b_packed : nullptr;
  const int64_t b_row_stride = b_packed != nullptr ? packed_width : g.ldb;
  const bool strip_b = row_blocks >= 4 && b_row_stride != cols;
  host::run_team(g.threads, tiles > 1, [&](host::TeamMember& member) {
    const auto [first, end] = member.share(tiles);
    thread_local std::vector<float> strip_storage;
    if (strip_b) strip_storage.resize(size_t(kDepth * cols));
    float* const strip = strip_storage.data();
    // A chunk is summed from zero and added to y (its B rows, a conv row's K for the first dense
    // layer, stay in the L2 across the row blocks).
    const int64_t depth = chunked ? g.k_chunk : kDepth;
    for (int64_t k0 = 0; k0 < g.k || (k0 == 0 && g.k == 0); k0 += depth) {
      const int64_t kc = std::min(depth, g.k - k0);
      const bool last = k0 + depth >= g.k;
      for (int64_t s0 = 0; s0 < kc || s0 == 0; s0 += kDepth) {
        const int64_t sc = blocked ? std::min(kDepth, kc - s0) : kc;
        int64_t strip_panel = -1;  // the panel whose B rows `strip` holds for this K block
        for (int64_t tile_index = first; tile_index < end; ++tile_index) {
          const int64_t panel = tile_index / row_blocks, block = tile_index % row_blocks;
          const int64_t r0 = block * kRows, c0 = panel * cols, k = k0 + s0;
          const int mr = int(std::min(kRows, g.m - r0));
          const int vecs = int(std::min<int64_t>(V::kTileVectors, (g.n - c0) / V::kLanes));
          const float* b = b_packed != nullptr ? b_packed + c0 / packed_width * g.b_panel_stride +
                                                     k * packed_width + c0 % packed_width
                                               : g.b + k * g.ldb + c0;
          int64_t ldb = b_row_stride;
          // Packed B read in place: each row block fetches its share of the next panel's rows
          // for this K block, so the thread's next panel starts with its B block in cache
          // (AVX2 tier, fused model, Zen 4: 1.07x).
          if (b_packed != nullptr && !strip_b && (panel + 1) * row_blocks < end) {
            const float* next = b_packed + (c0 + cols) / packed_width * g.b_panel_stride +
                                k * packed_width + (c0 + cols) % packed_width;
            const int64_t from = block * sc / row_blocks, to = (block + 1) * sc / row_blocks;
            for (int64_t r = from; r < to; ++r)
              for (int64_t line = 0; line < cols; line += 16)
                __builtin_prefetch(next + r * packed_width + line);
          }
          if (strip_b) {
            if (panel != strip_panel) {
              for (int64_t r = 0; r < sc; ++r)
                for (int v = 0; v < vecs; ++v)
                  V::store(strip + r * cols + v * V::kLanes, V::load(b + r * ldb + v * V::kLanes));
              strip_panel = panel;
            }
            b = strip, ldb = cols;
          }
          if (blocked) {
            tile_chunk_block<V>(s0 == 0, s0 + kDepth >= kc, vecs, mr, g.a + r0 * g.lda + k, g.lda,
                                b, ldb, scratch + r0 * g.n + c0, g.n, g.y + r0 * g.ldy + c0, g.ldy,
                                sc, last, g.epilogue);
          } else {
            tile_vectors<V>(vecs, mr, g.a + r0 * g.lda + k, g.lda, b, ldb, g.y + r0 * g.ldy + c0,
                            g.ldy, sc, g.alpha, last, g.epilogue, !chunked);
          }
        }
        if (!blocked) break;
      }
      if (g.k == 0) break;
    }
  });
}

}  // namespace kaas::simd::tiled
