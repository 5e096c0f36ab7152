#include <string>

#include "kaas/backends/cpu/host_backend.h"
#include "kaas/backends/cpu/host_team.h"
#include "kaas/backends/cpu/host_threads.h"
#include "kaas/backends/cpu/tbb_team.h"

namespace kaas::tbb {

namespace {

// For frameworks that schedule with oneTBB (CMSSW, art): kernels run as tasks in the caller's
// arena and never start threads of their own, so kaas inside a module shares the framework's
// threads. No OpenMP anywhere in this backend's path.
class TbbBackend final : public HostBackend {
 public:
  BackendId id() const override { return BackendId::kTbb; }
  std::string_view name() const override { return "tbb"; }
  int64_t resident_groups(int) const override { return host::team_size(HostThreads::kTbb); }
  void set_caller_threads(int threads) const override { host::set_thread_request(threads); }
  void set_process_threads(int threads) const override { host::set_process_request(threads); }

 protected:
  std::string execution_details() const override {
    return "groups spread over oneTBB tasks in the caller's arena (now " +
           std::to_string(host::team_size(HostThreads::kTbb)) + " threads, oneTBB " +
           host::tbb_team::version() + ")";
  }
};

}  // namespace

const Backend& backend_instance() {
  static const TbbBackend instance;
  return instance;
}

}  // namespace kaas::tbb
