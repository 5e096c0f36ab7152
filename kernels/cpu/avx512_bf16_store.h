#pragma once
// Rounding fp32 lanes to bf16 bit patterns for the AVX-512 CPU fast paths: the integer rounding
// of math::portable::float_to_bf16 (nearest even, NaN kept quiet), lane-wise with AVX-512 F/BW
// only (the AVX512-BF16 conversion flushes subnormal inputs, which the oracle does not), and with
// that conversion where it is compiled in. Include only from translation units compiled with
// AVX-512 flags.

#include <immintrin.h>

#include <cstdint>

namespace kaas::simd {

// The first `lanes` of v (all 16 when lanes >= 16) at dst.
[[gnu::always_inline]] inline void store_u16_lanes(uint16_t* dst, __m256i v, int64_t lanes) {
  if (lanes >= 16) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), v);
  } else if (lanes > 0) {
    _mm256_mask_storeu_epi16(dst, static_cast<__mmask16>((1u << lanes) - 1u), v);
  }
}

[[gnu::always_inline]] inline __m256i round_to_bf16(__m512 v) {
  // The maskz forms (all lanes): GCC 12 reports the unmasked intrinsics' internal
  // _mm512_undefined_* as uninitialised.
  constexpr __mmask16 all = 0xffff;
  const __m512i u = _mm512_castps_si512(v);
  const __m512i high = _mm512_maskz_srli_epi32(all, u, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i sum = _mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff)));
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  const __m512i r = _mm512_mask_mov_epi32(_mm512_maskz_srli_epi32(all, sum, 16), nan,
                                          _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
  return _mm512_maskz_cvtepi32_epi16(all, r);
}

#if defined(__AVX512BF16__)
// The same bits with vcvtneps2bf16 (4x fewer instructions: the bf16 conv's stores were ~20 % of
// its time on a Zen 4). The instruction rounds to nearest even and quiets NaNs as the integer
// form does, but reads subnormal inputs as zero; a vector holding one takes the integer form.
[[gnu::always_inline]] inline __m256i round_to_bf16_converting(__m512 v) {
  constexpr int kSubnormal = 0x20;  // vfpclassps category
  if (_mm512_fpclass_ps_mask(v, kSubnormal) != 0) [[unlikely]]
    return round_to_bf16(v);
  return (__m256i)_mm512_cvtneps_pbh(v);
}
#endif

}  // namespace kaas::simd
