#include "bench/machine_peaks.h"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
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

double fma_flops_per_second() {
  // 128 floats: 8 zmm (16 ymm) accumulator chains, enough to hide the FMA latency with two FMA
  // pipes (64 left AVX-512 CPUs latency-bound at half their peak).
  constexpr int kChains = 128;
  const long iterations = 200'000'000;  // ~50 ms per repeat: long enough for clocks to settle
  double best = 0;
  for (int repeat = 0; repeat < 3; ++repeat) {
    float sink = 0;
    const auto start = Clock::now();
#pragma omp parallel reduction(+ : sink)
    {
      float acc[kChains];
      for (int k = 0; k < kChains; ++k) acc[k] = float(k) * 1e-3f;
      const float m = 0.999999f, add = 1e-7f;
      for (long i = 0; i < iterations / kChains; ++i) {
#pragma omp simd
        for (int k = 0; k < kChains; ++k) acc[k] = acc[k] * m + add;
      }
      for (int k = 0; k < kChains; ++k) sink += acc[k];
    }
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    const double flops = 2.0 * double(iterations / kChains) * kChains * omp_get_max_threads();
    best = std::max(best, flops / seconds);
    if (sink == 12345.0f) std::fprintf(stderr, " ");  // keeps the loop alive
  }
  return best;
}

}  // namespace

const MachinePeaks& machine_peaks() {
  static const MachinePeaks peaks{stream_update_bytes_per_second(), fma_flops_per_second()};
  return peaks;
}

}  // namespace kaas::bench
