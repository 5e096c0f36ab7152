// Shape inference for the imported ops at one concrete batch size.

#include <algorithm>

#include "kaas/backends/error.h"
#include "kaas/models/onnx_graph.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

namespace {

using Shape = std::vector<int64_t>;

[[noreturn]] void bad_shape(const Op& op, const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument,
              "ONNX model: node '" + op.node + "' (" + op.op_type + "): " + message);
}

int64_t normalise_axis(const Op& op, int64_t axis, int64_t rank, bool inclusive_end) {
  const int64_t hi = inclusive_end ? rank : rank - 1;
  if (axis < -rank || axis > hi)
    bad_shape(op,
              "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank));
  return axis < 0 ? axis + rank : axis;
}

Shape broadcast(const Op& op, const Shape& a, const Shape& b) {
  Shape out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t da = i < out.size() - a.size() ? 1 : a[i - (out.size() - a.size())];
    const int64_t db = i < out.size() - b.size() ? 1 : b[i - (out.size() - b.size())];
    if (da != db && da != 1 && db != 1)
      bad_shape(op, "shapes " + shape_string(a) + " and " + shape_string(b) + " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Shape conv_shape(const Op& op, const Shape& x, const Shape& w) {
  if (x.size() != 4 || w.size() != 4)
    bad_shape(op, "input " + shape_string(x) + " and weight " + shape_string(w) +
                      " must be rank 4 (2-D convolution)");
  if (!op.kernel_shape.empty() && (op.kernel_shape[0] != w[2] || op.kernel_shape[1] != w[3]))
    bad_shape(op, "kernel_shape " + shape_string(op.kernel_shape) + " does not match weight " +
                      shape_string(w));
  int64_t xe[4] = {x[0], x[1], x[2], x[3]};
  if (op.conv_c1_as_nhwc) {  // [N,1,H,W] read as [N,H,W,1]
    xe[1] = x[2], xe[2] = x[3], xe[3] = x[1];
  }
  const int64_t we[4] = {w[0], w[1], w[2], w[3]};
  try {
    const Conv2dShape s = conv2d_output_shape(op.conv, xe, we);
    return op.conv.layout == Layout::kNHWC ? Shape{s.batch, s.out_h, s.out_w, s.out_channels}
                                           : Shape{s.batch, s.out_channels, s.out_h, s.out_w};
  } catch (const Error& e) {
    bad_shape(op, e.what());
  }
}

Shape gemm_shape(const Op& op, const Shape& a, const Shape& b, const Shape* c) {
  if (a.size() != 2 || b.size() != 2)
    bad_shape(op, "A " + shape_string(a) + " and B " + shape_string(b) + " must be rank 2");
  const int64_t m = op.gemm.trans_a ? a[1] : a[0], k = op.gemm.trans_a ? a[0] : a[1];
  const int64_t kb = op.gemm.trans_b ? b[1] : b[0], n = op.gemm.trans_b ? b[0] : b[1];
  if (k != kb)
    bad_shape(op, "inner dimensions differ: A " + shape_string(a) + ", B " + shape_string(b));
  if (c != nullptr) {
    const Shape full = broadcast(op, *c, {m, n});
    if (full != Shape{m, n} || c->size() > 2)
      bad_shape(op, "C " + shape_string(*c) + " does not broadcast to [" + std::to_string(m) + "," +
                        std::to_string(n) + "]");
  }
  return {m, n};
}

Shape matmul_shape(const Op& op, const Shape& a, const Shape& b) {
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

Shape reshape_shape(const Op& op, const Shape& x, const std::vector<int64_t>& spec) {
  Shape out(spec.size());
  int64_t known = 1, infer_at = -1;
  for (size_t d = 0; d < spec.size(); ++d) {
    if (spec[d] == -1) {
      if (infer_at >= 0) bad_shape(op, "target shape has more than one -1");
      infer_at = static_cast<int64_t>(d);
      continue;
    }
    if (spec[d] < -1) bad_shape(op, "target shape has " + std::to_string(spec[d]));
    out[d] = spec[d] == 0 && !op.allow_zero ? (d < x.size() ? x[d] : -2) : spec[d];
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

Shape op_shape(const Op& op, const Graph& graph, const std::vector<Shape>& shapes) {
  auto in = [&](int i) -> const Shape& { return shapes[op.inputs[i]]; };
  const Shape& x = in(0);
  switch (op.kind) {
    case OpKind::kConv: {
      const Shape out = conv_shape(op, x, in(1));
      if (op.inputs.size() > 2 && op.inputs[2] >= 0 && in(2) != Shape{in(1)[0]})
        bad_shape(op,
                  "bias " + shape_string(in(2)) + " must be [" + std::to_string(in(1)[0]) + "]");
      return out;
    }
    case OpKind::kGemm:
      return gemm_shape(op, x, in(1), op.inputs.size() > 2 && op.inputs[2] >= 0 ? &in(2) : nullptr);
    case OpKind::kMatMul:
      return matmul_shape(op, x, in(1));
    case OpKind::kAdd: {
      const Shape out = broadcast(op, x, in(1));
      if (out.size() > 6) bad_shape(op, "rank " + std::to_string(out.size()) + " > 6");
      return out;
    }
    case OpKind::kActivation:
      return x;
    case OpKind::kSoftmax:
      normalise_axis(op, op.axis, static_cast<int64_t>(x.size()), false);
      return x;
    case OpKind::kTranspose: {
      std::vector<int64_t> perm = op.perm;
      if (perm.empty()) {
        for (size_t d = x.size(); d-- > 0;) perm.push_back(static_cast<int64_t>(d));
      }
      Shape sorted = perm;
      std::sort(sorted.begin(), sorted.end());
      for (size_t d = 0; d < sorted.size(); ++d) {
        if (sorted.size() != x.size() || sorted[d] != int64_t(d))
          bad_shape(op, "perm " + shape_string(perm) + " is not a permutation of rank " +
                            std::to_string(x.size()));
      }
      if (x.size() > 6) bad_shape(op, "rank " + std::to_string(x.size()) + " > 6");
      Shape out(x.size());
      for (size_t d = 0; d < x.size(); ++d) out[d] = x[perm[d]];
      return out;
    }
    case OpKind::kConcat: {
      const int64_t axis = normalise_axis(op, op.axis, static_cast<int64_t>(x.size()), false);
      Shape out = x;
      for (size_t i = 1; i < op.inputs.size(); ++i) {
        const Shape& s = in(static_cast<int>(i));
        bool same = s.size() == x.size();
        for (size_t d = 0; same && d < s.size(); ++d) same = int64_t(d) == axis || s[d] == x[d];
        if (!same)
          bad_shape(op, "input " + shape_string(s) + " does not match " + shape_string(x) +
                            " outside axis " + std::to_string(axis));
        out[axis] += s[axis];
      }
      if (out.size() > 6) bad_shape(op, "rank " + std::to_string(out.size()) + " > 6");
      return out;
    }
    case OpKind::kFlatten: {
      const int64_t axis = normalise_axis(op, op.axis, static_cast<int64_t>(x.size()), true);
      int64_t outer = 1, inner = 1;
      for (size_t d = 0; d < x.size(); ++d) (int64_t(d) < axis ? outer : inner) *= x[d];
      return {outer, inner};
    }
    case OpKind::kReshape:
      return reshape_shape(op, x, graph.values[op.inputs[1]].int_data);
  }
  return x;
}

}  // namespace

std::vector<std::vector<int64_t>> infer_shapes(const Graph& graph, int64_t batch) {
  std::vector<Shape> shapes(graph.values.size());
  for (size_t v = 0; v < graph.values.size(); ++v) shapes[v] = graph.values[v].shape;
  for (int id : graph.inputs) {
    if (!shapes[id].empty() && shapes[id][0] == kVariableDim) shapes[id][0] = batch;
  }
  for (const Op& op : graph.ops) shapes[op.output] = op_shape(op, graph, shapes);
  return shapes;
}

}  // namespace kaas::models::onnx_import
