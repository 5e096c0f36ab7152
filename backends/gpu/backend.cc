// Runtime side of the CUDA and HIP backends (compiled once by nvcc, once by hipcc).

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/gpu/check.h"

namespace kaas::KAAS_BACKEND_NS {

namespace {

class GpuBackend final : public Backend {
 public:
#if defined(KAAS_BACKEND_CUDA)
  BackendId id() const override {
    return BackendId::kCuda;
  }
  std::string_view name() const override {
    return "cuda";
  }
#else
  BackendId id() const override {
    return BackendId::kHip;
  }
  std::string_view name() const override {
    return "hip";
  }
#endif

  bool available() const override {
    return !probe().devices.empty();
  }
  std::string unavailable_reason() const override {
    return probe().reason;
  }
  std::vector<DeviceInfo> devices() const override {
    return probe().devices;
  }
  bool device_memory_is_host() const override {
    return false;
  }
  LaunchLimits launch_limits(int device) const override {
    const auto& devices = probe().devices;
    if (device < 0 || static_cast<size_t>(device) >= devices.size()) return {};
    const DeviceInfo& info = devices[static_cast<size_t>(device)];
    return {info.max_group_size, info.max_shared_bytes};
  }
  int64_t resident_groups(int device) const override {
    const auto& devices = probe().devices;
    if (device < 0 || static_cast<size_t>(device) >= devices.size()) return 1;
    return 8LL * devices[static_cast<size_t>(device)].compute_units;
  }

  void* create_stream(int device) const override {
    rt::check(rt::set_device(device), "set_device");
    rt::stream_t stream{};
    rt::check(rt::stream_create(&stream), "stream_create");
    return stream;
  }
  void destroy_stream(void* stream) const override {
    (void)rt::stream_destroy(static_cast<rt::stream_t>(stream));
  }
  void synchronize(void* stream) const override {
    rt::check(rt::stream_synchronize(static_cast<rt::stream_t>(stream)), "stream_synchronize");
  }

  void* allocate_device(size_t bytes, int device) const override {
    rt::check(rt::set_device(device), "set_device");
    void* ptr = nullptr;
    const rt::error_t status = rt::malloc_device(&ptr, bytes);
    if (status != rt::kSuccess) {
      throw Error(ErrorCode::kResourceExhausted,
                  std::string(rt::kRuntimeName) + " device allocation of " + std::to_string(bytes) +
                      " bytes failed: " + rt::error_string(status));
    }
    return ptr;
  }
  void free_device(void* ptr) const override {
    (void)rt::free_device(ptr);
  }
  void* allocate_pinned(size_t bytes) const override {
    void* ptr = nullptr;
    const rt::error_t status = rt::malloc_pinned(&ptr, bytes);
    if (status != rt::kSuccess) {
      throw Error(ErrorCode::kResourceExhausted,
                  std::string(rt::kRuntimeName) + " pinned allocation of " + std::to_string(bytes) +
                      " bytes failed: " + rt::error_string(status));
    }
    return ptr;
  }
  void free_pinned(void* ptr) const override {
    (void)rt::free_pinned(ptr);
  }
  void copy(void* dst, const void* src, size_t bytes, CopyKind kind, void* stream) const override {
    auto s = static_cast<rt::stream_t>(stream);
    switch (kind) {
      case CopyKind::kHostToDevice:
        return rt::check(rt::memcpy_h2d(dst, src, bytes, s), "memcpy host to device");
      case CopyKind::kDeviceToHost:
        return rt::check(rt::memcpy_d2h(dst, src, bytes, s), "memcpy device to host");
      case CopyKind::kDeviceToDevice:
        return rt::check(rt::memcpy_d2d(dst, src, bytes, s), "memcpy device to device");
    }
  }

  void* open_ipc_memory(std::span<const std::byte> handle, int device) const override {
    if (handle.size() != rt::kIpcHandleBytes)
      throw Error(ErrorCode::kInvalidArgument, std::string(rt::kRuntimeName) + " IPC handle of " +
                                                   std::to_string(handle.size()) +
                                                   " bytes, expected " +
                                                   std::to_string(rt::kIpcHandleBytes));
    rt::check(rt::set_device(device), "set_device");
    void* ptr = nullptr;
    rt::check(rt::ipc_open(&ptr, handle.data()), "open IPC memory handle");
    return ptr;
  }
  void close_ipc_memory(void* ptr) const override {
    (void)rt::ipc_close(ptr);
  }

  void* create_event() const override {
    rt::event_t event{};
    rt::check(rt::event_create(&event), "event_create");
    return event;
  }
  void destroy_event(void* event) const override {
    (void)rt::event_destroy(static_cast<rt::event_t>(event));
  }
  void record_event(void* event, void* stream) const override {
    rt::check(rt::event_record(static_cast<rt::event_t>(event), static_cast<rt::stream_t>(stream)),
              "event_record");
  }
  void wait_event(void* event) const override {
    rt::check(rt::event_synchronize(static_cast<rt::event_t>(event)), "event_synchronize");
  }
  double elapsed_ms(void* start, void* stop) const override {
    float ms = 0;
    rt::check(
        rt::event_elapsed_ms(&ms, static_cast<rt::event_t>(start), static_cast<rt::event_t>(stop)),
        "event_elapsed_time");
    return ms;
  }

 private:
  struct Probe {
    std::vector<DeviceInfo> devices;
    std::string reason;
  };

  // Asks the runtime once; a machine without a GPU or driver gets the runtime's own reason.
  const Probe& probe() const {
    std::call_once(probed_, [this] {
      int count = 0;
      const rt::error_t status = rt::device_count(&count);
      if (status != rt::kSuccess || count == 0) {
        probe_.reason = std::string("no ") + rt::kRuntimeName + " device: " +
                        (status != rt::kSuccess ? rt::error_string(status) : "device count is 0");
        (void)rt::get_last_error();  // clear the sticky status
        return;
      }
      for (int d = 0; d < count; ++d) {
        rt::device_prop_t prop{};
        if (rt::device_properties(&prop, d) != rt::kSuccess) continue;
        DeviceInfo info;
        info.name = prop.name;
        const char* arch = rt::arch_name(prop);
        info.details = arch ? std::string(arch)
                            : "sm_" + std::to_string(prop.major) + std::to_string(prop.minor);
        info.max_group_size = prop.maxThreadsPerBlock;
        info.max_shared_bytes = prop.sharedMemPerBlock;
        info.compute_units = prop.multiProcessorCount;
        info.memory_bytes = prop.totalGlobalMem;
        probe_.devices.push_back(std::move(info));
      }
    });
    return probe_;
  }

  mutable std::once_flag probed_;
  mutable Probe probe_;
};

}  // namespace

const Backend& backend_instance() {
  static const GpuBackend instance;
  return instance;
}

}  // namespace kaas::KAAS_BACKEND_NS
