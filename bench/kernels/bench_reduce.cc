// reduce_rows / reduce_all (kernels/reduce.h): the cases of cases/reduce_cases.cc per backend,
// with a plain OpenMP reduction loop as the peer of the whole-vector sums.

#include <benchmark/benchmark.h>

#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/reduce_cases.h"

namespace kaas::bench {
namespace {

void reduce_plain_loop(benchmark::State& state, cases::ReduceCase c) {
  const int64_t n = c.rows * c.cols;
  const std::vector<float> x = cases::reduce_inputs(c);
  for (auto _ : state) {
    float sum = 0;
#pragma omp parallel for simd reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    benchmark::DoNotOptimize(sum);
  }
  set_bandwidth(state, 4.0 * double(n));
}

void register_reduce() {
  register_kernel_cases("reduce");
  for (const cases::ReduceCase& c : cases::reduce_shapes()) {
    if (c.per_row || c.op != ReduceOp::kSum) continue;
    benchmark::RegisterBenchmark(
        ("reduce_all_sum/peer_plain_openmp_loop/" + std::to_string(c.rows * c.cols)).c_str(),
        reduce_plain_loop, c)
        ->UseRealTime()
        ->Unit(benchmark::kMicrosecond);
  }
}

KAAS_BENCHMARKS(register_reduce);

}  // namespace
}  // namespace kaas::bench
