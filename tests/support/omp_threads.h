#pragma once
// Sets the calling thread's CPU thread count for a scope: OpenMP's own (a no-op built without
// OpenMP) and kaas's request (host_threads.h), which the tbb backend's teams follow.

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "kaas/backends/backend_traits.h"
#include "kaas/backends/cpu/host_threads.h"

namespace kaas::testing {

#if defined(_OPENMP)
constexpr bool kOpenmpCompiled = true;
#else
constexpr bool kOpenmpCompiled = false;
#endif

class OmpThreadsForTest {
 public:
  explicit OmpThreadsForTest(int threads) {
#if defined(_OPENMP)
    saved_ = omp_get_max_threads();
    omp_set_num_threads(threads);
#endif
    host::set_thread_request(threads);
  }
  ~OmpThreadsForTest() {
#if defined(_OPENMP)
    omp_set_num_threads(saved_);
#endif
    host::set_thread_request(0);
  }
  OmpThreadsForTest(const OmpThreadsForTest&) = delete;
  OmpThreadsForTest& operator=(const OmpThreadsForTest&) = delete;

 private:
  [[maybe_unused]] int saved_ = 1;
};

// Whether a backend's parallel work can run on more than one thread in this build.
inline bool runs_parallel(const Backend& backend) {
  switch (traits_of(backend.id()).threads) {
    case HostThreads::kOpenmp:
      return kOpenmpCompiled;
    case HostThreads::kTbb:
      return true;
    case HostThreads::kCaller:
      return false;
  }
  return false;
}

}  // namespace kaas::testing
