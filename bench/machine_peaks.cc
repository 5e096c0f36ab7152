#include "bench/machine_peaks.h"

#include "kaas/backends/cpu/cpu_features.h"

#include <omp.h>

#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <vector>

namespace kaas::bench {

namespace {

using Clock = std::chrono::steady_clock;

// a[i] += s * b[i]: two reads and one write per element, and no write-allocate traffic
// (a is read anyway), so the 12 counted bytes are the bytes that move.
double stream_update_bytes_per_second() {
  const size_t n = size_t(1) << 25;  // 2 x 128 MiB: far beyond the caches
  std::vector<float> a(n), b(n, 1.0f);
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; ++i) a[i] = 0.0f;  // first touch by the threads that stream it
  double best = 0;
  for (int repeat = 0; repeat < 6; ++repeat) {
    const auto start = Clock::now();
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; ++i) a[i] += 0.5f * b[i];
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    best = std::max(best, 12.0 * double(n) / seconds);
  }
  if (a[n / 2] != 3.0f) std::fprintf(stderr, "stream update: wrong result\n");
  return best;
}

// 12 independent FMA chains of the widest vector, as named variables so they stay in registers
// (an array of 16 ymm chains spilled three of them on AVX2, and a Zen 3 then measured 93 GFLOP/s,
// below its own GEMM's rate): enough to hide the FMA latency on two pipes.
#if defined(__AVX512F__)
using Vector = __m512;
constexpr int kVectorLanes = 16;
Vector splat(float x) {
  return _mm512_set1_ps(x);
}
Vector fmadd(Vector a, Vector b, Vector c) {
  return _mm512_fmadd_ps(a, b, c);
}
#elif defined(__AVX2__) && defined(__FMA__)
using Vector = __m256;
constexpr int kVectorLanes = 8;
Vector splat(float x) {
  return _mm256_set1_ps(x);
}
Vector fmadd(Vector a, Vector b, Vector c) {
  return _mm256_fmadd_ps(a, b, c);
}
#endif

#if defined(__AVX2__) && defined(__FMA__)
float lane_sum(Vector v) {
  float lanes[kVectorLanes];
  std::memcpy(lanes, &v, sizeof v);
  float total = 0;
  for (float x : lanes) total += x;
  return total;
}

constexpr int kChainLanes = 12 * kVectorLanes;

float fma_chains(long iterations) {
  const auto start = [](int chain) { return splat(1e-3f * float(chain)); };
  Vector a0 = start(0), a1 = start(1), a2 = start(2), a3 = start(3), a4 = start(4), a5 = start(5),
         a6 = start(6), a7 = start(7), a8 = start(8), a9 = start(9), a10 = start(10),
         a11 = start(11);
  const Vector m = splat(0.999999f), add = splat(1e-7f);
  for (long i = 0; i < iterations; ++i) {
    a0 = fmadd(a0, m, add), a1 = fmadd(a1, m, add), a2 = fmadd(a2, m, add);
    a3 = fmadd(a3, m, add), a4 = fmadd(a4, m, add), a5 = fmadd(a5, m, add);
    a6 = fmadd(a6, m, add), a7 = fmadd(a7, m, add), a8 = fmadd(a8, m, add);
    a9 = fmadd(a9, m, add), a10 = fmadd(a10, m, add), a11 = fmadd(a11, m, add);
  }
  return lane_sum(a0) + lane_sum(a1) + lane_sum(a2) + lane_sum(a3) + lane_sum(a4) + lane_sum(a5) +
         lane_sum(a6) + lane_sum(a7) + lane_sum(a8) + lane_sum(a9) + lane_sum(a10) + lane_sum(a11);
}
#else
constexpr int kChainLanes = 128;

float fma_chains(long iterations) {
  float acc[kChainLanes];
  for (int k = 0; k < kChainLanes; ++k) acc[k] = float(k) * 1e-3f;
  const float m = 0.999999f, add = 1e-7f;
  for (long i = 0; i < iterations; ++i) {
#pragma omp simd
    for (int k = 0; k < kChainLanes; ++k) acc[k] = acc[k] * m + add;
  }
  float total = 0;
  for (float x : acc) total += x;
  return total;
}
#endif

double fma_flops_per_second() {
  const long iterations = 200'000'000 / kChainLanes;  // ~50 ms per repeat: clocks settle
  double best = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    float sink = 0;
    const auto start = Clock::now();
#pragma omp parallel reduction(+ : sink)
    sink += fma_chains(iterations);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double flops = 2.0 * double(iterations) * kChainLanes * omp_get_max_threads();
    best = std::max(best, flops / seconds);
    if (sink == 12345.0f) std::fprintf(stderr, " ");  // keeps the loop alive
  }
  return best;
}

#if defined(__AVX512BF16__)
// 12 zmm accumulators of vdpbf16ps (each 16 lanes x 2 products x 2 FLOP), as named variables so
// they stay in registers. Each starts from its own value: equal chains are one chain to the
// compiler (it kept one vdpbf16ps per iteration, so this measured the latency, ~1.8x above the
// peak on a Zen 4).
float bf16_dot_chains(long iterations) {
  const auto start = [](int chain) { return _mm512_set1_ps(0.1f + 0.01f * float(chain)); };
  __m512 a0 = start(0), a1 = start(1), a2 = start(2), a3 = start(3), a4 = start(4), a5 = start(5),
         a6 = start(6), a7 = start(7), a8 = start(8), a9 = start(9), a10 = start(10),
         a11 = start(11);
  const __m512bh x = (__m512bh)_mm512_set1_epi32(0x3f803f80);  // (1, 1) in bf16
  for (long i = 0; i < iterations; ++i) {
    a0 = _mm512_dpbf16_ps(a0, x, x), a1 = _mm512_dpbf16_ps(a1, x, x);
    a2 = _mm512_dpbf16_ps(a2, x, x), a3 = _mm512_dpbf16_ps(a3, x, x);
    a4 = _mm512_dpbf16_ps(a4, x, x), a5 = _mm512_dpbf16_ps(a5, x, x);
    a6 = _mm512_dpbf16_ps(a6, x, x), a7 = _mm512_dpbf16_ps(a7, x, x);
    a8 = _mm512_dpbf16_ps(a8, x, x), a9 = _mm512_dpbf16_ps(a9, x, x);
    a10 = _mm512_dpbf16_ps(a10, x, x), a11 = _mm512_dpbf16_ps(a11, x, x);
  }
  const __m512 sum =
      _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                                  _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7))),
                    _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, sum);
  float total = 0;
  for (float v : lanes) total += v;
  return total;
}

double bf16_flops_per_second() {
  if (!cpu_features().avx512bf16) return 0;
  const long iterations = 20'000'000;
  double best = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    float sink = 0;
    const auto start = Clock::now();
#pragma omp parallel reduction(+ : sink)
    sink += bf16_dot_chains(iterations);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double flops = 12.0 * 64.0 * double(iterations) * omp_get_max_threads();
    best = std::max(best, flops / seconds);
    if (sink == 12345.0f) std::fprintf(stderr, " ");  // keeps the loop alive
  }
  return best;
}
#else
double bf16_flops_per_second() {
  return 0;
}
#endif

}  // namespace

const MachinePeaks& machine_peaks() {
  static const MachinePeaks peaks{stream_update_bytes_per_second(), fma_flops_per_second(),
                                  bf16_flops_per_second()};
  return peaks;
}

}  // namespace kaas::bench
