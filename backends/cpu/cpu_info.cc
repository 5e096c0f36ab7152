#include "backends/cpu/cpu_info.h"

#include <unistd.h>

#include <fstream>
#include <thread>

namespace kaas {

namespace {

std::string read_cpu_model() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(line.find_first_not_of(" \t", colon + 1));
    }
  }
#if defined(__x86_64__)
  return "x86_64 CPU";
#elif defined(__aarch64__)
  return "aarch64 CPU";
#else
  return "CPU";
#endif
}

std::string read_isa() {
  std::string isa;
#if defined(__x86_64__)
  __builtin_cpu_init();
  const auto add = [&isa](bool present, const char* name) {
    if (!present) return;
    if (!isa.empty()) isa += ' ';
    isa += name;
  };
  add(__builtin_cpu_supports("sse4.2"), "sse4.2");
  add(__builtin_cpu_supports("avx"), "avx");
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bw"), "avx512bw");
  add(__builtin_cpu_supports("avx512vl"), "avx512vl");
  add(__builtin_cpu_supports("avx512vnni"), "avx512vnni");
#elif defined(__aarch64__)
  isa = "neon";
#endif
  return isa.empty() ? "baseline" : isa;
}

}  // namespace

const CpuInfo& host_cpu_info() {
  static const CpuInfo info = [] {
    CpuInfo i;
    i.model = read_cpu_model();
    i.isa = read_isa();
    i.hardware_threads = static_cast<int>(std::thread::hardware_concurrency());
    const long pages = sysconf(_SC_PHYS_PAGES), page_size = sysconf(_SC_PAGE_SIZE);
    i.memory_bytes = pages > 0 && page_size > 0 ? static_cast<size_t>(pages) * page_size : 0;
    return i;
  }();
  return info;
}

}  // namespace kaas
