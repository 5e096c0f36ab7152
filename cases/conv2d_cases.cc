#include "cases/conv2d_cases.h"
#include "kaas/backends/backend_traits.h"

#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "cases/softmax_cases.h"
#include "kaas/common/error.h"

namespace kaas::cases {

std::string describe(const ConvCase& c) {
  const Conv2dParams& p = c.params;
  return "N=" + std::to_string(c.batch) + " C_in=" + std::to_string(c.in_channels) +
         " H=" + std::to_string(c.in_h) + " W=" + std::to_string(c.in_w) +
         " C_out=" + std::to_string(c.out_channels) + " K=" + std::to_string(c.kernel_h) + "x" +
         std::to_string(c.kernel_w) + " stride=" + std::to_string(p.stride_h) + "," +
         std::to_string(p.stride_w) + " dilation=" + std::to_string(p.dilation_h) + "," +
         std::to_string(p.dilation_w) + " pads=" + std::to_string(p.pad_top) + "," +
         std::to_string(p.pad_left) + "," + std::to_string(p.pad_bottom) + "," +
         std::to_string(p.pad_right) + " auto_pad=" + std::string(to_string(p.auto_pad)) +
         " groups=" + std::to_string(p.groups) + " layout=" + std::string(to_string(p.layout)) +
         " act=" + std::string(to_string(p.epilogue.activation)) +
         " bias=" + (c.bias ? "yes" : "no") + " impl=" + std::string(to_string(p.impl));
}

KAAS_REFERENCE_LOOP int64_t conv_offset(Layout layout, int64_t C, int64_t H, int64_t W, int64_t n,
                                        int64_t c, int64_t h, int64_t w) {
  return layout == Layout::kNCHW ? ((n * C + c) * H + h) * W + w : ((n * H + h) * W + w) * C + c;
}

void conv_input_extents(const ConvCase& c, int64_t (&e)[4]) {
  if (c.params.layout == Layout::kNCHW) {
    e[0] = c.batch, e[1] = c.in_channels, e[2] = c.in_h, e[3] = c.in_w;
  } else {
    e[0] = c.batch, e[1] = c.in_h, e[2] = c.in_w, e[3] = c.in_channels;
  }
}

void conv_output_extents(const ConvCase& c, const Conv2dShape& s, int64_t (&e)[4]) {
  if (c.params.layout == Layout::kNCHW) {
    e[0] = s.batch, e[1] = s.out_channels, e[2] = s.out_h, e[3] = s.out_w;
  } else {
    e[0] = s.batch, e[1] = s.out_h, e[2] = s.out_w, e[3] = s.out_channels;
  }
}

void conv_weight_extents(const ConvCase& c, int64_t (&e)[4]) {
  e[0] = c.out_channels, e[1] = c.in_channels / c.params.groups, e[2] = c.kernel_h,
  e[3] = c.kernel_w;
}

Conv2dShape conv_shape(const ConvCase& c) {
  int64_t in[4], w[4];
  conv_input_extents(c, in);
  conv_weight_extents(c, w);
  return conv2d_output_shape(c.params, in, w);
}

ConvData conv_data(const ConvCase& c, uint32_t seed, bool integers) {
  const size_t nx = static_cast<size_t>(c.batch * c.in_channels * c.in_h * c.in_w);
  const size_t nw = static_cast<size_t>(c.out_channels * (c.in_channels / c.params.groups) *
                                        c.kernel_h * c.kernel_w);
  const size_t nb = c.bias ? static_cast<size_t>(c.out_channels) : 0;
  if (integers) {
    return {random_integers<float>(nx, seed, -4, 4), random_integers<float>(nw, seed + 1, -3, 3),
            random_integers<float>(nb, seed + 2, -8, 8)};
  }
  return {random_floats(nx, seed), random_floats(nw, seed + 1), random_floats(nb, seed + 2)};
}

namespace {

KAAS_REFERENCE_LOOP void conv_reference_loops(const ConvCase& c, const Conv2dShape& s,
                                              const float* x, const float* w, const float* bias,
                                              double* y, double* magnitude) {
  const Layout L = c.params.layout;
  const int64_t g = c.params.groups, cin_g = c.in_channels / g, cout_g = c.out_channels / g;
  // x's strides (conv_offset's arithmetic, hoisted out of the innermost loop).
  const bool nchw = L == Layout::kNCHW;
  const int64_t x_n = c.in_channels * s.in_h * s.in_w, x_c = nchw ? s.in_h * s.in_w : 1,
                x_h = nchw ? s.in_w : s.in_w * c.in_channels, x_w = nchw ? 1 : c.in_channels;
  for (int64_t n = 0; n < s.batch; ++n)
    for (int64_t co = 0; co < s.out_channels; ++co)
      for (int64_t oh = 0; oh < s.out_h; ++oh)
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          double sum = bias ? bias[co] : 0.0, mag = bias ? __builtin_fabs(bias[co]) : 0.0;
          const int64_t grp = co / cout_g;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t kh = 0; kh < c.kernel_h; ++kh)
              for (int64_t kw = 0; kw < c.kernel_w; ++kw) {
                const int64_t ih = oh * c.params.stride_h - s.pad_top + kh * c.params.dilation_h;
                const int64_t iw = ow * c.params.stride_w - s.pad_left + kw * c.params.dilation_w;
                if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                const double a = x[n * x_n + (grp * cin_g + ci) * x_c + ih * x_h + iw * x_w];
                const double b = w[((co * cin_g + ci) * c.kernel_h + kh) * c.kernel_w + kw];
                sum += a * b;
                mag += __builtin_fabs(a * b);  // std::abs would not inline here
              }
          const int64_t o = conv_offset(L, s.out_channels, s.out_h, s.out_w, n, co, oh, ow);
          y[o] = sum;
          magnitude[o] = mag;
        }
}

}  // namespace

void conv_reference(const ConvCase& c, const Conv2dShape& s, const ConvData& d,
                    std::vector<double>& y, std::vector<double>& magnitude) {
  y.assign(static_cast<size_t>(s.batch * s.out_channels * s.out_h * s.out_w), 0.0);
  magnitude.assign(y.size(), 0.0);
  conv_reference_loops(c, s, d.x.data(), d.w.data(), c.bias ? d.b.data() : nullptr, y.data(),
                       magnitude.data());
}

double conv_tolerance(const ConvCase& c, double magnitude) {
  const int64_t kred = c.in_channels / c.params.groups * c.kernel_h * c.kernel_w + 1;
  return reduction_tolerance(kred, magnitude) + 4e-7;  // + the activation's own rounding
}

template <class T>
std::vector<Conv2dImpl> conv_case_impls(const Backend& backend, const ConvCase& c) {
  int64_t in[4], weight[4], out[4];
  conv_input_extents(c, in);
  conv_weight_extents(c, weight);
  conv_output_extents(c, conv_shape(c), out);
  const Queue queue(backend);
  const T* none = nullptr;
  std::vector<Conv2dImpl> impls;
  for (const std::string& name :
       conv2d_impls_for(queue, make_view<4>(none, in), make_view<4>(none, weight),
                        make_view<4>(static_cast<T*>(nullptr), out), c.params))
    impls.push_back(conv_impl_from_name(name));
  return impls;
}
template std::vector<Conv2dImpl> conv_case_impls<float>(const Backend&, const ConvCase&);
template std::vector<Conv2dImpl> conv_case_impls<bf16>(const Backend&, const ConvCase&);
template std::vector<Conv2dImpl> conv_case_impls<fp16>(const Backend&, const ConvCase&);

Conv2dImpl conv_impl_from_name(std::string_view name) {
  for (Conv2dImpl impl : {Conv2dImpl::kAuto, Conv2dImpl::kPortable, Conv2dImpl::kAvx2,
                          Conv2dImpl::kAvx512, Conv2dImpl::kAvx512Bf16}) {
    if (to_string(impl) == name) return impl;
  }
  throw Error(ErrorCode::kInvalidArgument,
              "conv2d case: impl: expected a Conv2dImpl name, received " + std::string(name));
}

namespace {

class ConvInstance : public Instance {
 public:
  ConvInstance(const Queue& queue, const ConvCase& c, bool integers, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        shape_(conv_shape(c)),
        data_(conv_data(c, uint32_t(48 + c.batch), integers)),
        exact_(integers),
        x_(queue, data_.x),
        w_(queue, data_.w),
        b_(queue, data_.b),
        y_(queue, size_t(shape_.batch * shape_.out_channels * shape_.out_h * shape_.out_w)) {
    c_.params.impl = conv_impl_from_name(options.impl);
  }
  void run() override {
    int64_t in[4], w[4], out[4];
    conv_input_extents(c_, in);
    conv_weight_extents(c_, w);
    conv_output_extents(c_, shape_, out);
    conv2d(queue_, make_view<4>(static_cast<const float*>(x_.data()), in),
           make_view<4>(static_cast<const float*>(w_.data()), w),
           c_.bias ? b_.const_view() : View1<const float>{}, make_view<4>(y_.data(), out),
           c_.params, options_.config);
  }
  Check check() override {
    std::vector<double> y, magnitude;
    conv_reference(c_, shape_, data_, y, magnitude);
    Checker checker;
    int64_t guard_writes = 0;
    const auto got = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    for (size_t i = 0; i < got.size(); ++i) {
      const double expected = activation_reference(c_.params.epilogue, y[i]);
      if (exact_) {
        checker.exact(got[i], float(expected), "output", int64_t(i));
      } else {
        checker.near(got[i], expected, conv_tolerance(c_, magnitude[i]), "output", int64_t(i));
      }
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  ConvCase c_;
  RunOptions options_;
  Conv2dShape shape_;
  ConvData data_;
  bool exact_;
  Guarded<float> x_, w_, b_, y_;
};

}  // namespace

ConvCase conv_emtrk_layer(int64_t batch) {
  ConvCase c{};
  c.batch = batch, c.in_channels = 1, c.in_h = 48, c.in_w = 48, c.out_channels = 48;
  c.kernel_h = 5, c.kernel_w = 5, c.bias = true;
  c.params.layout = Layout::kNHWC;
  c.params.auto_pad = AutoPad::kValid;
  c.params.epilogue.activation = Activation::kRelu;
  return c;
}

std::vector<int64_t> conv_emtrk_batches() {
  return {1, 16, 64, 256, 1024};
}

namespace {

Case make_case(const ConvCase& c, bool integers, std::string name) {
  const Conv2dShape s = conv_shape(c);
  const double outputs = double(s.batch * s.out_channels * s.out_h * s.out_w);
  const double kred = double(c.in_channels / c.params.groups * c.kernel_h * c.kernel_w);
  Case k;
  k.kernel = "conv2d";
  k.name = std::move(name);
  k.title = "conv2d " + std::to_string(c.kernel_h) + "x" + std::to_string(c.kernel_w) + " " +
            std::to_string(c.in_channels) + "->" + std::to_string(c.out_channels) +
            " N=" + std::to_string(c.batch);
  k.bytes = 4.0 * (double(c.batch * c.in_channels * c.in_h * c.in_w) +
                   double(c.out_channels) * kred + outputs);
  k.flops = 2.0 * outputs * kred;
  k.reference_ops = 2 * k.flops;
  k.items = double(c.batch);
  k.items_name = "patches_per_s";
  k.impl_tables = {"conv2d fp32"};
  k.impls = [c](const Backend& backend) {
    std::vector<std::string> names = {"auto"};
    for (Conv2dImpl impl : conv_case_impls<float>(backend, c)) names.emplace_back(to_string(impl));
    return names;
  };
  k.prepare = [c, integers](const Queue& queue, const RunOptions& options) {
    return std::make_unique<ConvInstance>(queue, c, integers, options);
  };
  return k;
}

}  // namespace

std::vector<Case> conv2d_cases() {
  std::vector<Case> cases = {
      make_case(conv_emtrk_layer(2), true, "conv2d_emtrk_int/{backend}/{impl}/batch:2")};
  for (int64_t batch : conv_emtrk_batches()) {
    cases.push_back(make_case(conv_emtrk_layer(batch), false,
                              "conv2d_emtrk/{backend}/{impl}/batch:" + std::to_string(batch)));
  }
  ConvCase grouped{};
  grouped.batch = 3, grouped.in_channels = 6, grouped.in_h = 11, grouped.in_w = 13;
  grouped.out_channels = 9, grouped.kernel_h = 3, grouped.kernel_w = 3, grouped.bias = true;
  grouped.params.groups = 3;
  grouped.params.stride_h = grouped.params.stride_w = 2;
  grouped.params.auto_pad = AutoPad::kSameUpper;
  grouped.params.epilogue = {Activation::kLeakyRelu, 0.125f};
  cases.push_back(make_case(grouped, false, "conv2d_nchw_g3_s2/{backend}/{impl}"));
  for (Case& k : conv2d_reduced_cases()) cases.push_back(std::move(k));
  return cases;
}

}  // namespace kaas::cases
