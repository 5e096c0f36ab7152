#include "kaas/backends/cpu/host_backend.h"

namespace kaas::serial {

namespace {

class SerialBackend final : public HostBackend {
 public:
  BackendId id() const override { return BackendId::kSerial; }
  std::string_view name() const override { return "serial"; }
  int64_t resident_groups(int) const override { return 1; }

 protected:
  std::string execution_details() const override {
    return "groups run in turn on the calling thread";
  }
};

}  // namespace

const Backend& backend_instance() {
  static const SerialBackend instance;
  return instance;
}

}  // namespace kaas::serial
