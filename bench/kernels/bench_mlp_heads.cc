// mlp_two_heads (kernels/mlp_heads.h): EmTrkMichelId's classifier tail (Dense 32 ReLU, softmax [3]
// and sigmoid [1] heads) by rows: the cases of cases/mlp_heads_cases.cc per backend. No peer runs
// this kernel's exact operation.

#include "bench/kernels/case_bench.h"
#include "bench/registry.h"

namespace kaas::bench {
namespace {

void register_mlp_heads() {
  register_kernel_cases("mlp_heads");
}

KAAS_BENCHMARKS(register_mlp_heads);

}  // namespace
}  // namespace kaas::bench
