// axpy (kernels/axpy.h): the cases of cases/axpy_cases.cc per backend, against a plain OpenMP
// loop compiled here (the floor any portable kernel must reach) and the machine's peaks.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/axpy_cases.h"

namespace kaas::bench {
namespace {

void axpy_plain_loop(benchmark::State& state, int64_t n, float a) {
  const cases::AxpyInputs in = cases::axpy_inputs(n);
  std::vector<float> y = in.y;
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = a * in.x[i] + y[i];
    benchmark::DoNotOptimize(y.data());
  }
  set_bandwidth(state, 12.0 * double(n));
}

void register_axpy() {
  register_kernel_cases("axpy");
  for (const cases::AxpyCase& c : cases::axpy_shapes()) {
    benchmark::RegisterBenchmark(("axpy/peer_plain_openmp_loop/" + std::to_string(c.n)).c_str(),
                                 axpy_plain_loop, c.n, c.a)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

KAAS_BENCHMARKS(register_axpy);

}  // namespace
}  // namespace kaas::bench
