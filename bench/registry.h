#pragma once
// Each bench_*.cc registers its benchmarks with KAAS_BENCHMARKS(function); main() (in
// bench/main.cc) measures the machine peaks first, then calls every registered function, so
// benchmarks can iterate the run-time backend registry.

#include <vector>

namespace kaas::bench {

using RegisterFunction = void (*)();
std::vector<RegisterFunction>& benchmark_registrars();

struct Registrar {
  explicit Registrar(RegisterFunction f) { benchmark_registrars().push_back(f); }
};

}  // namespace kaas::bench

#define KAAS_BENCHMARKS(function) \
  static const ::kaas::bench::Registrar kaas_bench_registrar_##function(function)
