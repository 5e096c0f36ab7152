#pragma once
// Registers the cases of a kernel (cases/registry.h) as benchmarks: every case on every
// available backend (the emulated GPU is a test device and is not benchmarked) with every
// implementation it offers there, named by the case ("axpy/{backend}/65536" ->
// axpy/openmp/65536/real_time), with bytes/s, FLOP/s, their fractions of the machine's peaks and
// the case's own rate counter.

#include <benchmark/benchmark.h>

#include <functional>
#include <string_view>

namespace kaas::bench {

using Configure = std::function<void(benchmark::internal::Benchmark*)>;

void register_kernel_cases(std::string_view kernel, const Configure& configure = {});

}  // namespace kaas::bench
