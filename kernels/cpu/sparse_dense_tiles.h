#pragma once
// The register-blocked body of sparse_dense1's CPU fast path, for a vector traits type V (load,
// store, broadcast, fmadd, kLanes). Included only by the per-instruction-set files.

#include <algorithm>
#include <vector>

#include "kaas/backends/cpu/host_team.h"
#include "kaas/kernels/cpu/sparse_dense_simd.h"

namespace kaas::simd::sparse_tiles {

inline constexpr int64_t kTile = 512;  // windows per tile: their rows stay in L1/L2

// rows[0..R) += delta rows . W rows over columns [c0, c0 + kVectors lanes), channel by channel.
template <class V, int R, int kVectors>
inline void accumulate(const SparseDense1Args& a, const float* w, const int32_t* rows,
                       const int32_t* deltas, int64_t c0) {
  typename V::Reg acc[R][kVectors];
  const float* d[R];
  for (int r = 0; r < R; ++r) {
    d[r] = a.delta + (deltas[r] - a.delta_first) * a.delta_stride;
    for (int v = 0; v < kVectors; ++v)
      acc[r][v] = V::load(a.out + rows[r] * a.out_stride + c0 + v * V::kLanes);
  }
  for (int64_t c = 0; c < a.channels; ++c) {
    const float* wc = w + c * a.weight_stride + c0;
    typename V::Reg wv[kVectors];
    for (int v = 0; v < kVectors; ++v) wv[v] = V::load(wc + v * V::kLanes);
    for (int r = 0; r < R; ++r) {
      const typename V::Reg dv = V::broadcast(d[r][c]);
      for (int v = 0; v < kVectors; ++v) acc[r][v] = V::fmadd(dv, wv[v], acc[r][v]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < kVectors; ++v)
      V::store(a.out + rows[r] * a.out_stride + c0 + v * V::kLanes, acc[r][v]);
}

// One window at one position, over its non-zero delta channels only: a channel that is 0 after
// the ReLU in this window and in an empty one (relu(bias) = 0) adds nothing, so skipping it is
// exact. The row's columns [c0, c0 + kSparseVectors lanes) stay in registers; each channel costs
// one broadcast and kSparseVectors FMAs on W1 rows read from L1.
template <class V, int kSparseVectors>
inline void accumulate_nonzero(const SparseDense1Args& a, const float* w, int32_t row,
                               int32_t delta_row, int64_t c0) {
  const int64_t i = delta_row - a.delta_first;
  const float* d = a.delta + i * a.delta_stride;
  if (i + 2 < a.delta_rows) {  // this window's next active positions are usually next in line
    const float* ahead = d + 2 * a.delta_stride;
    for (int64_t c = 0; c < a.channels; c += 16) __builtin_prefetch(ahead + c);
    __builtin_prefetch(a.nonzero + i + 2);
  }
  uint64_t nonzero = a.nonzero[i];
  if (nonzero == 0) return;
  float* out = a.out + row * a.out_stride + c0;
  typename V::Reg acc[kSparseVectors];
  for (int v = 0; v < kSparseVectors; ++v) acc[v] = V::load(out + v * V::kLanes);
  while (nonzero != 0) {
    const int c = __builtin_ctzll(nonzero);
    nonzero &= nonzero - 1;
    const typename V::Reg dv = V::broadcast(d[c]);
    const float* wc = w + c * a.weight_stride + c0;
    for (int v = 0; v < kSparseVectors; ++v)
      acc[v] = V::fmadd(dv, V::load(wc + v * V::kLanes), acc[v]);
  }
  for (int v = 0; v < kSparseVectors; ++v) V::store(out + v * V::kLanes, acc[v]);
}

// The last r < kRows windows of a position, in one register block of r rows.
template <class V, int R, int kVectors>
inline void remainder(const SparseDense1Args& a, const float* w, const int32_t* rows,
                      const int32_t* deltas, int64_t c0, int r) {
  if constexpr (R >= 1) {
    if (r == R) return accumulate<V, R, kVectors>(a, w, rows, deltas, c0);
    remainder<V, R - 1, kVectors>(a, w, rows, deltas, c0, r);
  }
}

// Bit c of nonzero[i]: delta row i's channel c is not 0.
inline void nonzero_channels(const SparseDense1Args& a, uint64_t* nonzero, bool parallel) {
  host::for_shares(a.threads, parallel, a.delta_rows, [&](int64_t first, int64_t end) {
    for (int64_t i = first; i < end; ++i) {
      const float* d = a.delta + i * a.delta_stride;
      uint64_t bits = 0;
      for (int64_t c = 0; c < a.channels; ++c) bits |= uint64_t(d[c] != 0.0f) << c;
      nonzero[i] = bits;
    }
  });
}

template <class V, int kRows, int kVectors, int kSparseVectors>
void tile(const SparseDense1Args& a, int64_t r0, int64_t r1) {
  constexpr int64_t cols = int64_t(V::kLanes) * kVectors;
  for (int64_t r = r0; r < r1; ++r)
    std::copy(a.constant, a.constant + a.n1, a.out + r * a.out_stride);
  int32_t rows[kTile], deltas[kTile];
  const int64_t positions = a.out_h * a.out_w;
  for (int64_t p = 0; p < positions; ++p) {
    const int64_t py = p / a.out_w, px = p % a.out_w;
    int m = 0;
    for (int64_t r = r0; r < r1; ++r) {
      const int32_t e = a.index[a.image[r] * a.index_stride[0] + (a.y[r] + py) * a.index_stride[1] +
                                (a.x[r] + px) * a.index_stride[2]];
      rows[m] = int32_t(r);
      deltas[m] = e;
      m += e >= 0;
    }
    if (m == 0) continue;
    const float* w = a.weight + p * a.channels * a.weight_stride;
    constexpr int64_t sparse_cols = int64_t(V::kLanes) * kSparseVectors;
    if (a.channels <= 64 && a.n1 % sparse_cols == 0) {
      for (int64_t c0 = 0; c0 < a.n1; c0 += sparse_cols)
        for (int i = 0; i < m; ++i)
          accumulate_nonzero<V, kSparseVectors>(a, w, rows[i], deltas[i], c0);
      continue;
    }
    for (int64_t c0 = 0; c0 < a.n1; c0 += cols) {
      int i = 0;
      for (; i + kRows <= m; i += kRows)
        accumulate<V, kRows, kVectors>(a, w, rows + i, deltas + i, c0);
      if (i < m) remainder<V, kRows - 1, kVectors>(a, w, rows + i, deltas + i, c0, m - i);
    }
  }
  if (a.epilogue.activation == Activation::kNone) return;
  for (int64_t r = r0; r < r1; ++r)
    for (int64_t j = 0; j < a.n1; ++j) {
      float& v = a.out[r * a.out_stride + j];
      v = apply(a.epilogue, v);
    }
}

// kRows x kVectors: the register block of windows sharing W1 loads (more than 64 channels);
// kSparseVectors: the columns one window keeps in registers over its non-zero channels.
template <class V, int kRows, int kVectors, int kSparseVectors>
void run(const SparseDense1Args& a) {
  // Tiles of at most kTile windows, at least one per thread (a tile's W1 rows are read once).
  const int64_t threads = a.rows > 1 ? host::team_size(a.threads) : 1;
  const int64_t size = std::clamp<int64_t>((a.rows + threads - 1) / threads, 1, kTile);
  thread_local std::vector<uint64_t> nonzero;  // the caller's: read by its team below
  SparseDense1Args args = a;
  if (a.channels <= 64) {
    nonzero.resize(size_t(std::max<int64_t>(a.delta_rows, 1)));
    nonzero_channels(a, nonzero.data(), threads > 1);
    args.nonzero = nonzero.data();
  }
  const int64_t tiles = (a.rows + size - 1) / size;
  host::run_team(a.threads, threads > 1 && tiles > 1, [&](host::TeamMember& member) {
    for (host::Range run; member.take(tiles, 1, run);)
      tile<V, kRows, kVectors, kSparseVectors>(args, run.begin * size,
                                               std::min(a.rows, (run.begin + 1) * size));
  });
}

// The conv at positions p .. p + P - 1: the channels in vectors, one broadcast input value per
// tap and position; P positions interleaved so the FMA chains overlap.
template <class V, int P>
inline void conv_positions(const SparseConvArgs& a, int64_t p) {
  constexpr int kMaxVectors = 4;
  typename V::Reg acc[P][kMaxVectors];
  const float* rows[P];
  const int vectors = int(a.oc / V::kLanes);
  for (int q = 0; q < P; ++q) {
    const int64_t flat = a.positions[p + q];
    const int64_t n = flat / (a.out_h * a.out_w), y = flat / a.out_w % a.out_h, x = flat % a.out_w;
    rows[q] = a.images + ((n * a.height + y) * a.width + x) * a.channels;
    for (int v = 0; v < kMaxVectors; ++v)
      acc[q][v] = a.bias && v < vectors ? V::load(a.bias + v * V::kLanes) : V::broadcast(0.0f);
  }
  const float* w = a.weight_t;
  const int64_t row_values = a.kernel_w * a.channels, image_row = a.width * a.channels;
  for (int64_t dy = 0; dy < a.kernel_h; ++dy) {
    for (int64_t t = 0; t < row_values; ++t, w += a.oc) {
      for (int q = 0; q < P; ++q) {
        const float x = rows[q][dy * image_row + t];
        if (x == 0.0f) continue;  // zero-suppressed input: adds nothing (exactly)
        const typename V::Reg xv = V::broadcast(x);
        for (int v = 0; v < kMaxVectors; ++v)
          if (v < vectors) acc[q][v] = V::fmadd(xv, V::load(w + v * V::kLanes), acc[q][v]);
      }
    }
  }
  const bool relu = a.epilogue.activation == Activation::kRelu;
  for (int q = 0; q < P; ++q) {
    float* out = a.delta + (p + q) * a.delta_stride;
    for (int v = 0; v < vectors; ++v) {
      const typename V::Reg c = V::load(a.constant + v * V::kLanes);
      if (relu) {
        V::store(out + v * V::kLanes, V::sub(V::max(acc[q][v], V::broadcast(0.0f)), c));
      } else {
        V::store(out + v * V::kLanes, acc[q][v]);
        for (int64_t o = v * V::kLanes; o < (v + 1) * V::kLanes; ++o)
          out[o] = apply(a.epilogue, out[o]) - a.constant[o];
      }
    }
  }
}

// The conv at each listed position (at most 4 vectors of channels).
template <class V>
void conv_delta(const SparseConvArgs& a) {
  const int64_t pairs = a.count / 2;
  host::for_shares(a.threads, a.count > 256, pairs, [&](int64_t first, int64_t end) {
    for (int64_t i = first; i < end; ++i) conv_positions<V, 2>(a, 2 * i);
  });
  if (a.count % 2 == 1) conv_positions<V, 1>(a, a.count - 1);
}

}  // namespace kaas::simd::sparse_tiles
