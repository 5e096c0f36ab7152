// MatMul: numpy matmul of rank >= 2 operands with batch broadcasting (1-D is not supported).

#include "kaas/kernels/gemm.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace matmul_entry {

bool parse(NodeContext& n, Op&) {
  n.allow_attributes({});
  n.expect_inputs(2, 2);
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape& a = shapes[op.inputs[0]];
  const Shape& b = shapes[op.inputs[1]];
  if (a.size() < 2 || b.size() < 2)
    bad_shape(op, "operands " + shape_string(a) + " and " + shape_string(b) +
                      " must have rank >= 2 (1-D MatMul is not supported)");
  if (a.back() != b[b.size() - 2])
    bad_shape(op, "inner dimensions differ: " + shape_string(a) + " x " + shape_string(b));
  Shape out = broadcast(op, Shape(a.begin(), a.end() - 2), Shape(b.begin(), b.end() - 2));
  out.push_back(a[a.size() - 2]);
  out.push_back(b.back());
  return out;
}

void run(const RunContext& ctx, const Op& op) {
  matmul(ctx.queue, ctx.in(op, 0), ctx.in_shape(op, 0), ctx.in(op, 1), ctx.in_shape(op, 1),
         ctx.out(op));
}

constexpr std::string_view kTypes[] = {"MatMul"};
constexpr NodeTests kTests[] = {
    {"node", "test_matmul_2d"}, {"node", "test_matmul_3d"}, {"node", "test_matmul_4d"}};

}  // namespace matmul_entry

const OpDef matmul_op{.onnx_types = matmul_entry::kTypes,
                      .parse = matmul_entry::parse,
                      .shape = matmul_entry::shape,
                      .run = matmul_entry::run,
                      .node_tests = matmul_entry::kTests};

}  // namespace kaas::models::onnx_import
