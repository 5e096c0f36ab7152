// sparse_conv_dense (kernels/sparse_conv_dense.h): EmTrkMichelId's conv and first dense layer
// over the windows touching charge only: the cases of cases/sparse_conv_dense_cases.cc per backend
// (the dense plan and its peers are in bench/models/bench_emtrk.cc).

#include "bench/kernels/case_bench.h"
#include "bench/registry.h"

namespace kaas::bench {
namespace {

void register_sparse_conv_dense() {
  register_kernel_cases("sparse_conv_dense");
}

KAAS_BENCHMARKS(register_sparse_conv_dense);

}  // namespace
}  // namespace kaas::bench
