// Strided copies and broadcasting Add (kernels/elementwise.h): the cases of
// cases/elementwise_cases.cc per backend, with a plain OpenMP loop as the peer of the
// same-shape Add.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/elementwise_cases.h"
#include "cases/reference.h"

namespace kaas::bench {
namespace {

void add_plain_loop(benchmark::State& state, int64_t n) {
  const auto a = cases::random_floats(size_t(n), 3), b = cases::random_floats(size_t(n), 4);
  std::vector<float> y(static_cast<size_t>(n));
  for (auto _ : state) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
    benchmark::DoNotOptimize(y.data());
  }
  set_bandwidth(state, 12.0 * double(n));
}

void register_elementwise() {
  register_kernel_cases("elementwise");
  for (const cases::ElementwiseCase& c : cases::elementwise_shapes()) {
    if (c.copy || c.a.size() != 1 || c.a != c.b) continue;
    const std::string n = std::to_string(c.a[0]);
    benchmark::RegisterBenchmark(("binary_add_" + n + "_" + n + "/peer_plain_openmp_loop").c_str(),
                                 add_plain_loop, c.a[0])
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

KAAS_BENCHMARKS(register_elementwise);

}  // namespace
}  // namespace kaas::bench
