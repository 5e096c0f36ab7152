// Softmax, LogSoftmax along one axis (opset < 13: the input coerced to 2-D at the axis).

#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace softmax_entry {

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"axis"});
  n.expect_inputs(1, 1);
  SoftmaxAttrs a;
  a.kind = op.op_type == "Softmax" ? SoftmaxKind::kSoftmax : SoftmaxKind::kLogSoftmax;
  a.coerce_2d = n.opset() < 13;
  a.axis = n.i("axis", n.opset() < 13 ? 1 : -1);
  op.attrs = a;
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[op.inputs[0]];
  normalise_axis(op, op.attr<SoftmaxAttrs>().axis, static_cast<int64_t>(x.size()), false);
  return x;
}

void run(const RunContext& ctx, const Op& op) {
  const SoftmaxAttrs& a = op.attr<SoftmaxAttrs>();
  const Shape& x = ctx.in_shape(op, 0);
  const int64_t rank = int64_t(x.size());
  const int64_t axis = a.axis < 0 ? a.axis + rank : a.axis;
  int64_t outer = 1, length = 1, inner = 1;
  for (int64_t d = 0; d < rank; ++d) {
    (d < axis ? outer : (d == axis || a.coerce_2d) ? length : inner) *= x[d];
  }
  softmax(ctx.queue, a.kind, make_view<3>(ctx.in(op, 0), {outer, length, inner}),
          make_view<3>(ctx.out(op), {outer, length, inner}));
}

constexpr std::string_view kTypes[] = {"Softmax", "LogSoftmax"};
constexpr NodeTests kTests[] = {{"node", "test_softmax_", true},
                                {"node", "test_logsoftmax_", true},
                                {"pytorch-converted", "test_Softmax"},
                                {"pytorch-converted", "test_LogSoftmax"},
                                {"pytorch-converted", "test_softmax_", true},
                                {"pytorch-converted", "test_log_softmax_", true}};

}  // namespace softmax_entry

const OpDef softmax_op{.onnx_types = softmax_entry::kTypes,
                       .parse = softmax_entry::parse,
                       .shape = softmax_entry::shape,
                       .run = softmax_entry::run,
                       .node_tests = softmax_entry::kTests};

}  // namespace kaas::models::onnx_import
