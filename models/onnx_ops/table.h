#pragma once
// The ONNX op table: every op the importer maps, one line each in KAAS_ONNX_OPS, defined in
// models/onnx_ops/<name>.cc as `const OpDef <name>_op`. The order is the order of the
// supported-op message and docs/models.md's list.

#include <span>
#include <string>
#include <string_view>

#include "kaas/models/onnx_ops/op_def.h"

#define KAAS_ONNX_OPS(X) \
  X(conv)                \
  X(gemm)                \
  X(matmul)              \
  X(add)                 \
  X(activation)          \
  X(softmax)             \
  X(flatten)             \
  X(reshape)             \
  X(transpose)           \
  X(concat)              \
  X(clip)                \
  X(identity)            \
  X(constant)

namespace kaas::models::onnx_import {

#define KAAS_DECLARE_ONNX_OP(name) extern const OpDef name##_op;
KAAS_ONNX_OPS(KAAS_DECLARE_ONNX_OP)
#undef KAAS_DECLARE_ONNX_OP

std::span<const OpDef* const> op_table();

// The op reading ONNX op type `onnx_type`, or nullptr.
const OpDef* find_op(std::string_view onnx_type);

// Every supported ONNX op type in table order: "Conv, Gemm, ..., Constant".
std::string supported_op_types();

}  // namespace kaas::models::onnx_import
