#include "kaas/backends/cpu/openmp_threads.h"

#include <algorithm>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace kaas::openmp {

int requested_team() {
  if (const int request = host::explicit_request(); request > 0) return request;
#if defined(_OPENMP)
  return std::max(omp_get_max_threads(), 1);
#else
  return 1;
#endif
}

}  // namespace kaas::openmp
