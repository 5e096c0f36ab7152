// Transpose: a strided copy reading the input through permuted strides (rank <= 6).

#include <algorithm>

#include "kaas/kernels/elementwise.h"
#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace transpose_entry {

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"perm"});
  n.expect_inputs(1, 1);
  op.attrs = TransposeAttrs{n.ints("perm")};
  return true;
}

Shape perm_of(const Op& op, size_t rank) {
  Shape perm = op.attr<TransposeAttrs>().perm;
  if (perm.empty()) {
    for (size_t d = rank; d-- > 0;) perm.push_back(int64_t(d));
  }
  return perm;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const Shape& x = shapes[op.inputs[0]];
  const Shape perm = perm_of(op, x.size());
  Shape sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t d = 0; d < sorted.size(); ++d) {
    if (sorted.size() != x.size() || sorted[d] != int64_t(d))
      bad_shape(op, "perm " + shape_string(perm) + " is not a permutation of rank " +
                        std::to_string(x.size()));
  }
  check_rank_at_most_6(op, x);
  Shape out(x.size());
  for (size_t d = 0; d < x.size(); ++d) out[d] = x[perm[d]];
  return out;
}

void run(const RunContext& ctx, const Op& op) {
  const Shape& x = ctx.in_shape(op, 0);
  const Shape& y = ctx.out_shape(op);
  const Shape perm = perm_of(op, x.size());
  Shape strides(x.size()), permuted(x.size());
  int64_t s = 1;
  for (size_t d = x.size(); d-- > 0;) strides[d] = s, s *= x[d];
  for (size_t d = 0; d < x.size(); ++d) permuted[d] = strides[perm[d]];
  copy_strided(ctx.queue, to_rank6(ctx.in(op, 0), std::span<const int64_t>(y), permuted),
               to_rank6(ctx.out(op), std::span<const int64_t>(y)));
}

constexpr std::string_view kTypes[] = {"Transpose"};
constexpr NodeTests kTests[] = {{"node", "test_transpose_", true}};

}  // namespace transpose_entry

const OpDef transpose_op{.onnx_types = transpose_entry::kTypes,
                         .parse = transpose_entry::parse,
                         .shape = transpose_entry::shape,
                         .run = transpose_entry::run,
                         .node_tests = transpose_entry::kTests};

}  // namespace kaas::models::onnx_import
