#pragma once
// Both bf16 roundings of kernels/cpu/avx512_bf16_store.h on 16 lanes, compiled in a translation
// unit of their own with the AVX512-BF16 flags. Call only on a CPU with AVX512-BF16.

#include <cstdint>

namespace kaas::testing {

bool avx512_bf16_store_probe_compiled();
// lanes[16] -> the integer form's bits and the vcvtneps2bf16 form's bits.
void avx512_bf16_store_probe(const float* lanes, uint16_t* integer, uint16_t* converting);

}  // namespace kaas::testing
