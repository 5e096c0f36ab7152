#include "cases/registry.h"

#include <string>

#include "cases/axpy_cases.h"
#include "cases/conv2d_cases.h"
#include "cases/convert_cases.h"
#include "cases/elementwise_cases.h"
#include "cases/gemm_cases.h"
#include "cases/knn_cases.h"
#include "cases/mlp_heads_cases.h"
#include "cases/patches_cases.h"
#include "cases/reduce_cases.h"
#include "cases/scan_cases.h"
#include "cases/softmax_cases.h"
#include "cases/sparse_conv_dense_cases.h"
#include "kaas/common/error.h"

namespace kaas::cases {

std::span<const KernelCases> kernel_registry() {
  static const KernelCases registry[] = {
      {"axpy", axpy_cases},           {"reduce", reduce_cases},
      {"scan", scan_cases},           {"softmax", softmax_cases},
      {"gemm", gemm_cases},           {"elementwise", elementwise_cases},
      {"mlp_heads", mlp_heads_cases}, {"conv2d", conv2d_cases},
      {"patches", patches_cases},     {"knn", knn_cases},
      {"convert", convert_cases},     {"sparse_conv_dense", sparse_conv_dense_cases},
  };
  return registry;
}

std::vector<Case> cases_of(std::string_view kernel) {
  for (const KernelCases& entry : kernel_registry()) {
    if (entry.kernel == kernel) return entry.cases();
  }
  throw Error(ErrorCode::kNotFound,
              "kernel cases: kernel: expected one of cases/registry.cc, "
              "received " +
                  std::string(kernel));
}

}  // namespace kaas::cases
