// Reshape to a constant INT64 shape (0 copies the input dimension unless allowzero, one -1 is
// inferred); no kernel, the output aliases the input.

#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace reshape_entry {

struct ReshapeAttrs {
  bool allow_zero = false;
};

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"allowzero"});
  n.expect_inputs(2, 2);
  op.attrs = ReshapeAttrs{n.i("allowzero", 0) != 0};
  if (!n.value(op.inputs[1]).is_int64)
    unsupported(node_label(op) + ": the target shape must be a constant INT64 tensor");
  return true;
}

Shape shape(const Op& op, const Graph& graph, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[op.inputs[0]];
  const std::vector<int64_t>& spec = graph.values[op.inputs[1]].int_data;
  const bool allow_zero = op.attr<ReshapeAttrs>().allow_zero;
  Shape out(spec.size());
  int64_t known = 1, infer_at = -1;
  for (size_t d = 0; d < spec.size(); ++d) {
    if (spec[d] == -1) {
      if (infer_at >= 0) bad_shape(op, "target shape has more than one -1");
      infer_at = static_cast<int64_t>(d);
      continue;
    }
    if (spec[d] < -1) bad_shape(op, "target shape has " + std::to_string(spec[d]));
    out[d] = spec[d] == 0 && !allow_zero ? (d < x.size() ? x[d] : -2) : spec[d];
    if (out[d] == -2) bad_shape(op, "a 0 in the target shape beyond the input's rank");
    known *= out[d];
  }
  const int64_t total = element_count(x);
  if (infer_at >= 0) {
    if (known == 0 || total % known != 0)
      bad_shape(op, "cannot reshape " + shape_string(x) + " to " + shape_string(spec));
    out[infer_at] = total / known;
  } else if (known != total) {
    bad_shape(op, "cannot reshape " + shape_string(x) + " (" + std::to_string(total) +
                      " values) to " + shape_string(out));
  }
  return out;
}

constexpr std::string_view kTypes[] = {"Reshape"};
constexpr NodeTests kTests[] = {{"node", "test_reshape_", true}};

}  // namespace reshape_entry

const OpDef reshape_op{.onnx_types = reshape_entry::kTypes,
                       .parse = reshape_entry::parse,
                       .shape = reshape_entry::shape,
                       .output_aliases_input = true,
                       .node_tests = reshape_entry::kTests};

}  // namespace kaas::models::onnx_import
