#include "kaas/backends/cpu/host_backend.h"

namespace kaas::gpu_emu {

namespace {

class GpuEmuBackend final : public HostBackend {
 public:
  BackendId id() const override { return BackendId::kGpuEmu; }
  std::string_view name() const override { return "gpu_emu"; }
  // Few groups: every group costs group_size threads taking turns.
  int64_t resident_groups(int) const override { return 4; }

 protected:
  std::string execution_details() const override {
    return "emulated GPU: one CPU thread per element, deterministic turn order (tests only)";
  }
};

}  // namespace

const Backend& backend_instance() {
  static const GpuEmuBackend instance;
  return instance;
}

}  // namespace kaas::gpu_emu
