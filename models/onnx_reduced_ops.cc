#include "kaas/models/onnx_reduced_ops.h"

#include <algorithm>
#include <type_traits>
#include <variant>

#include "kaas/backends/buffer.h"
#include "kaas/backends/half.h"
#include "kaas/common/error.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/convert.h"
#include "kaas/kernels/gemm.h"
#include "kaas/models/onnx_ops/attrs.h"
#include "kaas/models/onnx_ops/table.h"
#include "kaas/models/tensor.h"

namespace kaas::models::onnx_import {

namespace {

// Multiply-adds per batch row (per row of A for a Gemm, per image for a Conv).
int64_t macs_per_row(const Op& op, const std::vector<Shape>& shapes) {
  const Shape& w = shapes[op.inputs[1]];
  const Shape& y = shapes[op.output];
  if (op.is(conv_op)) return y[0] > 0 ? element_count(y) / y[0] * w[1] * w[2] * w[3] : 0;
  return element_count(w);  // Gemm: K x N
}

bool heavy_layer(const Graph& graph, const Op& op, const std::vector<Shape>& shapes) {
  if (!op.is(conv_op) && !op.is(gemm_op)) return false;
  if (op.inputs.size() < 2 || op.inputs[1] < 0) return false;
  const Value& weight = graph.values[op.inputs[1]];
  return weight.constant && !weight.is_int64 && macs_per_row(op, shapes) >= kMinReducedMacs;
}

template <class T>
struct Layers {
  std::map<const Op*, DeviceBuffer<T>> weights;  // per reduced op, rounded once
  DeviceBuffer<T> input, output;                 // per call: an op's input and a Conv's output
};

template <class T>
View1<T> flat(const DeviceBuffer<T>& buffer, int64_t count) {
  return make_view(buffer.data(), count);
}

template <class T>
void run_conv(const RunContext& ctx, const Op& op, const Layers<T>& layers) {
  const ConvAttrs& a = op.attr<ConvAttrs>();
  const Shape& x = ctx.in_shape(op, 0);
  const Shape& w = ctx.in_shape(op, 1);
  const Shape& y = ctx.out_shape(op);
  const Shape xs = a.c1_as_nhwc ? Shape{x[0], x[2], x[3], x[1]} : x;
  const int64_t in_count = element_count(x), out_count = element_count(y);
  convert(ctx.queue, make_view(ctx.in(op, 0), in_count), flat(layers.input, in_count));
  View1<const float> bias;
  if (op.has_input(2)) bias = make_view(ctx.in(op, 2), w[0]);
  const T* weight = layers.weights.at(&op).data();
  conv2d(ctx.queue,
         make_view<4>(static_cast<const T*>(layers.input.data()), {xs[0], xs[1], xs[2], xs[3]}),
         make_view<4>(weight, {w[0], w[1], w[2], w[3]}), bias,
         make_view<4>(layers.output.data(), {y[0], y[1], y[2], y[3]}), a.conv);
  convert(ctx.queue, make_view(static_cast<const T*>(layers.output.data()), out_count),
          make_view(ctx.out(op), out_count));
}

template <class T>
void run_gemm(const RunContext& ctx, const Op& op, const Layers<T>& layers) {
  const Shape& a = ctx.in_shape(op, 0);
  const Shape& b = ctx.in_shape(op, 1);
  const Shape& y = ctx.out_shape(op);
  const int64_t a_count = element_count(a);
  convert(ctx.queue, make_view(ctx.in(op, 0), a_count), flat(layers.input, a_count));
  View2<const float> c;
  if (op.has_input(2)) c = gemm_c_view(ctx.in(op, 2), ctx.in_shape(op, 2));
  gemm(ctx.queue, make_view<2>(static_cast<const T*>(layers.input.data()), {a[0], a[1]}),
       make_view<2>(static_cast<const T*>(layers.weights.at(&op).data()), {b[0], b[1]}), c,
       make_view<2>(ctx.out(op), {y[0], y[1]}), op.attr<GemmParams>());
}

template <class T>
Layers<T> make_layers(const Queue& queue, const Graph& graph, const std::vector<Shape>& shapes) {
  Layers<T> layers;
  int64_t input_count = 0, output_count = 0;
  for (const Op& op : graph.ops) {
    if (!heavy_layer(graph, op, shapes)) continue;
    const std::vector<float>& w = graph.values[op.inputs[1]].data;
    std::vector<T> rounded(w.size());
    std::transform(w.begin(), w.end(), rounded.begin(),
                   [](float v) { return math::round_to<T>(v); });
    layers.weights.emplace(&op, to_device(queue, std::span<const T>(rounded)));
    input_count = std::max(input_count, element_count(shapes[op.inputs[0]]));
    if (op.is(conv_op)) output_count = std::max(output_count, element_count(shapes[op.output]));
  }
  layers.input = make_device_buffer<T>(queue, size_t(std::max<int64_t>(input_count, 1)));
  layers.output = make_device_buffer<T>(queue, size_t(std::max<int64_t>(output_count, 1)));
  return layers;
}

}  // namespace

struct ReducedOps::State {
  std::variant<Layers<bf16>, Layers<fp16>> layers;
};

ReducedOps::ReducedOps(const Queue& queue, const Graph& graph, const std::vector<Shape>& max_shapes,
                       Precision precision) {
  require(precision != Precision::kFp32, "ReducedOps", "precision", "bf16 or fp16", "fp32");
  state_ = precision == Precision::kBf16
               ? std::make_unique<State>(State{make_layers<bf16>(queue, graph, max_shapes)})
               : std::make_unique<State>(State{make_layers<fp16>(queue, graph, max_shapes)});
  const std::string p(to_string(precision));
  for (const Op& op : graph.ops)
    if (heavy_layer(graph, op, max_shapes))
      plan_.push_back("precision " + p + ": " + op.node + " (" +
                      (op.is(conv_op) ? "Conv" : "Gemm") + ") " + p +
                      " weights and input, fp32 accumulation");
  plan_.push_back("precision " + p + ": every other op fp32 (Conv and Gemm with fewer than " +
                  std::to_string(kMinReducedMacs) + " multiply-adds per row included)");
}

ReducedOps::~ReducedOps() = default;

bool ReducedOps::run(const RunContext& ctx, const Op& op) const {
  return std::visit(
      [&](const auto& layers) {
        if (!layers.weights.contains(&op)) return false;
        if (op.is(conv_op))
          run_conv(ctx, op, layers);
        else
          run_gemm(ctx, op, layers);
        return true;
      },
      state_->layers);
}

}  // namespace kaas::models::onnx_import
