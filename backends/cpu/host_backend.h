#pragma once
// Common runtime of the CPU backends: device memory is host memory, queues are blocking (no
// stream), events are steady-clock time stamps.

#include "kaas/backends/backend.h"

namespace kaas {

class HostBackend : public Backend {
 public:
  // False when this CPU lacks the instruction set the kernels were compiled for (KAAS_CPU_ARCH).
  bool available() const override;
  std::string unavailable_reason() const override;
  std::vector<DeviceInfo> devices() const override;
  bool device_memory_is_host() const override { return true; }
  // The same limits as a GPU block, so a kernel that launches here also launches there.
  LaunchLimits launch_limits(int) const override { return {1024, 48 * 1024}; }

  void* create_stream(int) const override { return nullptr; }
  void destroy_stream(void*) const override {}
  void synchronize(void*) const override {}

  void* allocate_device(size_t bytes, int device) const override;
  void free_device(void* ptr) const override;
  void* allocate_pinned(size_t bytes) const override;
  void free_pinned(void* ptr) const override;
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind, void* stream) const override;

  void* create_event() const override;
  void destroy_event(void* event) const override;
  void record_event(void* event, void* stream) const override;
  void wait_event(void*) const override {}
  double elapsed_ms(void* start, void* stop) const override;

 protected:
  // One line about how this backend runs groups ("1 thread", "OpenMP, 8 threads").
  virtual std::string execution_details() const = 0;
};

}  // namespace kaas
