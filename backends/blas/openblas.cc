// OpenBLAS, the OpenMP-threaded build: it runs on the caller's OpenMP threads and single-threaded
// inside a caller's parallel region, like the openmp backend itself (the pthreads build would
// start a thread pool of its own).

#include <cblas.h>

#include <string>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include "kaas/backends/blas/vendor_blas.h"
#include "kaas/backends/cpu/openmp_threads.h"

namespace kaas::blas {

void openblas_sgemm(const SgemmCall& call) {
#if defined(_OPENMP)
  // OpenBLAS sizes its team from the calling thread's OpenMP setting: make it kaas's count.
  const int saved = omp_get_max_threads(), wanted = openmp::requested_team();
  if (wanted != saved) omp_set_num_threads(wanted);
#endif
  cblas_sgemm(CblasRowMajor, call.transpose_a ? CblasTrans : CblasNoTrans,
              call.transpose_b ? CblasTrans : CblasNoTrans, static_cast<blasint>(call.m),
              static_cast<blasint>(call.n), static_cast<blasint>(call.k), call.alpha, call.a,
              static_cast<blasint>(call.lda), call.b, static_cast<blasint>(call.ldb), call.beta,
              call.c, static_cast<blasint>(call.ldc));
#if defined(_OPENMP)
  if (wanted != saved) omp_set_num_threads(saved);
#endif
}

const char* openblas_name() {
  static const std::string name = [] {
    std::string n = openblas_get_config();
    return "OpenBLAS (" + n + ", core " + openblas_get_corename() + ")";
  }();
  return name.c_str();
}

}  // namespace kaas::blas
