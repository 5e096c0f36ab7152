#pragma once
// Each kernel's implementation tables as data (kernels/impl_table.h), gathered by impl_tables().

#include <vector>

#include "kaas/kernels/impl_table.h"

namespace kaas {

std::vector<ImplTableInfo> gemm_impl_tables();
std::vector<ImplTableInfo> conv2d_impl_tables();
std::vector<ImplTableInfo> sparse_impl_tables();
std::vector<ImplTableInfo> knn_impl_tables();

}  // namespace kaas
