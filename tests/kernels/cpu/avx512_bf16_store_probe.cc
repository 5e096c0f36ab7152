// The roundings of kernels/cpu/avx512_bf16_store.h on 16 lanes, for test_avx512_bf16_store.cc.
// Compiled with the AVX512-BF16 kernels' flags; no standard-library templates here (an AVX-512
// copy of a shared COMDAT function must never be the one other translation units call).

#include "tests/kernels/cpu/avx512_bf16_store_probe.h"

#if defined(__AVX512F__) && defined(__AVX512BF16__) && defined(__AVX512DQ__)
#include "kaas/kernels/cpu/avx512_bf16_store.h"

namespace kaas::testing {

bool avx512_bf16_store_probe_compiled() {
  return true;
}

void avx512_bf16_store_probe(const float* lanes, uint16_t* integer, uint16_t* converting) {
  const __m512 v = _mm512_loadu_ps(lanes);
  simd::store_u16_lanes(integer, simd::round_to_bf16(v), 16);
  simd::store_u16_lanes(converting, simd::round_to_bf16_converting(v), 16);
}

}  // namespace kaas::testing

#else

namespace kaas::testing {

bool avx512_bf16_store_probe_compiled() {
  return false;
}

void avx512_bf16_store_probe(const float*, uint16_t*, uint16_t*) {}

}  // namespace kaas::testing

#endif
