#include <omp.h>

#include "kaas/backends/cpu/host_backend.h"
#include "kaas/backends/cpu/openmp_threads.h"

namespace kaas::openmp {

namespace {

class OpenmpBackend final : public HostBackend {
 public:
  BackendId id() const override { return BackendId::kOpenmp; }
  std::string_view name() const override { return "openmp"; }
  // One group per caller thread keeps a static schedule balanced; inside a parallel region a
  // launch runs on the calling thread alone.
  int64_t resident_groups(int) const override { return omp_in_parallel() ? 1 : requested_team(); }
  void set_caller_threads(int threads) const override { set_thread_request(threads); }
  void set_process_threads(int threads) const override { set_process_request(threads); }

 protected:
  std::string execution_details() const override {
    return "groups spread over the caller's OpenMP threads (now " +
           std::to_string(requested_team()) + ", OpenMP " + std::to_string(_OPENMP) + ")";
  }
};

}  // namespace

const Backend& backend_instance() {
  static const OpenmpBackend instance;
  return instance;
}

}  // namespace kaas::openmp
