#pragma once
// The machine's measured peaks, the denominators of "fraction of peak" in every benchmark:
// a streaming update a[i] += s * b[i] (bytes/s), an FMA-bound loop (FLOP/s) and a bf16 dot-product
// loop (FLOP/s), all on all OpenMP threads.

namespace kaas::bench {

struct MachinePeaks {
  double bytes_per_second = 0;  // a[i] += s * b[i], 12 bytes per element
  double flops_per_second = 0;  // independent FMA chains, 2 FLOP each
  // independent vdpbf16ps chains, 4 FLOP per lane; 0 where the CPU (or compiler) lacks
  // AVX512-BF16
  double bf16_flops_per_second = 0;
};

// Measured once per process (best of several repetitions).
const MachinePeaks& machine_peaks();

}  // namespace kaas::bench
