// AVX-512 GEMM for row-major operands (see gemm_simd.h, gemm_simd_tiles.h). Tiles of 6
// rows x 64 columns keep 24 accumulators in zmm registers; K is walked in blocks of 256 so the
// 64 KB block of B stays in L1/L2 while every row block of the thread passes over it.

#include "kaas/backends/cpu/host_team.h"
#include "kaas/common/error.h"
#include "kaas/kernels/cpu/gemm_simd.h"

#if !defined(KAAS_NO_CPU_SIMD_PATHS) && defined(__AVX512F__) && defined(__FMA__)
#include <immintrin.h>

#include <new>

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

namespace {

// 64-byte aligned float scratch (not a std::vector: no standard-library template may be
// instantiated in this AVX-512 translation unit).
class Scratch {
 public:
  explicit Scratch(int64_t n)
      : data_(static_cast<float*>(
            ::operator new[](static_cast<size_t>(n) * sizeof(float), std::align_val_t{64}))) {}
  ~Scratch() { ::operator delete[](data_, std::align_val_t{64}); }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* data() const { return data_; }

 private:
  float* data_;
};

// dst[i] = src[i] widened exactly, count >= 0 (masked tail). The maskz forms because GCC 12
// reports the unmasked intrinsics' internal _mm512_undefined_* as uninitialised.
void widen_fp16(const uint16_t* src, float* dst, int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    _mm512_storeu_ps(dst + i, _mm512_maskz_cvtph_ps(0xffff, h));
  }
  if (i < count) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (count - i)) - 1u);
    const __m256i h = _mm256_maskz_loadu_epi16(tail, src + i);
    _mm512_mask_storeu_ps(dst + i, tail, _mm512_maskz_cvtph_ps(0xffff, h));
  }
}

// bf16 widens by a 16-bit shift into the high half of each fp32 lane.
void widen_bf16(const uint16_t* src, float* dst, int64_t count) {
  int64_t i = 0;
  for (; i + 16 <= count; i += 16) {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i));
    const __m512i w = _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16);
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(w));
  }
  if (i < count) {
    const __mmask16 tail = static_cast<__mmask16>((1u << (count - i)) - 1u);
    const __m256i h = _mm256_maskz_loadu_epi16(tail, src + i);
    const __m512i w = _mm512_maskz_slli_epi32(0xffff, _mm512_maskz_cvtepu16_epi32(0xffff, h), 16);
    _mm512_mask_storeu_ps(dst + i, tail, _mm512_castsi512_ps(w));
  }
}

using Widen = void (*)(const uint16_t*, float*, int64_t);

void gemm_widened(const GemmHalfArgs& g, Widen widen);

}  // namespace

void gemm_avx512_fp16(const GemmHalfArgs& g) {
  gemm_widened(g, widen_fp16);
}

void gemm_avx512_bf16_widened(const GemmHalfArgs& g) {
  gemm_widened(g, widen_bf16);
}

namespace {

void gemm_widened(const GemmHalfArgs& g, Widen widen) {
  using tiled::kDepth;
  using tiled::kRows;
  constexpr int64_t cols = Zmm::kLanes * Zmm::kTileVectors;
  const int64_t row_blocks = (g.m + kRows - 1) / kRows;
  const int64_t panels = (g.n + cols - 1) / cols;
  const int64_t tiles = row_blocks * panels;  // panel-major: a thread's tiles share B blocks
  host::run_team(g.threads, tiles > 1, [&](host::TeamMember& member) {
    const auto [first, end] = member.share(tiles);
    Scratch b_block(kDepth * cols), a_block(kRows * kDepth);
    for (int64_t k0 = 0; k0 < g.k || (k0 == 0 && g.k == 0); k0 += kDepth) {
      const int64_t kc = g.k - k0 < kDepth ? g.k - k0 : kDepth;
      const bool last = k0 + kDepth >= g.k;
      int64_t staged_panel = -1;
      for (int64_t tile_index = first; tile_index < end; ++tile_index) {
        const int64_t panel = tile_index / row_blocks, block = tile_index % row_blocks;
        const int64_t r0 = block * kRows, c0 = panel * cols;
        const int mr = static_cast<int>(g.m - r0 < kRows ? g.m - r0 : kRows);
        const int64_t panel_vectors = (g.n - c0) / Zmm::kLanes;
        const int vecs =
            static_cast<int>(panel_vectors < Zmm::kTileVectors ? panel_vectors : Zmm::kTileVectors);
        if (panel != staged_panel) {  // this panel's rows of the K block, as fp32
          for (int64_t k = 0; k < kc; ++k)
            widen(g.b + (k0 + k) * g.ldb + c0, b_block.data() + k * cols, vecs * Zmm::kLanes);
          staged_panel = panel;
        }
        for (int r = 0; r < mr; ++r)
          widen(g.a + (r0 + r) * g.lda + k0, a_block.data() + r * kDepth, kc);
        tiled::tile_vectors<Zmm>(vecs, mr, a_block.data(), kDepth, b_block.data(), cols,
                                 g.y + r0 * g.ldy + c0, g.ldy, kc, g.alpha, last, g.epilogue);
      }
      if (g.k == 0) break;
    }
  });
}

}  // namespace

}  // namespace kaas::simd

#else

namespace kaas::simd {

bool gemm_avx512_compiled() {
  return false;
}

void gemm_avx512(const GemmRowMajorArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX-512 CPU fast path is not compiled in");
}

void gemm_avx512_fp16(const GemmHalfArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX-512 CPU fast path is not compiled in");
}

void gemm_avx512_bf16_widened(const GemmHalfArgs&) {
  throw Error(ErrorCode::kInternal, "gemm: the AVX-512 CPU fast path is not compiled in");
}

}  // namespace kaas::simd

#endif
