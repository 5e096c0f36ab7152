#include "kaas/backends/blas/vendor_blas.h"

#include <string>

#include "kaas/build_config.h"
#include "kaas/common/error.h"

namespace kaas::blas {

#if KAAS_HAVE_OPENBLAS
void openblas_sgemm(const SgemmCall& call);
const char* openblas_name();
#endif
#if KAAS_HAVE_CUBLAS
void cublas_sgemm(const Queue& queue, const SgemmCall& call);
const char* cublas_name();
#endif

std::string sgemm_unavailable(const Queue& queue) {
  switch (queue.backend_id()) {
    case BackendId::kOpenmp:
      if (KAAS_HAVE_OPENBLAS == 1) return {};
      break;
#if KAAS_HAVE_CUBLAS
    case BackendId::kCuda:
      return cublas_unavailable();
#endif
    default:
      break;
  }
  return "no vendor BLAS on " + std::string(queue.backend().name()) + " in this build";
}

bool has_sgemm(const Queue& queue) {
  return sgemm_unavailable(queue).empty();
}

void sgemm([[maybe_unused]] const Queue& queue, [[maybe_unused]] const SgemmCall& call) {
#if KAAS_HAVE_OPENBLAS
  if (queue.backend_id() == BackendId::kOpenmp) return openblas_sgemm(call);
#endif
#if KAAS_HAVE_CUBLAS
  if (queue.backend_id() == BackendId::kCuda) return cublas_sgemm(queue, call);
#endif
  throw Error(ErrorCode::kUnimplemented, "sgemm: no vendor BLAS for backend '" +
                                             std::string(queue.backend().name()) +
                                             "' in this build");
}

const char* sgemm_name([[maybe_unused]] const Queue& queue) {
#if KAAS_HAVE_OPENBLAS
  if (queue.backend_id() == BackendId::kOpenmp) return openblas_name();
#endif
#if KAAS_HAVE_CUBLAS
  if (queue.backend_id() == BackendId::kCuda) return cublas_name();
#endif
  return "none";
}

}  // namespace kaas::blas
