// Flatten: [d0..d(axis-1), d(axis)..] -> [outer, inner]; no kernel, the output aliases the input.

#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace flatten_entry {

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"axis"});
  n.expect_inputs(1, 1);
  op.attrs = FlattenAttrs{n.i("axis", 1)};
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[op.inputs[0]];
  const int64_t axis =
      normalise_axis(op, op.attr<FlattenAttrs>().axis, static_cast<int64_t>(x.size()), true);
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < x.size(); ++d) (int64_t(d) < axis ? outer : inner) *= x[d];
  return {outer, inner};
}

constexpr std::string_view kTypes[] = {"Flatten"};
constexpr NodeTests kTests[] = {{"node", "test_flatten_", true}};

}  // namespace flatten_entry

const OpDef flatten_op{.onnx_types = flatten_entry::kTypes,
                       .parse = flatten_entry::parse,
                       .shape = flatten_entry::shape,
                       .output_aliases_input = true,
                       .node_tests = flatten_entry::kTests};

}  // namespace kaas::models::onnx_import
