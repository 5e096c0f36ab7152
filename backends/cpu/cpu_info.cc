#include "kaas/backends/cpu/cpu_info.h"

#include "kaas/backends/cpu/cpu_features.h"

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
  const CpuFeatures& f = cpu_features();
  std::string isa;
  const auto add = [&isa](bool present, const char* name) {
    if (!present) return;
    if (!isa.empty()) isa += ' ';
    isa += name;
  };
  add(f.sse42, "sse4.2");
  add(f.avx, "avx");
  add(f.avx2, "avx2");
  add(f.fma, "fma");
  add(f.avx512f, "avx512f");
  add(f.avx512bw, "avx512bw");
  add(f.avx512vl, "avx512vl");
  add(f.avx512vnni, "avx512vnni");
  if (isa.empty()) isa = "baseline";
  // The features the kernels choose by, so a capped run says so.
  if (const std::string cap = cpu_isa_cap(); cap != "avx512_bf16" && cap != "all")
    isa += " (KAAS_MAX_CPU_ISA=" + cap + ")";
  return isa;
}

size_t read_l2_cache_bytes() {
#ifdef _SC_LEVEL2_CACHE_SIZE
  if (const long bytes = sysconf(_SC_LEVEL2_CACHE_SIZE); bytes > 0) return size_t(bytes);
#endif
  // sysfs writes e.g. "1024K".
  std::ifstream size_file("/sys/devices/system/cpu/cpu0/cache/index2/size");
  size_t value = 0;
  char unit = 0;
  if (!(size_file >> value)) return 0;
  size_file >> unit;
  return unit == 'K' ? value << 10 : unit == 'M' ? value << 20 : value;
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
    i.l2_cache_bytes = read_l2_cache_bytes();
    return i;
  }();
  return info;
}

}  // namespace kaas
