// exclusive_scan (kernels/scan.h): the cases of cases/scan_cases.cc per backend, with
// std::exclusive_scan (one thread) as the peer of the int64 scans.

#include <benchmark/benchmark.h>

#include <numeric>
#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/scan_cases.h"

namespace kaas::bench {
namespace {

void scan_std_exclusive_scan(benchmark::State& state, int64_t n) {
  const std::vector<int64_t> x = cases::scan_inputs<int64_t>(n);
  std::vector<int64_t> y(static_cast<size_t>(n));
  for (auto _ : state) {
    std::exclusive_scan(x.begin(), x.end(), y.begin(), int64_t{0});
    benchmark::DoNotOptimize(y.data());
  }
  set_bandwidth(state, 16.0 * double(n));
}

void register_scan() {
  register_kernel_cases("scan");
  for (const cases::ScanCase& c : cases::scan_shapes()) {
    if (c.type != cases::ScanType::kInt64) continue;
    benchmark::RegisterBenchmark(
        ("exclusive_scan_i64/peer_std_exclusive_scan/" + std::to_string(c.n)).c_str(),
        scan_std_exclusive_scan, c.n)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

KAAS_BENCHMARKS(register_scan);

}  // namespace
}  // namespace kaas::bench
