#pragma once
// Counters every benchmark reports: throughput and its fraction of the measured machine peak.

#include <benchmark/benchmark.h>

#include "bench/machine_peaks.h"

namespace kaas::bench {

// bytes/s and frac_peak_bw (of the streaming-update peak) from bytes moved per iteration.
inline void set_bandwidth(benchmark::State& state, double bytes_per_iteration) {
  state.SetBytesProcessed(int64_t(bytes_per_iteration * double(state.iterations())));
  state.counters["frac_peak_bw"] = benchmark::Counter(
      bytes_per_iteration / machine_peaks().bytes_per_second,
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// FLOP/s and frac_peak_flops (of the FMA-loop peak) from FLOP per iteration.
inline void set_flops(benchmark::State& state, double flops_per_iteration) {
  state.counters["FLOPs"] =
      benchmark::Counter(flops_per_iteration, benchmark::Counter::kIsIterationInvariantRate,
                         benchmark::Counter::kIs1000);
  state.counters["frac_peak_flops"] = benchmark::Counter(
      flops_per_iteration / machine_peaks().flops_per_second,
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

// frac_peak_bf16: of the bf16 dot-product loop's peak (vdpbf16ps, where the CPU has it), for
// reduced-precision work.
inline void set_bf16_peak_fraction(benchmark::State& state, double flops_per_iteration) {
  if (machine_peaks().bf16_flops_per_second <= 0) return;
  state.counters["frac_peak_bf16"] = benchmark::Counter(
      flops_per_iteration / machine_peaks().bf16_flops_per_second,
      benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
}

}  // namespace kaas::bench
