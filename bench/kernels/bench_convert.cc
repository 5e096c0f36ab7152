// convert (kernels/convert.h): the cases of cases/convert_cases.cc per backend, beside the
// CPU's own conversion instructions (F16C vcvtps2ph, AVX512-BF16 vcvtneps2bf16) in an OpenMP
// loop, where the CPU has them.

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/convert_cases.h"
#include "kaas/backends/cpu/cpu_features.h"

namespace kaas::bench {
namespace {

// One thread's share; the parallel region stays outside the target-attributed functions (clang
// outlines an `omp parallel for` body into a function without the target's ISA).
__attribute__((target("avx2,f16c"))) void to_fp16_f16c(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i + 8 <= n; i += 8) {
    const __m128i h = _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + i), h);
  }
}

__attribute__((target("avx512f,avx512bf16"))) void to_bf16_avx512(const float* x, uint16_t* y,
                                                                  int64_t n) {
  for (int64_t i = 0; i + 16 <= n; i += 16) {
    const __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps(x + i));
    std::memcpy(y + i, &h, sizeof h);
  }
}

// Splits [0, n) into one 16-element-aligned share per OpenMP thread.
template <class Convert>
void convert_in_parallel(const float* x, uint16_t* y, int64_t n, Convert convert) {
#pragma omp parallel
  {
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t share = (n / 16 + threads - 1) / threads * 16;
    const int64_t begin = std::min(n, t * share), end = std::min(n, begin + share);
    convert(x + begin, y + begin, end - begin);
  }
}

void convert_peer(benchmark::State& state, int64_t n, bool bf16) {
  const std::vector<float> x = cases::convert_inputs(n, 29u);
  std::vector<uint16_t> y(static_cast<size_t>(n));
  for (auto _ : state) {
    convert_in_parallel(x.data(), y.data(), n, bf16 ? to_bf16_avx512 : to_fp16_f16c);
    benchmark::DoNotOptimize(y.data());
  }
  set_bandwidth(state, 6.0 * double(n));
}

void register_convert() {
  register_kernel_cases("convert");
  for (int64_t n : {int64_t{1} << 20, int64_t{1} << 24}) {
    if (cpu_features().f16c) {
      benchmark::RegisterBenchmark(
          ("convert_f32_f16/peer_f16c_openmp/" + std::to_string(n)).c_str(), convert_peer, n, false)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    if (cpu_features().avx512bf16) {
      benchmark::RegisterBenchmark(
          ("convert_f32_bf16/peer_avx512bf16_openmp/" + std::to_string(n)).c_str(), convert_peer, n,
          true)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
}

KAAS_BENCHMARKS(register_convert);

}  // namespace
}  // namespace kaas::bench
