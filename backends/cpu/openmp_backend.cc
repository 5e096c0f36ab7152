#include <omp.h>

#include "kaas/backends/cpu/host_backend.h"

namespace kaas::openmp {

namespace {

class OpenmpBackend final : public HostBackend {
 public:
  BackendId id() const override { return BackendId::kOpenmp; }
  std::string_view name() const override { return "openmp"; }
  // One group per caller thread keeps a static schedule balanced; inside a parallel region a
  // launch runs on the calling thread alone.
  int64_t resident_groups(int) const override {
    return omp_in_parallel() ? 1 : omp_get_max_threads();
  }
  void set_caller_threads(int threads) const override {
    if (threads > 0) omp_set_num_threads(threads);
  }

 protected:
  std::string execution_details() const override {
    return "groups spread over the caller's OpenMP threads (now " +
           std::to_string(omp_get_max_threads()) + ", OpenMP " + std::to_string(_OPENMP) + ")";
  }
};

}  // namespace

const Backend& backend_instance() {
  static const OpenmpBackend instance;
  return instance;
}

}  // namespace kaas::openmp
