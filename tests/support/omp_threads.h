#pragma once
// Sets the calling thread's OpenMP thread count for a scope (a no-op built without OpenMP).

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kaas::testing {

#if defined(_OPENMP)
constexpr bool kOpenmpCompiled = true;
class OmpThreadsForTest {
 public:
  explicit OmpThreadsForTest(int threads) : saved_(omp_get_max_threads()) {
    omp_set_num_threads(threads);
  }
  ~OmpThreadsForTest() { omp_set_num_threads(saved_); }
  OmpThreadsForTest(const OmpThreadsForTest&) = delete;
  OmpThreadsForTest& operator=(const OmpThreadsForTest&) = delete;

 private:
  int saved_;
};
#else
constexpr bool kOpenmpCompiled = false;
struct OmpThreadsForTest {
  explicit OmpThreadsForTest(int) {}
};
#endif

}  // namespace kaas::testing
