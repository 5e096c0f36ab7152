#include "kaas/kernels/conv2d.h"

#include "kaas/backends/cpu/cpu_features.h"

#include <algorithm>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "kaas/kernels/cpu/conv2d_simd.h"
#include "kaas/kernels/detail/checks.h"
#include "kaas/kernels/detail/impl_tables.h"
#include "kaas/kernels/impl_table.h"

namespace kaas {

using detail::str;

namespace {

constexpr const char* kKernel = "conv2d";

// floor(a / b) for b > 0.
int64_t floor_div(int64_t a, int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

struct Extent1d {
  int64_t out, pad_begin, pad_end;
};

// One spatial dimension under ONNX Conv rules.
Extent1d resolve(AutoPad auto_pad, int64_t in, int64_t kernel, int64_t stride, int64_t dilation,
                 int64_t pad_begin, int64_t pad_end) {
  const int64_t span = (kernel - 1) * dilation + 1;
  switch (auto_pad) {
    case AutoPad::kValid:
      return {floor_div(in - span, stride) + 1, 0, 0};
    case AutoPad::kSameUpper:
    case AutoPad::kSameLower: {
      const int64_t out = (in + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + span - in);
      const int64_t small = total / 2, large = total - small;
      // The odd pad goes at the end for SAME_UPPER, at the beginning for SAME_LOWER.
      return auto_pad == AutoPad::kSameUpper ? Extent1d{out, small, large}
                                             : Extent1d{out, large, small};
    }
    case AutoPad::kNotSet:
      break;
  }
  return {floor_div(in + pad_begin + pad_end - span, stride) + 1, pad_begin, pad_end};
}

void check_params(const Conv2dParams& p) {
  require(p.layout == Layout::kNCHW || p.layout == Layout::kNHWC, kKernel, "layout",
          "kNCHW or kNHWC", str(static_cast<int>(p.layout)));
  require(p.auto_pad == AutoPad::kNotSet || p.auto_pad == AutoPad::kValid ||
              p.auto_pad == AutoPad::kSameUpper || p.auto_pad == AutoPad::kSameLower,
          kKernel, "auto_pad", "kNotSet, kValid, kSameUpper or kSameLower",
          str(static_cast<int>(p.auto_pad)));
  require(p.impl == Conv2dImpl::kAuto || p.impl == Conv2dImpl::kPortable ||
              p.impl == Conv2dImpl::kAvx2 || p.impl == Conv2dImpl::kAvx512 ||
              p.impl == Conv2dImpl::kAvx512Bf16,
          kKernel, "impl", "kAuto, kPortable, kAvx2, kAvx512 or kAvx512Bf16",
          str(static_cast<int>(p.impl)));
  const Activation act = p.epilogue.activation;
  require(act == Activation::kNone || act == Activation::kRelu || act == Activation::kLeakyRelu ||
              act == Activation::kSigmoid,
          kKernel, "epilogue.activation", "none, relu, leaky_relu or sigmoid",
          str(static_cast<int>(act)));
  require(p.stride_h >= 1, kKernel, "stride_h", ">= 1", str(p.stride_h));
  require(p.stride_w >= 1, kKernel, "stride_w", ">= 1", str(p.stride_w));
  require(p.dilation_h >= 1, kKernel, "dilation_h", ">= 1", str(p.dilation_h));
  require(p.dilation_w >= 1, kKernel, "dilation_w", ">= 1", str(p.dilation_w));
  const std::pair<const char*, int64_t> pads[] = {{"pad_top", p.pad_top},
                                                  {"pad_left", p.pad_left},
                                                  {"pad_bottom", p.pad_bottom},
                                                  {"pad_right", p.pad_right}};
  for (const auto& [name, value] : pads) {
    require(value >= 0, kKernel, name, ">= 0", str(value));
    if (p.auto_pad != AutoPad::kNotSet) {
      require(value == 0, kKernel, name, "0 when auto_pad is set", str(value));
    }
  }
  require(p.groups >= 1, kKernel, "groups", ">= 1", str(p.groups));
}

// Logical position of N, C, H, W in the activation extents of `layout`.
struct Axes {
  int n, c, h, w;
};
Axes axes(Layout layout) {
  return layout == Layout::kNCHW ? Axes{0, 1, 2, 3} : Axes{0, 3, 1, 2};
}

// A view of an activation tensor with its dimensions reordered to logical NCHW.
template <class T>
View<T, 4> as_nchw(const View<T, 4>& v, Layout layout) {
  const Axes ax = axes(layout);
  const int order[4] = {ax.n, ax.c, ax.h, ax.w};
  View<T, 4> r;
  r.data = v.data;
  for (int d = 0; d < 4; ++d) {
    r.extent[d] = v.extent[order[d]];
    r.stride[d] = v.stride[order[d]];
  }
  return r;
}

// Checks everything and returns the output shape.
template <class T>
Conv2dShape check_all(const View<const T, 4>& input, const View<const T, 4>& weight,
                      const View<T, 4>& output, const Conv2dParams& params) {
  check_params(params);
  detail::check_view(input, kKernel, "input");
  detail::check_view(weight, kKernel, "weight");
  detail::check_view(output, kKernel, "output");
  const Conv2dShape shape = conv2d_output_shape(params, input.extent, weight.extent);
  const Axes ax = axes(params.layout);
  int64_t expected[4];
  expected[ax.n] = shape.batch;
  expected[ax.c] = shape.out_channels;
  expected[ax.h] = shape.out_h;
  expected[ax.w] = shape.out_w;
  for (int d = 0; d < 4; ++d) {
    require(output.extent[d] == expected[d], kKernel, "output extent[" + str(d) + "]",
            str(expected[d]), str(output.extent[d]));
  }
  return shape;
}

}  // namespace

bool conv2d_avx2_available() {
  return simd::conv2d_nhwc_avx2_compiled() && isa_tier_unavailable(IsaTier::kAvx2).empty();
}

bool conv2d_avx512_available() {
  return simd::conv2d_nhwc_avx512_compiled() && isa_tier_unavailable(IsaTier::kAvx512).empty();
}

bool conv2d_avx512_bf16_available() {
  return simd::conv2d_nhwc_avx512_bf16_compiled() &&
         isa_tier_unavailable(IsaTier::kAvx512Bf16).empty();
}

std::string_view to_string(Conv2dImpl impl) {
  switch (impl) {
    case Conv2dImpl::kAuto:
      return "auto";
    case Conv2dImpl::kPortable:
      return "portable";
    case Conv2dImpl::kAvx2:
      return "avx2";
    case Conv2dImpl::kAvx512:
      return "avx512";
    case Conv2dImpl::kAvx512Bf16:
      return "avx512_bf16";
  }
  return "unknown";
}

std::string_view to_string(Layout layout) {
  return layout == Layout::kNCHW ? "NCHW" : layout == Layout::kNHWC ? "NHWC" : "unknown";
}

std::string_view to_string(AutoPad auto_pad) {
  switch (auto_pad) {
    case AutoPad::kNotSet:
      return "NOTSET";
    case AutoPad::kValid:
      return "VALID";
    case AutoPad::kSameUpper:
      return "SAME_UPPER";
    case AutoPad::kSameLower:
      return "SAME_LOWER";
  }
  return "unknown";
}

Conv2dShape conv2d_output_shape(const Conv2dParams& params, const int64_t (&input_extents)[4],
                                const int64_t (&weight_extents)[4]) {
  check_params(params);
  for (int d = 0; d < 4; ++d) {
    require(input_extents[d] >= 0, kKernel, "input extent[" + str(d) + "]", ">= 0",
            str(input_extents[d]));
    require(weight_extents[d] >= 0, kKernel, "weight extent[" + str(d) + "]", ">= 0",
            str(weight_extents[d]));
  }
  const Axes ax = axes(params.layout);
  Conv2dShape s{};
  s.batch = input_extents[ax.n];
  s.in_channels = input_extents[ax.c];
  s.in_h = input_extents[ax.h];
  s.in_w = input_extents[ax.w];
  s.out_channels = weight_extents[0];
  const int64_t g = params.groups;
  require(s.in_channels % g == 0, kKernel, "input channels",
          "a multiple of groups (" + str(g) + ")", str(s.in_channels));
  require(weight_extents[1] == s.in_channels / g, kKernel, "weight extent[1] (C_in / groups)",
          str(s.in_channels / g), str(weight_extents[1]));
  require(s.out_channels % g == 0, kKernel, "weight extent[0] (C_out)",
          "a multiple of groups (" + str(g) + ")", str(s.out_channels));
  require(weight_extents[2] >= 1, kKernel, "weight extent[2] (kernel height)", ">= 1",
          str(weight_extents[2]));
  require(weight_extents[3] >= 1, kKernel, "weight extent[3] (kernel width)", ">= 1",
          str(weight_extents[3]));
  const Extent1d h = resolve(params.auto_pad, s.in_h, weight_extents[2], params.stride_h,
                             params.dilation_h, params.pad_top, params.pad_bottom);
  const Extent1d w = resolve(params.auto_pad, s.in_w, weight_extents[3], params.stride_w,
                             params.dilation_w, params.pad_left, params.pad_right);
  require(h.out >= 1, kKernel, "output height", ">= 1", str(h.out));
  require(w.out >= 1, kKernel, "output width", ">= 1", str(w.out));
  s.out_h = h.out;
  s.out_w = w.out;
  s.pad_top = h.pad_begin;
  s.pad_bottom = h.pad_end;
  s.pad_left = w.pad_begin;
  s.pad_right = w.pad_end;
  return s;
}

namespace {

// The AVX-512 / AVX2 argument block of a conv2d call (weight and bias as given, fp32).
simd::Conv2dNhwcArgs simd_args(const Queue& queue, const View<const float, 4>& weight,
                               const View1<const float>& bias, const Conv2dParams& params,
                               const Conv2dShape& shape) {
  simd::Conv2dNhwcArgs a{};
  a.weight = weight.data;
  for (int d = 0; d < 4; ++d) a.weight_stride[d] = weight.stride[d];
  a.bias = bias.extent[0] > 0 ? bias.data : nullptr;
  a.bias_stride = bias.stride[0];
  a.batch = shape.batch;
  a.in_channels = shape.in_channels;
  a.in_h = shape.in_h;
  a.in_w = shape.in_w;
  a.out_channels = shape.out_channels;
  a.out_h = shape.out_h;
  a.out_w = shape.out_w;
  a.kernel_h = weight.extent[2];
  a.kernel_w = weight.extent[3];
  a.stride_h = params.stride_h;
  a.stride_w = params.stride_w;
  a.dilation_h = params.dilation_h;
  a.dilation_w = params.dilation_w;
  a.pad_top = shape.pad_top;
  a.pad_left = shape.pad_left;
  a.epilogue = params.epilogue;
  a.threads = traits_of(queue.backend_id()).threads;
  return a;
}

template <class T>
void set_activations(simd::Conv2dNhwcArgs& a, const View<const T, 4>& input,
                     const View<T, 4>& output) {
  a.in_stride_n = input.stride[0];
  a.in_stride_h = input.stride[1];
  a.in_stride_w = input.stride[2];
  a.out_stride_n = output.stride[0];
  a.out_stride_h = output.stride[1];
  a.out_stride_w = output.stride[2];
  if constexpr (std::is_same_v<T, float>) {
    a.input = input.data;
    a.output = output.data;
  } else {
    a.storage = std::is_same_v<T, bf16> ? simd::Conv2dStorage::kBf16 : simd::Conv2dStorage::kFp16;
    a.input16 = reinterpret_cast<const uint16_t*>(input.data);
    a.output16 = reinterpret_cast<uint16_t*>(output.data);
  }
}

// The checked call as the table's rows see it.
template <class T>
struct ConvCall {
  const Queue* queue;
  View<const T, 4> input, weight;
  View1<const float> bias;
  View<T, 4> output;
  const Conv2dParams* params;
  Conv2dShape shape;
  LaunchConfig config;
};

// Why the NHWC direct kernels cannot run the call; empty when they can.
template <class T>
std::string direct_unfit(const ConvCall<T>& c) {
  if (c.params->layout != Layout::kNHWC) return "needs NHWC activations";
  if (c.params->groups != 1) return "needs groups == 1";
  if (!(c.input.extent[3] <= 1 || c.input.stride[3] == 1) ||
      !(c.output.extent[3] <= 1 || c.output.stride[3] == 1)) {
    return "needs channel-contiguous input and output";
  }
  return {};
}

// The direct kernels' measured range (bench/results): the portable kernel wins below 8 channels.
template <class T>
std::string few_channels(const ConvCall<T>& c) {
  return c.shape.out_channels < 8 ? "C_out < 8: the portable kernel is faster there"
                                  : std::string();
}

template <class T>
std::string conv_no_skip(const ConvCall<T>&) {
  return {};
}

// The fast paths run on the calling thread (CPU backends launch synchronously, so the queue's
// order holds); the 16-bit paths take the weights widened to fp32 (exact).
template <class T>
void run_direct(const ConvCall<T>& c, void (*kernel)(const simd::Conv2dNhwcArgs&)) {
  std::vector<float> widened;
  View<const float, 4> weight32;
  const auto& weight = c.weight;
  if constexpr (std::is_same_v<T, float>) {
    weight32 = weight;
  } else {
    widened.resize(static_cast<size_t>(weight.size()));
    size_t i = 0;
    for (int64_t o = 0; o < weight.extent[0]; ++o)
      for (int64_t ci = 0; ci < weight.extent[1]; ++ci)
        for (int64_t h = 0; h < weight.extent[2]; ++h)
          for (int64_t w = 0; w < weight.extent[3]; ++w)
            widened[i++] = math::to_float(weight(o, ci, h, w));
    weight32 =
        make_view<4>(static_cast<const float*>(widened.data()),
                     {weight.extent[0], weight.extent[1], weight.extent[2], weight.extent[3]});
  }
  simd::Conv2dNhwcArgs a = simd_args(*c.queue, weight32, c.bias, *c.params, c.shape);
  set_activations(a, c.input, c.output);
  kernel(a);
}

template <class T>
void run_portable(const ConvCall<T>& c) {
  const Conv2dParams& p = *c.params;
  Conv2dGeometry geometry{p.stride_h,      p.stride_w,       p.dilation_h, p.dilation_w,
                          c.shape.pad_top, c.shape.pad_left, p.groups,     p.epilogue};
  KAAS_LAUNCH(*c.queue, conv2d_launch, *c.queue, as_nchw(c.input, p.layout), c.weight, c.bias,
              as_nchw(c.output, p.layout), geometry, c.config);
}

std::string bf16_pairs_unfit(const ConvCall<bf16>& c) {
  std::string why = direct_unfit(c);
  if (!why.empty()) return why;
  if (c.params->dilation_w != 1) return "needs dilation_w == 1";
  if (!(c.input.extent[3] == 0 || c.input.stride[2] == c.input.extent[3])) {
    return "needs dense input pixels (pixel stride C_in)";
  }
  if (c.weight.extent[3] * c.shape.in_channels > simd::kBf16ConvMaxRowTaps ||
      c.weight.extent[2] > simd::kBf16ConvMaxKernelRows) {
    return "kernel rows of at most " + str(simd::kBf16ConvMaxRowTaps) + " taps and " +
           str(simd::kBf16ConvMaxKernelRows) + " rows";
  }
  return {};
}

// Preference order: the widest direct kernel first; each element type has the rows that exist
// for it (kAvx2 is fp32 only, kAvx512Bf16 bf16 only). kAvx512Bf16 multiplies a kernel row's taps
// in pairs (other bits than the fp32 chain): chosen by name only, where the planner measured it.
template <class T>
ImplTable<Conv2dImpl, ConvCall<T>> conv_table() {
  using Row = ImplRow<Conv2dImpl, ConvCall<T>>;
  static const std::vector<Row> rows = [] {
    std::vector<Row> list;
    if constexpr (std::is_same_v<T, bf16>) {
      list.push_back({Conv2dImpl::kAvx512Bf16, "avx512_bf16", IsaTier::kAvx512Bf16,
                      "vdpbf16ps tap pairs",
                      [](const Queue& q) {
                        return compiled_host_simd(q, simd::conv2d_nhwc_avx512_bf16_compiled());
                      },
                      bf16_pairs_unfit,
                      [](const ConvCall<T>&) {
                        return std::string("chosen by name only (the planner measures it)");
                      },
                      [](const ConvCall<T>& c) { run_direct(c, simd::conv2d_nhwc_avx512_bf16); }});
    }
    list.push_back(
        {Conv2dImpl::kAvx512, "avx512", IsaTier::kAvx512,
         std::is_same_v<T, float> ? "fp32 direct" : "fp32 direct of widened values",
         [](const Queue& q) { return compiled_host_simd(q, simd::conv2d_nhwc_avx512_compiled()); },
         direct_unfit<T>, few_channels<T>,
         [](const ConvCall<T>& c) { run_direct(c, simd::conv2d_nhwc_avx512); }});
    if constexpr (std::is_same_v<T, float>) {
      list.push_back(
          {Conv2dImpl::kAvx2, "avx2", IsaTier::kAvx2, "fp32 direct",
           [](const Queue& q) { return compiled_host_simd(q, simd::conv2d_nhwc_avx2_compiled()); },
           direct_unfit<T>, few_channels<T>,
           [](const ConvCall<T>& c) { run_direct(c, simd::conv2d_nhwc_avx2); }});
    }
    list.push_back({Conv2dImpl::kPortable, "portable", IsaTier::kPortable, "portable", any_backend,
                    always_fits<ConvCall<T>>, conv_no_skip<T>, run_portable<T>});
    return list;
  }();
  const char* choice = std::is_same_v<T, float>  ? "conv2d fp32"
                       : std::is_same_v<T, bf16> ? "conv2d bf16"
                                                 : "conv2d fp16";
  return {choice, kKernel, rows};
}

template <class T>
void conv2d_typed(const Queue& queue, View<const T, 4> input, View<const T, 4> weight,
                  View1<const float> bias, View<T, 4> output, const Conv2dParams& params,
                  const LaunchConfig& config) {
  const Conv2dShape shape = check_all(input, weight, output, params);
  detail::check_view(bias, kKernel, "bias");
  require(bias.extent[0] == 0 || bias.extent[0] == shape.out_channels, kKernel, "bias extent",
          "0 or " + str(shape.out_channels), str(bias.extent[0]));
  detail::check_config(config, kKernel);
  const ConvCall<T> call{&queue, input, weight, bias, output, &params, shape, config};
  const ImplTable<Conv2dImpl, ConvCall<T>> table = conv_table<T>();
  const Conv2dImpl impl = table.choose(params.impl, Conv2dImpl::kAuto, call);
  if (output.size() == 0) return;
  table.run(impl, call);
}

}  // namespace

void conv2d(const Queue& queue, View<const float, 4> input, View<const float, 4> weight,
            View1<const float> bias, View<float, 4> output, const Conv2dParams& params,
            LaunchConfig config) {
  conv2d_typed(queue, input, weight, bias, output, params, config);
}

void conv2d(const Queue& queue, View<const bf16, 4> input, View<const bf16, 4> weight,
            View1<const float> bias, View<bf16, 4> output, const Conv2dParams& params,
            LaunchConfig config) {
  conv2d_typed(queue, input, weight, bias, output, params, config);
}

void conv2d(const Queue& queue, View<const fp16, 4> input, View<const fp16, 4> weight,
            View1<const float> bias, View<fp16, 4> output, const Conv2dParams& params,
            LaunchConfig config) {
  conv2d_typed(queue, input, weight, bias, output, params, config);
}

Conv2dImpl conv2d_chosen_impl(const Queue& queue, View<const float, 4> input,
                              View<const float, 4> weight, View<float, 4> output,
                              const Conv2dParams& params) {
  const Conv2dShape shape = check_all(input, weight, output, params);
  const ConvCall<float> call{&queue, input, weight, {}, output, &params, shape, {}};
  return conv_table<float>().choose(params.impl, Conv2dImpl::kAuto, call);
}

template <class T>
std::vector<std::string> conv_impls_for(const Queue& queue, View<const T, 4> input,
                                        View<const T, 4> weight, View<T, 4> output,
                                        const Conv2dParams& params) {
  const Conv2dShape shape = conv2d_output_shape(params, input.extent, weight.extent);
  const ConvCall<T> call{&queue, input, weight, {}, output, &params, shape, {}};
  return conv_table<T>().runnable(call);
}

std::vector<std::string> conv2d_impls_for(const Queue& queue, View<const float, 4> input,
                                          View<const float, 4> weight, View<float, 4> output,
                                          const Conv2dParams& params) {
  return conv_impls_for(queue, input, weight, output, params);
}
std::vector<std::string> conv2d_impls_for(const Queue& queue, View<const bf16, 4> input,
                                          View<const bf16, 4> weight, View<bf16, 4> output,
                                          const Conv2dParams& params) {
  return conv_impls_for(queue, input, weight, output, params);
}
std::vector<std::string> conv2d_impls_for(const Queue& queue, View<const fp16, 4> input,
                                          View<const fp16, 4> weight, View<fp16, 4> output,
                                          const Conv2dParams& params) {
  return conv_impls_for(queue, input, weight, output, params);
}

std::vector<ImplTableInfo> conv2d_impl_tables() {
  return {conv_table<float>().info(), conv_table<bf16>().info(), conv_table<fp16>().info()};
}

}  // namespace kaas
