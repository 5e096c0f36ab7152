// Conv: 2-D convolution (NCHW from ONNX; simplification may turn it NHWC), optional bias.

#include "kaas/common/error.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

// Named, not anonymous: the op files share translation units in unity builds.
namespace conv_entry {

void check_2d(const Op& op, const std::vector<int64_t>& v, const char* name) {
  if (!v.empty() && v.size() != 2)
    unsupported(node_label(op) + ": " + name + " has " + std::to_string(v.size()) +
                " values; kaas convolves in 2-D");
}

AutoPad auto_pad(const Op& op, const std::string& value) {
  if (value == "VALID") return AutoPad::kValid;
  if (value == "SAME_UPPER") return AutoPad::kSameUpper;
  if (value == "SAME_LOWER") return AutoPad::kSameLower;
  if (value != "NOTSET")
    malformed(node_label(op) + ": auto_pad '" + value + "' is not an ONNX value");
  return AutoPad::kNotSet;
}

bool parse(NodeContext& n, Op& op) {
  n.allow_attributes({"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"});
  n.expect_inputs(2, 3);
  ConvAttrs a;
  const auto strides = n.ints("strides"), dilations = n.ints("dilations"), pads = n.ints("pads");
  a.kernel_shape = n.ints("kernel_shape");
  check_2d(op, strides, "strides");
  check_2d(op, dilations, "dilations");
  check_2d(op, a.kernel_shape, "kernel_shape");
  if (!pads.empty() && pads.size() != 4)
    unsupported(node_label(op) + ": pads has " + std::to_string(pads.size()) +
                " values; kaas convolves in 2-D (4 pads)");
  Conv2dParams& c = a.conv;
  if (!strides.empty()) c.stride_h = strides[0], c.stride_w = strides[1];
  if (!dilations.empty()) c.dilation_h = dilations[0], c.dilation_w = dilations[1];
  if (!pads.empty())
    c.pad_top = pads[0], c.pad_left = pads[1], c.pad_bottom = pads[2], c.pad_right = pads[3];
  c.groups = n.i("group", 1);
  c.auto_pad = auto_pad(op, n.s("auto_pad", "NOTSET"));
  op.attrs = a;
  return true;
}

Shape shape(const Op& op, const Graph&, const std::vector<Shape>& shapes) {
  const ConvAttrs& a = op.attr<ConvAttrs>();
  const Shape& x = shapes[op.inputs[0]];
  const Shape& w = shapes[op.inputs[1]];
  if (x.size() != 4 || w.size() != 4)
    bad_shape(op, "input " + shape_string(x) + " and weight " + shape_string(w) +
                      " must be rank 4 (2-D convolution)");
  if (!a.kernel_shape.empty() && (a.kernel_shape[0] != w[2] || a.kernel_shape[1] != w[3]))
    bad_shape(op, "kernel_shape " + shape_string(a.kernel_shape) + " does not match weight " +
                      shape_string(w));
  int64_t xe[4] = {x[0], x[1], x[2], x[3]};
  if (a.c1_as_nhwc) {  // [N,1,H,W] read as [N,H,W,1]
    xe[1] = x[2], xe[2] = x[3], xe[3] = x[1];
  }
  const int64_t we[4] = {w[0], w[1], w[2], w[3]};
  Shape out;
  try {
    const Conv2dShape s = conv2d_output_shape(a.conv, xe, we);
    out = a.conv.layout == Layout::kNHWC ? Shape{s.batch, s.out_h, s.out_w, s.out_channels}
                                         : Shape{s.batch, s.out_channels, s.out_h, s.out_w};
  } catch (const Error& e) {
    bad_shape(op, e.what());
  }
  if (op.has_input(2) && shapes[op.inputs[2]] != Shape{w[0]})
    bad_shape(op, "bias " + shape_string(shapes[op.inputs[2]]) + " must be [" +
                      std::to_string(w[0]) + "]");
  return out;
}

void run(const RunContext& ctx, const Op& op) {
  const ConvAttrs& a = op.attr<ConvAttrs>();
  const Shape& x = ctx.in_shape(op, 0);
  const Shape& w = ctx.in_shape(op, 1);
  const Shape& y = ctx.out_shape(op);
  const Shape xs = a.c1_as_nhwc ? Shape{x[0], x[2], x[3], x[1]} : x;
  View1<const float> bias;
  if (op.has_input(2)) bias = make_view(ctx.in(op, 2), w[0]);
  conv2d(ctx.queue, make_view<4>(ctx.in(op, 0), {xs[0], xs[1], xs[2], xs[3]}),
         make_view<4>(ctx.in(op, 1), {w[0], w[1], w[2], w[3]}), bias,
         make_view<4>(ctx.out(op), {y[0], y[1], y[2], y[3]}), a.conv);
}

constexpr std::string_view kTypes[] = {"Conv"};
// Float convolutions only (ConvInteger / ConvTranspose are other operators).
constexpr NodeTests kTests[] = {{"node", "test_conv_with_", true},
                                {"pytorch-converted", "test_Conv2d", true}};

}  // namespace conv_entry

const OpDef conv_op{.onnx_types = conv_entry::kTypes,
                    .parse = conv_entry::parse,
                    .shape = conv_entry::shape,
                    .run = conv_entry::run,
                    .node_tests = conv_entry::kTests};

}  // namespace kaas::models::onnx_import
