// Dropout (inference) and Identity: folded away at import, the output names the input's value.

#include "kaas/models/onnx_ops/table.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace identity_entry {

void check_dropout_is_inference(NodeContext& n, const Op& op) {
  if (op.has_input(2)) {
    const Value& mode = n.value(op.inputs[2]);
    if (!mode.constant)
      unsupported(node_label(op) + ": training_mode must be a constant false for inference");
    const bool on = mode.is_int64 ? (!mode.int_data.empty() && mode.int_data[0] != 0) : false;
    if (on) unsupported(node_label(op) + ": training_mode is true (kaas runs inference)");
  }
  if (n.node().output_size() > 1 && !n.node().output(1).empty() && n.output_used(1))
    unsupported(node_label(op) + ": its mask output is used; kaas runs inference only");
}

bool parse(NodeContext& n, Op& op) {
  if (op.op_type == "Dropout") {
    n.allow_attributes({"ratio", "seed", "is_test"});
    check_dropout_is_inference(n, op);
  } else {
    n.allow_attributes({});
  }
  n.alias_output(op.inputs.empty() ? -1 : op.inputs[0]);  // inference: the output is the input
  n.log("removed " + op.op_type + " " + op.node);
  return false;
}

constexpr std::string_view kTypes[] = {"Dropout", "Identity"};
constexpr NodeTests kTests[] = {{"node", "test_identity", true},
                                {"node", "test_dropout_default", true}};

}  // namespace identity_entry

const OpDef identity_op{.onnx_types = identity_entry::kTypes,
                        .parse = identity_entry::parse,
                        .node_tests = identity_entry::kTests};

}  // namespace kaas::models::onnx_import
