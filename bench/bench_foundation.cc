// Foundation kernels (axpy, reduce_all, exclusive_scan) per backend, against plain C++ loops
// compiled here (the floor any portable kernel must reach) and the machine's measured peaks.
// The emulated GPU is a test device and is not benchmarked.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/registry.h"
#include "kaas/backends/buffer.h"
#include "kaas/kernels/axpy.h"
#include "kaas/kernels/reduce.h"
#include "kaas/kernels/scan.h"

namespace kaas::bench {
namespace {

void axpy_kernel(benchmark::State& state, const Backend* backend) {
  const int64_t n = state.range(0);
  Queue queue(*backend);
  auto x = make_device_buffer<float>(queue, n), y = make_device_buffer<float>(queue, n);
  const std::vector<float> ones(n, 1.0f);
  copy_to_device(queue, std::span<const float>(ones), x);
  copy_to_device(queue, std::span<const float>(ones), y);
  for (auto _ : state) {
    axpy(queue, 1e-6f, x.view(), y.view());
    queue.wait();
  }
  set_bandwidth(state, 12.0 * double(n));
}

void axpy_plain_loop(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> x(n, 1.0f), y(n, 1.0f);
  for (auto _ : state) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) y[i] = 1e-6f * x[i] + y[i];
    benchmark::DoNotOptimize(y.data());
  }
  set_bandwidth(state, 12.0 * double(n));
}

void reduce_kernel(benchmark::State& state, const Backend* backend) {
  const int64_t n = state.range(0);
  Queue queue(*backend);
  auto x = make_device_buffer<float>(queue, n), out = make_device_buffer<float>(queue, 1);
  auto workspace = make_device_buffer<float>(queue, size_t(reduce_all_workspace_size(queue, n)));
  const std::vector<float> ones(n, 1.0f);
  copy_to_device(queue, std::span<const float>(ones), x);
  for (auto _ : state) {
    reduce_all(queue, ReduceOp::kSum, x.view(), out.view(), workspace.view());
    queue.wait();
  }
  set_bandwidth(state, 4.0 * double(n));
}

void reduce_plain_loop(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<float> x(n, 1.0f);
  for (auto _ : state) {
    float sum = 0;
#pragma omp parallel for simd reduction(+ : sum) schedule(static)
    for (int64_t i = 0; i < n; ++i) sum += x[i];
    benchmark::DoNotOptimize(sum);
  }
  set_bandwidth(state, 4.0 * double(n));
}

void scan_kernel(benchmark::State& state, const Backend* backend) {
  const int64_t n = state.range(0);
  Queue queue(*backend);
  auto x = make_device_buffer<int64_t>(queue, n), y = make_device_buffer<int64_t>(queue, n);
  auto workspace =
      make_device_buffer<int64_t>(queue, size_t(exclusive_scan_workspace_size(queue, n)));
  const std::vector<int64_t> ones(n, 1);
  copy_to_device(queue, std::span<const int64_t>(ones), x);
  for (auto _ : state) {
    exclusive_scan<int64_t>(queue, x.view(), y.view(), workspace.view());
    queue.wait();
  }
  set_bandwidth(state, 16.0 * double(n));
}

void scan_std_exclusive_scan(benchmark::State& state) {
  const int64_t n = state.range(0);
  std::vector<int64_t> x(n, 1), y(n);
  for (auto _ : state) {
    std::exclusive_scan(x.begin(), x.end(), y.begin(), int64_t{0});
    benchmark::DoNotOptimize(y.data());
  }
  set_bandwidth(state, 16.0 * double(n));
}

void register_foundation() {
  const std::vector<int64_t> sizes = {1 << 16, 1 << 20, 1 << 24};
  auto with_sizes = [&](benchmark::internal::Benchmark* b) {
    for (int64_t n : sizes) b->Arg(n);
    b->UseRealTime()->Unit(benchmark::kMicrosecond);
  };
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || backend->id() == BackendId::kGpuEmu) continue;
    const std::string name(backend->name());
    with_sizes(benchmark::RegisterBenchmark(("axpy/" + name).c_str(), axpy_kernel, backend));
    with_sizes(
        benchmark::RegisterBenchmark(("reduce_all_sum/" + name).c_str(), reduce_kernel, backend));
    with_sizes(
        benchmark::RegisterBenchmark(("exclusive_scan_i64/" + name).c_str(), scan_kernel, backend));
  }
  with_sizes(benchmark::RegisterBenchmark("axpy/peer_plain_openmp_loop", axpy_plain_loop));
  with_sizes(
      benchmark::RegisterBenchmark("reduce_all_sum/peer_plain_openmp_loop", reduce_plain_loop));
  with_sizes(benchmark::RegisterBenchmark("exclusive_scan_i64/peer_std_exclusive_scan",
                                          scan_std_exclusive_scan));
}

KAAS_BENCHMARKS(register_foundation);

}  // namespace
}  // namespace kaas::bench
