// Constant (tensor 'value' form): folded away at import into a constant value.

#include "kaas/models/onnx_ops/table.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace constant_entry {

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"value"});
  const auto* a = n.find("value");
  if (!a || a->type() != onnx::AttributeProto::TENSOR)
    unsupported(node_label(op) + ": only the tensor 'value' form is supported");
  n.define_output(tensor_value(a->t(), n.node().output(0)));
  return false;
}

constexpr std::string_view kTypes[] = {"Constant"};
constexpr NodeTests kTests[] = {{"node", "test_constant"}};

}  // namespace constant_entry

const OpDef constant_op{.onnx_types = constant_entry::kTypes,
                        .parse = constant_entry::parse,
                        .node_tests = constant_entry::kTests};

}  // namespace kaas::models::onnx_import
