#include "kaas/models/onnx_fused.h"

#include <algorithm>

#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"

namespace kaas::models::onnx_import {

namespace {

using Shape = std::vector<int64_t>;

bool constant(const Graph& g, int value) {
  return value >= 0 && g.values[value].constant;
}

// A dense layer with constant weight and a constant [N] / [1,N] bias (or none), alpha 1.
bool plain_dense(const Graph& g, const Op& op, int64_t max_out, const std::vector<Shape>& shapes) {
  if (!op.is(gemm_op)) return false;
  const GemmParams& p = op.attr<GemmParams>();
  if (p.trans_a || p.alpha != 1.0f || !constant(g, op.inputs[1])) return false;
  const int64_t n = shapes[op.output][1];
  if (max_out > 0 && n > max_out) return false;
  if (op.inputs.size() < 3 || op.inputs[2] < 0) return true;
  const Shape& c = shapes[op.inputs[2]];
  return constant(g, op.inputs[2]) && p.beta == 1.0f &&
         ((c.size() == 1 && c[0] == n) || (c.size() == 2 && c[0] == 1 && c[1] == n));
}

// The ops reading `value`.
std::vector<int> readers(const Graph& g, int value) {
  std::vector<int> r;
  for (size_t i = 0; i < g.ops.size(); ++i) {
    if (std::find(g.ops[i].inputs.begin(), g.ops[i].inputs.end(), value) != g.ops[i].inputs.end())
      r.push_back(static_cast<int>(i));
  }
  return r;
}

bool is_output(const Graph& g, int value) {
  return std::any_of(g.outputs.begin(), g.outputs.end(),
                     [&](const auto& o) { return o.second == value; });
}

// Softmax (not LogSoftmax) over the last axis of a [batch, classes] head.
bool is_plain_softmax(const Op& op) {
  if (!op.is(softmax_op)) return false;
  const SoftmaxAttrs& a = op.attr<SoftmaxAttrs>();
  return a.kind == SoftmaxKind::kSoftmax && (a.axis == 1 || a.axis == -1);
}

View2<const float> weight_view(const float* data, const Shape& shape, bool trans_b) {
  // As [K, N]: a [N, K] weight is read with swapped strides.
  View2<const float> w;
  w.data = data;
  w.extent[0] = trans_b ? shape[1] : shape[0];
  w.extent[1] = trans_b ? shape[0] : shape[1];
  w.stride[0] = trans_b ? 1 : shape[1];
  w.stride[1] = trans_b ? shape[1] : 1;
  return w;
}

}  // namespace

DenseLayer dense_layer(const Op& op, const std::vector<Shape>& shapes,
                       const std::function<float*(int)>& data_of) {
  DenseLayer l;
  const GemmParams& p = op.attr<GemmParams>();
  l.w = weight_view(data_of(op.inputs[1]), shapes[op.inputs[1]], p.trans_b);
  if (op.inputs.size() > 2 && op.inputs[2] >= 0)
    l.b = make_view(static_cast<const float*>(data_of(op.inputs[2])), l.w.extent[1]);
  l.epilogue = p.epilogue;
  return l;
}

std::optional<ConvDenseHeads> match_conv_dense_heads(const Graph& g, std::string& why_not) {
  const auto shapes = infer_shapes(g, 1);
  auto fail = [&](const std::string& why) {
    why_not = why;
    return std::nullopt;
  };
  if (g.ops.size() != 7)
    return fail("the graph has " + std::to_string(g.ops.size()) +
                " ops after simplification, the pattern 7");
  if (g.inputs.size() != 1 || g.outputs.size() != 2) return fail("not one input and two outputs");
  ConvDenseHeads p{};
  const std::vector<int> first = readers(g, g.inputs[0]);
  if (first.size() != 1 || !g.ops[first[0]].is(conv_op))
    return fail("the input does not feed one Conv");
  p.conv = first[0];
  const Op& conv = g.ops[p.conv];
  const Conv2dParams& c = conv.attr<ConvAttrs>().conv;
  const bool valid =
      c.auto_pad == AutoPad::kValid || (c.auto_pad == AutoPad::kNotSet && c.pad_top == 0 &&
                                        c.pad_left == 0 && c.pad_bottom == 0 && c.pad_right == 0);
  if (c.layout != Layout::kNHWC || c.groups != 1 || c.stride_h != 1 || c.stride_w != 1 ||
      c.dilation_h != 1 || c.dilation_w != 1 || !valid || !constant(g, conv.inputs[1]) ||
      (conv.inputs.size() > 2 && conv.inputs[2] >= 0 && !constant(g, conv.inputs[2])))
    return fail("the Conv is not an NHWC, valid, stride-1, constant-weight convolution");
  auto sole = [&](int value, const OpDef& kind) -> int {
    const auto r = readers(g, value);
    return r.size() == 1 && g.ops[r[0]].is(kind) && !is_output(g, value) ? r[0] : -1;
  };
  if ((p.flatten = sole(conv.output, flatten_op)) < 0 ||
      g.ops[p.flatten].attr<FlattenAttrs>().axis != 1)
    return fail("the Conv does not feed Flatten(axis=1)");
  if ((p.dense1 = sole(g.ops[p.flatten].output, gemm_op)) < 0 ||
      !plain_dense(g, g.ops[p.dense1], 0, shapes))
    return fail("Flatten does not feed a dense layer with constant weights");
  if ((p.dense2 = sole(g.ops[p.dense1].output, gemm_op)) < 0 ||
      !plain_dense(g, g.ops[p.dense2], kMlpHeadsMaxHidden, shapes))
    return fail("the first dense layer does not feed a second one of <= 64 units");
  const int hidden = g.ops[p.dense2].output;
  const auto heads = readers(g, hidden);
  if (heads.size() != 2 || is_output(g, hidden))
    return fail("the hidden layer does not feed two heads");
  p.head_a = p.head_b = -1;
  for (int h : heads) {
    const Op& head = g.ops[h];
    if (!plain_dense(g, head, kMlpHeadsMaxOutputs, shapes))
      return fail("a head is not a small dense layer");
    const auto r = readers(g, head.output);
    if (r.size() == 1 && is_plain_softmax(g.ops[r[0]]) &&
        head.attr<GemmParams>().epilogue.activation == Activation::kNone &&
        !is_output(g, head.output) && is_output(g, g.ops[r[0]].output) && p.head_a < 0) {
      p.head_a = h;
      p.softmax = r[0];
    } else if (r.empty() && is_output(g, head.output)) {
      p.head_b = h;
    }
  }
  if (p.head_a < 0 || p.head_b < 0)
    return fail("the heads are not one dense+Softmax and one dense(+activation) output");
  return p;
}

int64_t slab_rows(const Graph& g, const ConvDenseHeads& p, const std::vector<Shape>& shapes,
                  int64_t batch_tile, int64_t slab_bytes, int64_t element_bytes) {
  const Shape& y = shapes[g.ops[p.conv].output];  // [n, OH, OW, OC]
  return conv_dense_heads_slab_rows(y[1], y[2], y[3], batch_tile, slab_bytes, element_bytes);
}

template <class T>
void run_conv_dense_heads(const Queue& queue, const Graph& g, const ConvDenseHeads& p,
                          const std::vector<Shape>& shapes,
                          const std::function<float*(int)>& data_of,
                          const FusedOperands<T>& operands, const FusedBuffers& buffers) {
  const Op& conv = g.ops[p.conv];
  const Op& dense1 = g.ops[p.dense1];
  Shape x = shapes[conv.inputs[0]];  // [n, H, W, C]
  const ConvAttrs& conv_attrs = conv.attr<ConvAttrs>();
  const GemmParams& dense1_params = dense1.attr<GemmParams>();
  if (conv_attrs.c1_as_nhwc) x = {x[0], x[2], x[3], x[1]};
  const Shape& w = shapes[conv.inputs[1]];  // [OC, C, KH, KW]
  const int64_t n = x[0];
  const int64_t n1 = shapes[dense1.output][1];
  ConvDenseHeadsWeights<T> weights;
  weights.conv_weight = make_view<4>(operands.conv_weight, {w[0], w[1], w[2], w[3]});
  if (conv.inputs.size() > 2 && conv.inputs[2] >= 0)
    weights.conv_bias = make_view(static_cast<const float*>(data_of(conv.inputs[2])), w[0]);
  weights.conv = conv_attrs.conv;
  weights.conv.impl = buffers.conv_impl;
  // The first dense weight as stored: [K, N1], or [N1, K] with transB (PyTorch Linear).
  const Shape& w1_shape = shapes[dense1.inputs[1]];
  weights.dense1_weight = make_view<2>(operands.dense1_weight, {w1_shape[0], w1_shape[1]});
  weights.dense1_trans_b = dense1_params.trans_b;
  if (dense1.inputs.size() > 2 && dense1.inputs[2] >= 0)
    weights.dense1_bias = make_view(static_cast<const float*>(data_of(dense1.inputs[2])), n1);
  weights.dense1_epilogue = dense1_params.epilogue;
  weights.dense1_packed = operands.dense1_packed;
  weights.dense1_panels = operands.dense1_panels;
  weights.hidden = dense_layer(g.ops[p.dense2], shapes, data_of);
  const Op& head_a = g.ops[p.head_a];
  const Op& head_b = g.ops[p.head_b];
  weights.head_a = dense_layer(head_a, shapes, data_of);
  weights.head_b = dense_layer(head_b, shapes, data_of);
  ConvDenseHeadsWorkspace workspace;
  workspace.dense1 = make_view<2>(buffers.dense1, {n, n1});
  workspace.slab = operands.slab;
  workspace.batch_tile = buffers.batch_tile;
  workspace.rows_per_pass = buffers.rows_per_pass;
  workspace.split = buffers.split;
  workspace.dense1_impl = buffers.dense1_impl;
  const int64_t na = shapes[head_a.output][1], nb = shapes[head_b.output][1];
  conv_dense_heads<T>(queue, make_view<4>(operands.input, {x[0], x[1], x[2], x[3]}), weights,
                      workspace, make_view<2>(data_of(g.ops[p.softmax].output), {n, na}),
                      make_view<2>(data_of(head_b.output), {n, nb}));
}

template void run_conv_dense_heads<float>(const Queue&, const Graph&, const ConvDenseHeads&,
                                          const std::vector<Shape>&,
                                          const std::function<float*(int)>&,
                                          const FusedOperands<float>&, const FusedBuffers&);
template void run_conv_dense_heads<bf16>(const Queue&, const Graph&, const ConvDenseHeads&,
                                         const std::vector<Shape>&,
                                         const std::function<float*(int)>&,
                                         const FusedOperands<bf16>&, const FusedBuffers&);
template void run_conv_dense_heads<fp16>(const Queue&, const Graph&, const ConvDenseHeads&,
                                         const std::vector<Shape>&,
                                         const std::function<float*(int)>&,
                                         const FusedOperands<fp16>&, const FusedBuffers&);

}  // namespace kaas::models::onnx_import
