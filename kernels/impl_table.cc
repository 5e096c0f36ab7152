#include "kaas/kernels/impl_table.h"

#include "kaas/backends/backend_traits.h"
#include "kaas/kernels/detail/impl_tables.h"

namespace kaas {

std::string needs_host_simd(const Queue& queue) {
  if (host_simd(queue.backend_id())) return {};
  return "backend " + std::string(queue.backend().name()) +
         " runs no host SIMD code (serial, openmp and tbb do)";
}

std::string compiled_host_simd(const Queue& queue, bool compiled) {
  if (!compiled) return "not compiled into this build (not x86-64, or KAAS_CPU_SIMD_PATHS=OFF)";
  return needs_host_simd(queue);
}

std::string row_unavailable(const ImplRowInfo& row, const Queue& queue) {
  std::string why = isa_tier_unavailable(row.tier);
  if (why.empty()) why = row.backend_unfit(queue);
  return why;
}

std::vector<ImplTableInfo> impl_tables() {
  std::vector<ImplTableInfo> tables;
  for (auto* kernel_tables :
       {gemm_impl_tables, conv2d_impl_tables, sparse_impl_tables, knn_impl_tables}) {
    for (ImplTableInfo& table : kernel_tables()) tables.push_back(std::move(table));
  }
  return tables;
}

IsaTier impl_row_tier(std::string_view choice, std::string_view name) {
  for (const ImplTableInfo& table : impl_tables()) {
    if (table.choice != choice) continue;
    for (const ImplRowInfo& row : table.rows) {
      if (row.name == name) return row.tier;
    }
  }
  throw Error(ErrorCode::kInvalidArgument, "implementation tables: no row '" + std::string(name) +
                                               "' in table '" + std::string(choice) + "'");
}

}  // namespace kaas
