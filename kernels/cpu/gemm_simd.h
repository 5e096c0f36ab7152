#pragma once
// CPU fast path of gemm (see kernels/gemm.h): an AVX-512 register-blocked kernel for row-major
// operands, y = act(y + alpha * a . b), compiled alone with AVX-512 flags
// (gemm_avx512.cc) and called only when gemm_avx512_available(). Debian's
// OpenBLAS runs its Haswell (AVX2) kernels on this class of CPU; AVX-512 doubles the FMA width.

#include <cstdint>

#include "kaas/backends/backend_traits.h"

#include "kaas/kernels/activation.h"

namespace kaas::simd {

struct GemmRowMajorArgs {
  const float* a;  // [m, k], row stride lda, unit column stride
  int64_t lda;
  const float* b;  // [k, n], row stride ldb, unit column stride
  int64_t ldb;
  float* y;  // [m, n], row stride ldy: holds beta * c (or 0) on entry
  int64_t ldy;
  int64_t m, n, k;  // n % 16 == 0
  float alpha;
  Epilogue epilogue;
  HostThreads threads;  // who spreads (row block, column panel) tiles over threads (host_team.h)
  // Optional: op(b) also packed in panels of b_panel_columns columns (kaas::GemmPackedPanels),
  // panel p at b_packed + p * b_panel_stride, each [k][b_panel_columns]; tiles as wide as a
  // panel or narrower read it, wider tiles and the few-rows path read b.
  const float* b_packed = nullptr;
  int64_t b_panel_stride = 0;
  int64_t b_panel_columns = 0;
  // Non-zero (with alpha 1): K in chunks of this many, each summed from zero and added to y in
  // order (kaas::GemmParams::k_chunk).
  int64_t k_chunk = 0;
};

// bf16 operands on AVX512-BF16 (gemm_avx512_bf16.cc): y[m, n] (fp32, holding beta * c or 0)
// += alpha * a . b, b packed in K-pairs.
struct GemmBf16PairsArgs {
  const uint16_t* a;  // [m, k] bf16 bit patterns, row stride lda, unit column stride
  int64_t lda;
  const uint16_t* b_pairs;  // [ceil(k / 2)][n][2]: (b[2p][j], b[2p + 1][j]); an odd k's last
                            // pair holds a zero second element
  float* y;
  int64_t ldy;
  int64_t m, n, k;  // n % 16 == 0
  float alpha;
  Epilogue epilogue;
  HostThreads threads;
};
bool gemm_avx512_bf16_compiled();
void gemm_avx512_bf16(const GemmBf16PairsArgs& args);

// fp16 operands on AVX-512 (gemm_avx512.cc): each cache block of a and b is widened exactly to
// fp32 (vcvtph2ps) and runs the fp32 tiles. Same contract as GemmRowMajorArgs otherwise.
struct GemmHalfArgs {
  const uint16_t* a;  // [m, k] fp16 bit patterns, row stride lda, unit column stride
  int64_t lda;
  const uint16_t* b;  // [k, n] fp16 bit patterns, row stride ldb, unit column stride
  int64_t ldb;
  float* y;
  int64_t ldy;
  int64_t m, n, k;  // n % 16 == 0
  float alpha;
  Epilogue epilogue;
  HostThreads threads;
};
void gemm_avx512_fp16(const GemmHalfArgs& args);
// The same for bf16 operands (a bf16 widens by a 16-bit shift).
void gemm_avx512_bf16_widened(const GemmHalfArgs& args);

bool gemm_avx512_compiled();
void gemm_avx512(const GemmRowMajorArgs& args);
// The same tiles on AVX2 + FMA (n % 8 == 0), gemm_avx2.cc.
bool gemm_avx2_compiled();
void gemm_avx2(const GemmRowMajorArgs& args);

}  // namespace kaas::simd
