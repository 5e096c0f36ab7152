#include "bench/kernels/case_bench.h"

#include <memory>
#include <string>

#include "bench/counters.h"
#include "cases/registry.h"
#include "kaas/backends/backend_traits.h"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kaas::bench {
namespace {

void run_case(benchmark::State& state, const Backend* backend, const cases::Case& c,
              const std::string& impl) {
  Queue queue(*backend);
  cases::RunOptions options;
  options.impl = impl;
  std::unique_ptr<cases::Instance> instance;
  try {
    instance = c.prepare(queue, options);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  for (auto _ : state) {
    instance->run();
    queue.wait();
  }
  if (c.bytes > 0) set_bandwidth(state, c.bytes);
  if (c.flops > 0) set_flops(state, c.flops);
  if (c.flops > 0 && c.reduced_precision) set_bf16_peak_fraction(state, c.flops);
  if (c.items > 0) {
    state.counters[c.items_name] =
        benchmark::Counter(c.items, benchmark::Counter::kIsIterationInvariantRate);
  }
#if defined(_OPENMP)
  if (traits_of(backend->id()).threads == HostThreads::kOpenmp)
    state.counters["threads"] = omp_get_max_threads();
#endif
  const std::string label = instance->label();
  if (!label.empty()) state.SetLabel(label);
}

}  // namespace

void register_kernel_cases(std::string_view kernel, const Configure& configure) {
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || test_only(backend->id())) continue;
    for (const cases::Case& c : cases::cases_of(kernel)) {
      for (const std::string& impl : c.impls(*backend)) {
        const std::string name = cases::bench_name(c, backend->name(), impl);
        auto* b = benchmark::RegisterBenchmark(name.c_str(), run_case, backend, c, impl);
        // microseconds for what moves less than ~10 MB and computes less than ~100 MFLOP
        const bool small = c.bytes < 1e7 && c.flops < 1e8;
        b->UseRealTime()->Unit(small ? benchmark::kMicrosecond : benchmark::kMillisecond);
        if (configure) configure(b);
      }
    }
  }
}

}  // namespace kaas::bench
