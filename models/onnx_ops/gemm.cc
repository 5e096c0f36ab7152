// Gemm: Y = alpha * op(A) . op(B) + beta * C, C broadcast ONNX-style; simplification also turns
// MatMul with a constant 2-D B into a Gemm and fuses a following activation (the epilogue).

#include "kaas/kernels/gemm.h"
#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace gemm_entry {

bool parse(NodeContext& n, Op& op) {
  // Opset < 7 marks a broadcast C with 'broadcast'; kaas always broadcasts C ONNX-style.
  if (n.opset() < 7) {
    n.allow_attributes({"alpha", "beta", "transA", "transB", "broadcast"});
  } else {
    n.allow_attributes({"alpha", "beta", "transA", "transB"});
  }
  n.expect_inputs(2, 3);
  GemmParams p;
  p.alpha = n.f("alpha", 1.0f);
  p.beta = n.f("beta", 1.0f);
  p.trans_a = n.i("transA", 0) != 0;
  p.trans_b = n.i("transB", 0) != 0;
  // A row's outputs must not depend on its batch (docs/reproducibility.md): kaas's own tiles,
  // never a vendor BLAS whose blocking follows M and the thread count.
  p.rows_independent = true;
  op.attrs = p;
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const GemmParams& p = op.attr<GemmParams>();
  const Shape& a = shapes[op.inputs[0]];
  const Shape& b = shapes[op.inputs[1]];
  if (a.size() != 2 || b.size() != 2)
    bad_shape(op, "A " + shape_string(a) + " and B " + shape_string(b) + " must be rank 2");
  const int64_t m = p.trans_a ? a[1] : a[0], k = p.trans_a ? a[0] : a[1];
  const int64_t kb = p.trans_b ? b[1] : b[0], n = p.trans_b ? b[0] : b[1];
  if (k != kb)
    bad_shape(op, "inner dimensions differ: A " + shape_string(a) + ", B " + shape_string(b));
  if (op.has_input(2)) {
    const Shape& c = shapes[op.inputs[2]];
    const Shape full = broadcast(op, c, {m, n});
    if (full != Shape{m, n} || c.size() > 2)
      bad_shape(op, "C " + shape_string(c) + " does not broadcast to [" + std::to_string(m) + "," +
                        std::to_string(n) + "]");
  }
  return {m, n};
}

View2<const float> view2(const float* data, const Shape& s) {
  return make_view<2>(data, {s[0], s[1]});
}

void run(const RunContext& ctx, const Op& op) {
  const Shape& y = ctx.out_shape(op);
  View2<const float> c;
  if (op.has_input(2)) c = gemm_c_view(ctx.in(op, 2), ctx.in_shape(op, 2));
  gemm(ctx.queue, view2(ctx.in(op, 0), ctx.in_shape(op, 0)),
       view2(ctx.in(op, 1), ctx.in_shape(op, 1)), c, make_view<2>(ctx.out(op), {y[0], y[1]}),
       op.attr<GemmParams>());
}

constexpr std::string_view kTypes[] = {"Gemm"};
constexpr NodeTests kTests[] = {{"node", "test_gemm_", true},
                                {"pytorch-converted", "test_Linear", true}};

}  // namespace gemm_entry

View2<const float> gemm_c_view(const float* data, const Shape& c) {
  if (c.size() == 2) return gemm_entry::view2(data, c);
  View2<const float> v;
  v.data = data;
  v.extent[0] = 1;
  v.extent[1] = c.size() == 1 ? c[0] : 1;
  v.stride[0] = 0;
  v.stride[1] = 1;
  return v;
}

const OpDef gemm_op{.onnx_types = gemm_entry::kTypes,
                    .parse = gemm_entry::parse,
                    .shape = gemm_entry::shape,
                    .run = gemm_entry::run,
                    .node_tests = gemm_entry::kTests};

}  // namespace kaas::models::onnx_import
