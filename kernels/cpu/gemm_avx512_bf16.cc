// AVX512-BF16 GEMM for bf16 operands (see gemm_simd.h): y += alpha * a . b with fp32
// accumulation, where vdpbf16ps multiplies the pairs (k, k+1) of a row of a with the same pairs
// of 16 columns of b and adds both products to each fp32 lane. b is packed once (at model load)
// as [ceil(K/2)][N][2]; a's pairs are adjacent in its row. Tiles of 6 rows x 64 columns keep 24
// accumulators in zmm registers; K is walked in blocks of 256 pairs (a 64 KB block of one panel
// of b) so the block stays in L1/L2 while every row block of the thread passes over it. Each
// element of y is accumulated over K in the same order whatever M is, so a row's result does
// not depend on the other rows of the call. This file alone is compiled with -mavx512bf16.
//
// No standard-library templates are instantiated here (an AVX-512 copy of a shared COMDAT
// function must never be the one other translation units call).

#include "kaas/backends/cpu/host_team.h"
#include "kaas/common/error.h"
#include "kaas/kernels/cpu/gemm_simd.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX512F__) && defined(__AVX512BF16__) && \
    defined(__FMA__)
#include <immintrin.h>

#include "kaas/kernels/cpu/avx512_activation.h"

namespace kaas::simd {

namespace {

constexpr int64_t kRows = 6, kVectors = 4, kLanes = 16, kPairDepth = 256;

int64_t min64(int64_t a, int64_t b) {
  return a < b ? a : b;
}

// The pair (a[k], a[k + 1]) as one 32-bit lane, broadcast from memory.
[[gnu::always_inline]] inline __m512bh pair(const uint16_t* p) {
  uint32_t bits;
  __builtin_memcpy(&bits, p, sizeof bits);
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(bits));
}
// An odd K's last pair: (a[k - 1], 0), since a[k] is past the end of the row.
[[gnu::always_inline]] inline __m512bh last_single(const uint16_t* p) {
  return (__m512bh)_mm512_set1_epi32(static_cast<int>(uint32_t(p[0])));
}

template <int MR, int NV, bool kOddTail>
[[gnu::always_inline]] inline void pair_step(const GemmBf16PairsArgs& g, int64_t r0, int64_t c0,
                                             int64_t p, __m512 (&acc)[MR][NV]) {
  const uint16_t* bp = g.b_pairs + (p * g.n + c0) * 2;
  __m512bh bv[NV];
  for (int v = 0; v < NV; ++v) bv[v] = (__m512bh)_mm512_loadu_si512(bp + 32 * v);
  for (int r = 0; r < MR; ++r) {
    const uint16_t* ap = g.a + (r0 + r) * g.lda + 2 * p;
    const __m512bh av = kOddTail ? last_single(ap) : pair(ap);
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_dpbf16_ps(acc[r][v], av, bv[v]);
  }
}

template <int MR, int NV>
[[gnu::noinline]] void tile(const GemmBf16PairsArgs& g, int64_t r0, int64_t c0, int64_t p0,
                            int64_t pc, bool last) {
  __m512 acc[MR][NV];
  for (int r = 0; r < MR; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = _mm512_setzero_ps();
  // With an odd K the block holding the last pair ends with a single k.
  const bool odd_tail = (g.k & 1) != 0 && p0 + pc == (g.k + 1) / 2;
  const int64_t full = p0 + pc - (odd_tail ? 1 : 0);
  for (int64_t p = p0; p < full; ++p) pair_step<MR, NV, false>(g, r0, c0, p, acc);
  if (odd_tail) pair_step<MR, NV, true>(g, r0, c0, full, acc);
  const __m512 scale = _mm512_set1_ps(g.alpha);
  for (int r = 0; r < MR; ++r) {
    for (int v = 0; v < NV; ++v) {
      float* y = g.y + (r0 + r) * g.ldy + c0 + kLanes * v;
      __m512 out = _mm512_fmadd_ps(scale, acc[r][v], _mm512_loadu_ps(y));
      if (last) out = activate_avx512(out, g.epilogue);
      _mm512_storeu_ps(y, out);
    }
  }
}

template <int NV>
void tile_rows(int mr, const GemmBf16PairsArgs& g, int64_t r0, int64_t c0, int64_t p0, int64_t pc,
               bool last) {
  switch (mr) {
    case 1:
      return tile<1, NV>(g, r0, c0, p0, pc, last);
    case 2:
      return tile<2, NV>(g, r0, c0, p0, pc, last);
    case 3:
      return tile<3, NV>(g, r0, c0, p0, pc, last);
    case 4:
      return tile<4, NV>(g, r0, c0, p0, pc, last);
    case 5:
      return tile<5, NV>(g, r0, c0, p0, pc, last);
    default:
      return tile<6, NV>(g, r0, c0, p0, pc, last);
  }
}

void tile_any(int vecs, int mr, const GemmBf16PairsArgs& g, int64_t r0, int64_t c0, int64_t p0,
              int64_t pc, bool last) {
  switch (vecs) {
    case 1:
      return tile_rows<1>(mr, g, r0, c0, p0, pc, last);
    case 2:
      return tile_rows<2>(mr, g, r0, c0, p0, pc, last);
    case 3:
      return tile_rows<3>(mr, g, r0, c0, p0, pc, last);
    default:
      return tile_rows<4>(mr, g, r0, c0, p0, pc, last);
  }
}

}  // namespace

bool gemm_avx512_bf16_compiled() {
  return true;
}

void gemm_avx512_bf16(const GemmBf16PairsArgs& g) {
  constexpr int64_t cols = kLanes * kVectors;
  const int64_t row_blocks = (g.m + kRows - 1) / kRows;
  const int64_t panels = (g.n + cols - 1) / cols;
  const int64_t tiles = row_blocks * panels;  // panel-major: a thread's tiles share B blocks
  const int64_t pairs = (g.k + 1) / 2;
  host::run_team(g.threads, tiles > 1, [&](host::TeamMember& member) {
    const host::Range share = member.share(tiles);
    const int64_t first = share.begin, end = share.end;
    for (int64_t p0 = 0; p0 < pairs || (p0 == 0 && pairs == 0); p0 += kPairDepth) {
      const int64_t pc = min64(kPairDepth, pairs - p0);
      const bool last = p0 + kPairDepth >= pairs;
      for (int64_t tile_index = first; tile_index < end; ++tile_index) {
        const int64_t panel = tile_index / row_blocks, block = tile_index % row_blocks;
        const int64_t r0 = block * kRows, c0 = panel * cols;
        const int mr = static_cast<int>(min64(kRows, g.m - r0));
        const int vecs = static_cast<int>(min64(kVectors, (g.n - c0) / kLanes));
        tile_any(vecs, mr, g, r0, c0, p0, pc, last);
      }
      if (pairs == 0) break;
    }
  });
}

}  // namespace kaas::simd

#else

namespace kaas::simd {

bool gemm_avx512_bf16_compiled() {
  return false;
}

void gemm_avx512_bf16(const GemmBf16PairsArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX512-BF16 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
