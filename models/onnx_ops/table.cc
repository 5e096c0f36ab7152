#include "kaas/models/onnx_ops/table.h"

#include <algorithm>

namespace kaas::models::onnx_import {

namespace {

#define KAAS_ONNX_OP_ADDRESS(name) &name##_op,
constexpr const OpDef* kTable[] = {KAAS_ONNX_OPS(KAAS_ONNX_OP_ADDRESS)};
#undef KAAS_ONNX_OP_ADDRESS

}  // namespace

std::span<const OpDef* const> op_table() {
  return kTable;
}

const OpDef* find_op(std::string_view onnx_type) {
  for (const OpDef* def : kTable) {
    const auto& types = def->onnx_types;
    if (std::find(types.begin(), types.end(), onnx_type) != types.end()) return def;
  }
  return nullptr;
}

std::string supported_op_types() {
  std::string list;
  for (const OpDef* def : kTable) {
    for (std::string_view type : def->onnx_types)
      list.append(list.empty() ? "" : ", ").append(type);
  }
  return list;
}

}  // namespace kaas::models::onnx_import
