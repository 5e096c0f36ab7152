#pragma once
// What the host CPU is: model name, vector ISA extensions, core count, memory, L2 cache.

#include <cstddef>
#include <string>

namespace kaas {

struct CpuInfo {
  std::string model;  // /proc/cpuinfo "model name", or the architecture if unknown
  std::string isa;    // e.g. "sse4.2 avx avx2 fma avx512f"
  int hardware_threads = 0;
  size_t memory_bytes = 0;
  // One core's L2 (unified) cache: sysconf, else sysfs; 0 where neither says.
  size_t l2_cache_bytes = 0;
};

const CpuInfo& host_cpu_info();

}  // namespace kaas
