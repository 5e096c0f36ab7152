#pragma once
// The runtime side of a backend: what it is, whether it can run here, its devices, and the
// memory / stream / event operations the type-erased Queue and buffers forward to. Each
// compiled backend provides one instance; the registry lists them.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "kaas/backends/backend_list.h"

namespace kaas {

#define KAAS_BACKEND_ENUMERATOR(ns, id, ...) id,
enum class BackendId { KAAS_BACKEND_LIST(KAAS_BACKEND_ENUMERATOR) };
#undef KAAS_BACKEND_ENUMERATOR

struct DeviceInfo {
  std::string name;             // "Intel(R) Xeon(R) ...", "NVIDIA H100 80GB HBM3"
  std::string details;          // ISA extensions, OpenMP threads, GPU architecture
  int max_group_size = 0;       // largest group_size a launch accepts
  size_t max_shared_bytes = 0;  // largest dynamic group-shared memory per launch
  int compute_units = 0;        // cores or SMs / CUs
  size_t memory_bytes = 0;      // device memory (host RAM for CPU backends)
};

struct LaunchLimits {
  int max_group_size = 0;
  size_t max_shared_bytes = 0;
};

enum class CopyKind { kHostToDevice, kDeviceToHost, kDeviceToDevice };

class Backend {
 public:
  virtual ~Backend() = default;

  virtual BackendId id() const = 0;
  virtual std::string_view name() const = 0;
  // Whether kernels can run here (a GPU backend without a device is compiled but unavailable).
  virtual bool available() const = 0;
  virtual std::string unavailable_reason() const = 0;
  virtual std::vector<DeviceInfo> devices() const = 0;
  // True when device memory is host memory (CPU backends): copies are plain memcpy.
  virtual bool device_memory_is_host() const = 0;
  // Checked by every launch; cheap (no device query).
  virtual LaunchLimits launch_limits(int device) const = 0;
  // How many groups keep the device busy; launchers cap grid-stride loops with it.
  virtual int64_t resident_groups(int device) const = 0;
  // How many CPU threads kernels called from the calling thread use (threads > 0; 0: back to the
  // process-wide count, else OpenMP's own). Unlike omp_set_num_threads it holds in every kaas
  // region started from this thread, the fused plan's included. A no-op for backends that do not
  // run on the caller's threads.
  virtual void set_caller_threads(int /*threads*/) const {}
  // The same for every thread that has not set its own count (threads > 0; 0: OpenMP's own).
  virtual void set_process_threads(int /*threads*/) const {}

  virtual void* create_stream(int device) const = 0;
  virtual void destroy_stream(void* stream) const = 0;
  virtual void synchronize(void* stream) const = 0;

  virtual void* allocate_device(size_t bytes, int device) const = 0;
  virtual void free_device(void* ptr) const = 0;
  virtual void* allocate_pinned(size_t bytes) const = 0;
  virtual void free_pinned(void* ptr) const = 0;
  virtual void copy(void* dst, const void* src, size_t bytes, CopyKind kind,
                    void* stream) const = 0;

  // Device memory another process exported (cudaIpcGetMemHandle / hipIpcGetMemHandle: the
  // handle's bytes as the exporter wrote them), mapped on `device` until close_ipc_memory. GPU
  // backends only: the others throw kUnimplemented.
  virtual void* open_ipc_memory(std::span<const std::byte> handle, int device) const;
  virtual void close_ipc_memory(void* ptr) const;

  virtual void* create_event() const = 0;
  virtual void destroy_event(void* event) const = 0;
  virtual void record_event(void* event, void* stream) const = 0;
  virtual void wait_event(void* event) const = 0;
  virtual double elapsed_ms(void* start, void* stop) const = 0;
};

// Every backend compiled into this binary, in the order of KAAS_BACKEND_LIST, available or not.
std::span<const Backend* const> compiled_backends();
// Throws kNotFound naming the known backends when `name` is not compiled in.
const Backend& find_backend(std::string_view name);
// "auto": the available backend of highest preference in KAAS_BACKEND_LIST (cuda, hip, openmp, tbb,
// serial; gpu_emu is for tests only).
const Backend& default_backend();
// "auto, serial, openmp, ...": the names --backend accepts in this build, for help texts.
std::string backend_choices();

std::string_view to_string(BackendId id);

// Architectures the GPU backends were compiled for ("80;90", "gfx90a;gfx940"), empty if off.
std::string_view cuda_architectures();
std::string_view hip_architectures();

}  // namespace kaas
