// Clip: y = min(max(x, min), max), NaN kept. Opset >= 11: min and max are optional scalar
// inputs (constant or runtime); opset 6: float attributes, defaulting to the float range, read
// here into constant inputs. Runs as binary Max then Min against the broadcast scalar.

#include <limits>

#include "kaas/kernels/elementwise.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace clip_entry {

int scalar_constant(NodeContext& n, const Op& op, const char* name, float value) {
  Value v;
  v.name = op.node + "/" + name;
  v.constant = true;
  v.data = {value};
  return n.add_constant(std::move(v));
}

bool parse(NodeContext& n, Op& op) {
  if (n.opset() >= 11) {
    n.allow_attributes({});
    n.expect_inputs(1, 3);
    op.inputs.resize(3, -1);
    return true;
  }
  n.allow_attributes({"min", "max"});
  n.expect_inputs(1, 1);
  const float lowest = std::numeric_limits<float>::lowest();
  const float highest = std::numeric_limits<float>::max();
  op.inputs = {op.inputs[0], scalar_constant(n, op, "min", n.f("min", lowest)),
               scalar_constant(n, op, "max", n.f("max", highest))};
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[op.inputs[0]];
  check_rank_at_most_6(op, x);
  for (size_t i : {1, 2}) {
    if (!op.has_input(i)) continue;
    const Shape& bound = shapes[op.inputs[i]];
    if (element_count(bound) != 1 || bound.size() > x.size())
      bad_shape(op,
                std::string(i == 1 ? "min " : "max ") + shape_string(bound) + " must be a scalar");
  }
  return x;
}

void run(const RunContext& ctx, const Op& op) {
  const std::span<const int64_t> y(ctx.out_shape(op));
  const auto out = to_rank6(ctx.out(op), y);
  auto bound = [&](size_t i) { return broadcast_view(ctx.in(op, i), ctx.in_shape(op, i), y); };
  if (!op.has_input(1) && !op.has_input(2)) {
    copy_strided(ctx.queue, to_rank6(ctx.in(op, 0), y), out);
    return;
  }
  // The second step reads the first step's output in place (binary allows y == a).
  const float* x = ctx.in(op, 0);
  if (op.has_input(1)) {
    binary(ctx.queue, BinaryOp::kMax, to_rank6(x, y), bound(1), out);
    x = ctx.out(op);
  }
  if (op.has_input(2)) binary(ctx.queue, BinaryOp::kMin, to_rank6(x, y), bound(2), out);
}

constexpr std::string_view kTypes[] = {"Clip"};
// Not the INT8 cases: kaas models are FLOAT.
constexpr NodeTests kTests[] = {{"node", "test_clip"},
                                {"node", "test_clip_example"},
                                {"node", "test_clip_inbounds"},
                                {"node", "test_clip_outbounds"},
                                {"node", "test_clip_splitbounds"},
                                {"node", "test_clip_default_inbounds"},
                                {"node", "test_clip_default_min"},
                                {"node", "test_clip_default_max"},
                                {"pytorch-operator", "test_operator_clip"}};

}  // namespace clip_entry

const OpDef clip_op{.onnx_types = clip_entry::kTypes,
                    .parse = clip_entry::parse,
                    .shape = clip_entry::shape,
                    .run = clip_entry::run,
                    .node_tests = clip_entry::kTests};

}  // namespace kaas::models::onnx_import
