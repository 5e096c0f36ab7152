// Reduced-precision cases of kernels/conv2d.h: input, weight and output stored as bf16 or fp16,
// fp32 accumulation and bias. The reference is the fp32 case's double-precision convolution of
// the rounded operands (what the kernel is given); the tolerance is the fp32 one plus half a unit
// in the last place of the 16-bit output.

#include <cmath>
#include <string>

#include "cases/conv2d_cases.h"
#include "cases/guarded.h"
#include "cases/reduced.h"
#include "cases/reference.h"
#include "cases/softmax_cases.h"

namespace kaas::cases {

namespace {

template <class T>
class ReducedConvInstance : public Instance {
 public:
  ReducedConvInstance(const Queue& queue, const ConvCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        shape_(conv_shape(c)),
        data_(conv_data(c, uint32_t(77 + c.batch), false)),
        x_(queue, rounded<T>(data_.x)),
        w_(queue, rounded<T>(data_.w)),
        b_(queue, data_.b),
        y_(queue, size_t(shape_.batch * shape_.out_channels * shape_.out_h * shape_.out_w)) {
    c_.params.impl = conv_impl_from_name(options.impl);
  }
  void run() override {
    int64_t in[4], w[4], out[4];
    conv_input_extents(c_, in);
    conv_weight_extents(c_, w);
    conv_output_extents(c_, shape_, out);
    conv2d(queue_, make_view<4>(static_cast<const T*>(x_.data()), in),
           make_view<4>(static_cast<const T*>(w_.data()), w),
           c_.bias ? b_.const_view() : View1<const float>{}, make_view<4>(y_.data(), out),
           c_.params, options_.config);
  }
  Check check() override {
    ConvData as_given = data_;
    as_given.x = widened(rounded<T>(data_.x));
    as_given.w = widened(rounded<T>(data_.w));
    std::vector<double> y, magnitude;
    conv_reference(c_, shape_, as_given, y, magnitude);
    Checker checker;
    int64_t guard_writes = 0;
    const auto got = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const double u = unit_roundoff<T>();
    for (size_t i = 0; i < got.size(); ++i) {
      const double expected = activation_reference(c_.params.epilogue, y[i]);
      const double allowed = conv_tolerance(c_, magnitude[i]) * (1 + u) + u * std::abs(expected);
      checker.near(math::to_float(got[i]), expected, allowed, "output", int64_t(i));
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  ConvCase c_;
  RunOptions options_;
  Conv2dShape shape_;
  ConvData data_;
  Guarded<T> x_, w_;
  Guarded<float> b_;
  Guarded<T> y_;
};

template <class T>
Case reduced_case(const ConvCase& c, const std::string& type, const std::string& name) {
  const Conv2dShape s = conv_shape(c);
  const double outputs = double(s.batch * s.out_channels * s.out_h * s.out_w);
  const double kred = double(c.in_channels / c.params.groups * c.kernel_h * c.kernel_w);
  Case k;
  k.kernel = "conv2d";
  k.name = "conv2d_" + type + "_" + name;
  k.title = "conv2d " + type + " " + std::to_string(c.kernel_h) + "x" + std::to_string(c.kernel_w) +
            " " + std::to_string(c.in_channels) + "->" + std::to_string(c.out_channels) +
            " N=" + std::to_string(c.batch);
  k.bytes = 2.0 * (double(c.batch * c.in_channels * c.in_h * c.in_w) +
                   double(c.out_channels) * kred + outputs);
  k.flops = 2.0 * outputs * kred;
  k.reference_ops = 2 * k.flops;
  k.reduced_precision = true;
  k.items = double(c.batch);
  k.items_name = "patches_per_s";
  k.impl_tables = {std::is_same_v<T, bf16> ? "conv2d bf16" : "conv2d fp16"};
  k.impls = [c](const Backend& backend) {
    std::vector<std::string> names = {"auto"};
    for (Conv2dImpl impl : conv_case_impls<T>(backend, c)) names.emplace_back(to_string(impl));
    return names;
  };
  k.prepare = [c](const Queue& queue, const RunOptions& options) {
    return std::make_unique<ReducedConvInstance<T>>(queue, c, options);
  };
  return k;
}

}  // namespace

std::vector<Case> conv2d_reduced_cases() {
  ConvCase same{};  // clipped windows (the AVX-512 border path) and a 20-channel masked tail
  same.batch = 2, same.in_channels = 3, same.in_h = 9, same.in_w = 11;
  same.out_channels = 20, same.kernel_h = 3, same.kernel_w = 3, same.bias = true;
  same.params.layout = Layout::kNHWC;
  same.params.auto_pad = AutoPad::kSameUpper;
  same.params.epilogue = {Activation::kLeakyRelu, 0.125f};
  ConvCase strided = same;  // strides and dilation through the AVX-512 input window
  strided.batch = 3, strided.in_h = 13, strided.in_w = 12, strided.out_channels = 35;
  strided.params.stride_h = 2, strided.params.stride_w = 3;
  strided.params.dilation_h = 2, strided.params.dilation_w = 2;
  strided.params.auto_pad = AutoPad::kNotSet;
  strided.params.pad_top = 2, strided.params.pad_left = 1, strided.params.pad_bottom = 1;
  strided.params.pad_right = 2;
  ConvCase grouped{};  // NCHW, groups, strides: the portable kernel only
  grouped.batch = 3, grouped.in_channels = 6, grouped.in_h = 11, grouped.in_w = 13;
  grouped.out_channels = 9, grouped.kernel_h = 3, grouped.kernel_w = 3, grouped.bias = false;
  grouped.params.groups = 3;
  grouped.params.stride_h = grouped.params.stride_w = 2;
  std::vector<Case> cases;
  for (int64_t batch : {int64_t{2}, int64_t{256}}) {
    const std::string name = "emtrk/{backend}/{impl}/batch:" + std::to_string(batch);
    cases.push_back(reduced_case<bf16>(conv_emtrk_layer(batch), "bf16", name));
    cases.push_back(reduced_case<fp16>(conv_emtrk_layer(batch), "f16", name));
  }
  cases.push_back(reduced_case<bf16>(same, "bf16", "nhwc_same/{backend}/{impl}"));
  cases.push_back(reduced_case<fp16>(same, "f16", "nhwc_same/{backend}/{impl}"));
  cases.push_back(reduced_case<bf16>(strided, "bf16", "nhwc_strided/{backend}/{impl}"));
  cases.push_back(reduced_case<fp16>(strided, "f16", "nhwc_strided/{backend}/{impl}"));
  cases.push_back(reduced_case<bf16>(grouped, "bf16", "nchw_g3_s2/{backend}/{impl}"));
  cases.push_back(reduced_case<fp16>(grouped, "f16", "nchw_g3_s2/{backend}/{impl}"));
  return cases;
}

}  // namespace kaas::cases
