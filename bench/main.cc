// kaas-bench: every kernel x backend x shape with its peers, in one run.

#include <benchmark/benchmark.h>

#include <string>

#include "bench/machine_peaks.h"
#include "bench/registry.h"

namespace kaas::bench {
std::vector<RegisterFunction>& benchmark_registrars() {
  static std::vector<RegisterFunction> registrars;
  return registrars;
}
}  // namespace kaas::bench

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  const auto& peaks = kaas::bench::machine_peaks();
  benchmark::AddCustomContext("peak_stream_update_GBps",
                              std::to_string(peaks.bytes_per_second / 1e9));
  benchmark::AddCustomContext("peak_fma_GFLOPps", std::to_string(peaks.flops_per_second / 1e9));
  benchmark::AddCustomContext("peak_bf16_GFLOPps",
                              std::to_string(peaks.bf16_flops_per_second / 1e9));
  for (auto registrar : kaas::bench::benchmark_registrars()) registrar();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
