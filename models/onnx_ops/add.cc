// Add: numpy-broadcasting elementwise sum (rank <= 6).

#include "kaas/kernels/elementwise.h"
#include "kaas/models/onnx_ops/table.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace add_entry {

bool parse(NodeContext& n, Op&) {
  n.allow_attributes({});
  n.expect_inputs(2, 2);
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape out = broadcast(op, shapes[op.inputs[0]], shapes[op.inputs[1]]);
  check_rank_at_most_6(op, out);
  return out;
}

void run(const RunContext& ctx, const Op& op) {
  const Shape& y = ctx.out_shape(op);
  binary(ctx.queue, BinaryOp::kAdd, broadcast_view(ctx.in(op, 0), ctx.in_shape(op, 0), y),
         broadcast_view(ctx.in(op, 1), std::span<const int64_t>(ctx.in_shape(op, 1)), y),
         to_rank6(ctx.out(op), std::span<const int64_t>(y)));
}

constexpr std::string_view kTypes[] = {"Add"};
constexpr NodeTests kTests[] = {
    {"node", "test_add"}, {"node", "test_add_bcast"}, {"node", "test_add_uint8"}};

}  // namespace add_entry

const OpDef add_op{.onnx_types = add_entry::kTypes,
                   .parse = add_entry::parse,
                   .shape = add_entry::shape,
                   .run = add_entry::run,
                   .node_tests = add_entry::kTests};

}  // namespace kaas::models::onnx_import
