// hit -> patch extraction (kernels/patches.h) for one wire plane: downsampling of the whole wire x
// tick image and 48 x 48 patches around every hit, as hits/s and GB/s: the cases of
// cases/patches_cases.cc per backend. No peer runs this kernel's exact operation.

#include "bench/kernels/case_bench.h"
#include "bench/registry.h"

namespace kaas::bench {
namespace {

void register_patches() {
  register_kernel_cases("patches");
}

KAAS_BENCHMARKS(register_patches);

}  // namespace
}  // namespace kaas::bench
