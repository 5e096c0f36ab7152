#pragma once
// The fused activations (kernels/activation.h) on 16 floats at once, for the AVX-512 CPU fast
// paths (conv2d, gemm). Include only from translation units compiled with AVX-512 flags.

#include <immintrin.h>

#include "kaas/kernels/activation.h"

namespace kaas::simd {

[[gnu::always_inline]] inline __m512 activate_avx512(__m512 v, const Epilogue& e) {
  switch (e.activation) {
    case Activation::kRelu:
      // NaN and -0 give +0, as apply(). The zero-masked form: GCC 12 warns that the unmasked
      // one's undefined pass-through value "may be used uninitialized".
      return _mm512_maskz_max_ps(static_cast<__mmask16>(0xFFFF), v, _mm512_setzero_ps());
    case Activation::kLeakyRelu: {
      const __mmask16 keep = _mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ);
      return _mm512_mask_blend_ps(keep, _mm512_mul_ps(v, _mm512_set1_ps(e.alpha)), v);
    }
    case Activation::kSigmoid: {
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, v);
      for (float& x : lanes) x = apply(e, x);
      return _mm512_load_ps(lanes);
    }
    case Activation::kNone:
      break;
  }
  return v;
}

}  // namespace kaas::simd
