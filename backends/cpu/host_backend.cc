#include "backends/cpu/host_backend.h"

#include <chrono>
#include <cstring>

#include "backends/buffer.h"
#include "backends/cpu/cpu_info.h"

namespace kaas {

namespace {
using Clock = std::chrono::steady_clock;
}

std::vector<DeviceInfo> HostBackend::devices() const {
  const CpuInfo& cpu = host_cpu_info();
  DeviceInfo info;
  info.name = cpu.model;
  info.details = "ISA: " + cpu.isa + "; " + execution_details();
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
