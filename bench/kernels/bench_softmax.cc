// softmax / log-softmax on the classifier head and on long lines, and the standalone activations
// (kernels/softmax.h): the cases of cases/softmax_cases.cc per backend. No peer runs this kernel's
// exact operation.

#include "bench/kernels/case_bench.h"
#include "bench/registry.h"

namespace kaas::bench {
namespace {

void register_softmax() {
  register_kernel_cases("softmax");
}

KAAS_BENCHMARKS(register_softmax);

}  // namespace
}  // namespace kaas::bench
