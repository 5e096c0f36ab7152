// Concat along one axis: one strided copy per input into its slice of the output (rank <= 6).

#include "kaas/kernels/elementwise.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace concat_entry {

struct ConcatAttrs {
  int64_t axis = 0;
};

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"axis"});
  n.expect_inputs(1, 1 << 20);
  if (!n.find("axis")) malformed(node_label(op) + ": attribute 'axis' is required");
  op.attrs = ConcatAttrs{n.i("axis", 0)};
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[op.inputs[0]];
  const int64_t axis =
      normalise_axis(op, op.attr<ConcatAttrs>().axis, static_cast<int64_t>(x.size()), false);
  Shape out = x;
  for (size_t i = 1; i < op.inputs.size(); ++i) {
    const Shape& s = shapes[op.inputs[i]];
    bool same = s.size() == x.size();
    for (size_t d = 0; same && d < s.size(); ++d) same = int64_t(d) == axis || s[d] == x[d];
    if (!same)
      bad_shape(op, "input " + shape_string(s) + " does not match " + shape_string(x) +
                        " outside axis " + std::to_string(axis));
    out[axis] += s[axis];
  }
  check_rank_at_most_6(op, out);
  return out;
}

void run(const RunContext& ctx, const Op& op) {
  const Shape& y = ctx.out_shape(op);
  const int64_t axis_attr = op.attr<ConcatAttrs>().axis;
  const int64_t axis = axis_attr < 0 ? axis_attr + int64_t(y.size()) : axis_attr;
  Shape out_strides(y.size());
  int64_t s = 1;
  for (size_t d = y.size(); d-- > 0;) out_strides[d] = s, s *= y[d];
  int64_t offset = 0;
  for (size_t i = 0; i < op.inputs.size(); ++i) {
    const Shape& part = ctx.in_shape(op, i);
    copy_strided(ctx.queue, to_rank6(ctx.in(op, i), std::span<const int64_t>(part)),
                 to_rank6(ctx.out(op) + offset * out_strides[axis], std::span<const int64_t>(part),
                          out_strides));
    offset += part[axis];
  }
}

constexpr std::string_view kTypes[] = {"Concat"};
constexpr NodeTests kTests[] = {{"node", "test_concat_", true}};

}  // namespace concat_entry

const OpDef concat_op{.onnx_types = concat_entry::kTypes,
                      .parse = concat_entry::parse,
                      .shape = concat_entry::shape,
                      .run = concat_entry::run,
                      .node_tests = concat_entry::kTests};

}  // namespace kaas::models::onnx_import
