#include "kaas/backends/cpu/host_backend.h"

#include <chrono>
#include <cstring>

#include "kaas/backends/buffer.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/backends/cpu/cpu_info.h"
#include "kaas/build_config.h"

namespace kaas {

namespace {
using Clock = std::chrono::steady_clock;
}

namespace {

// Whether this CPU runs code built for KAAS_CPU_ARCH (checked before any kernel runs).
bool cpu_supports_build_arch() {
#if defined(__x86_64__)
  const std::string_view arch = KAAS_CPU_ARCH;
  if (arch == "x86-64-v3" || arch == "x86-64-v4") {
    const CpuFeatures& f = detected_cpu_features();
    const bool v3 = f.avx && f.avx2 && f.fma && f.bmi1 && f.bmi2 && f.f16c;
    if (arch == "x86-64-v3") return v3;
    return v3 && f.avx512f && f.avx512bw && f.avx512vl && f.avx512dq;
  }
#endif
  return true;
}

}  // namespace

bool HostBackend::available() const {
  static const bool supported = cpu_supports_build_arch();
  return supported;
}

std::string HostBackend::unavailable_reason() const {
  if (available()) return {};
  return std::string("this CPU lacks the instruction set the kernels were built for (-march=") +
         KAAS_CPU_ARCH + "); rebuild with -DKAAS_CPU_ARCH=x86-64";
}

std::vector<DeviceInfo> HostBackend::devices() const {
  const CpuInfo& cpu = host_cpu_info();
  DeviceInfo info;
  info.name = cpu.model;
  info.details =
      "ISA: " + cpu.isa + "; kernels built for " +
      (std::string_view(KAAS_CPU_ARCH).empty() ? std::string("the default ISA")
                                               : std::string("-march=") + KAAS_CPU_ARCH) +
      "; " + execution_details();
  const LaunchLimits limits = launch_limits(0);
  info.max_group_size = limits.max_group_size;
  info.max_shared_bytes = limits.max_shared_bytes;
  info.compute_units = cpu.hardware_threads;
  info.memory_bytes = cpu.memory_bytes;
  return {info};
}

void* HostBackend::allocate_device(size_t bytes, int) const {
  return detail::allocate_host(bytes);
}
void HostBackend::free_device(void* ptr) const {
  detail::free_host(ptr);
}
void* HostBackend::allocate_pinned(size_t bytes) const {
  return detail::allocate_host(bytes);
}
void HostBackend::free_pinned(void* ptr) const {
  detail::free_host(ptr);
}

void HostBackend::copy(void* dst, const void* src, size_t bytes, CopyKind, void*) const {
  if (bytes > 0) std::memmove(dst, src, bytes);
}

void* HostBackend::create_event() const {
  return new Clock::time_point(Clock::now());
}
void HostBackend::destroy_event(void* event) const {
  delete static_cast<Clock::time_point*>(event);
}
void HostBackend::record_event(void* event, void*) const {
  *static_cast<Clock::time_point*>(event) = Clock::now();
}
double HostBackend::elapsed_ms(void* start, void* stop) const {
  const auto& a = *static_cast<Clock::time_point*>(start);
  const auto& b = *static_cast<Clock::time_point*>(stop);
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace kaas
