#include "kaas/kernels/conv2d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "cases/conv2d_cases.h"
#include "cases/softmax_cases.h"
#include "kaas/backends/backend_traits.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

#if KAAS_TEST_HAVE_EIGEN
#include <Eigen/Dense>
#endif

namespace kaas::testing {
namespace {

class Conv2dTest : public ::testing::TestWithParam<const Backend*> {};

using Case = cases::ConvCase;
using Data = cases::ConvData;
using cases::describe;

Conv2dShape shape_of(const Case& c) {
  return cases::conv_shape(c);
}

#if KAAS_TEST_HAVE_EIGEN
int64_t offset(Layout layout, int64_t C, int64_t H, int64_t W, int64_t n, int64_t c, int64_t h,
               int64_t w) {
  return cases::conv_offset(layout, C, H, W, n, c, h, w);
}

// The same convolution as an im2col matrix times the weight matrix, per group, with Eigen.
std::vector<double> reference_eigen(const Case& c, const Conv2dShape& s, const Data& d) {
  const Layout L = c.params.layout;
  const int64_t g = c.params.groups, cin_g = c.in_channels / g, cout_g = c.out_channels / g;
  const int64_t kred = cin_g * c.kernel_h * c.kernel_w, pixels = s.batch * s.out_h * s.out_w;
  std::vector<double> y(static_cast<size_t>(pixels * s.out_channels), 0.0);
  for (int64_t grp = 0; grp < g; ++grp) {
    Eigen::MatrixXd cols = Eigen::MatrixXd::Zero(kred, pixels);
    for (int64_t n = 0; n < s.batch; ++n)
      for (int64_t oh = 0; oh < s.out_h; ++oh)
        for (int64_t ow = 0; ow < s.out_w; ++ow) {
          const int64_t m = (n * s.out_h + oh) * s.out_w + ow;
          for (int64_t ci = 0; ci < cin_g; ++ci)
            for (int64_t kh = 0; kh < c.kernel_h; ++kh)
              for (int64_t kw = 0; kw < c.kernel_w; ++kw) {
                const int64_t ih = oh * c.params.stride_h - s.pad_top + kh * c.params.dilation_h;
                const int64_t iw = ow * c.params.stride_w - s.pad_left + kw * c.params.dilation_w;
                if (ih < 0 || ih >= s.in_h || iw < 0 || iw >= s.in_w) continue;
                cols((ci * c.kernel_h + kh) * c.kernel_w + kw, m) =
                    d.x[offset(L, c.in_channels, s.in_h, s.in_w, n, grp * cin_g + ci, ih, iw)];
              }
        }
    Eigen::MatrixXd weights(cout_g, kred);
    for (int64_t co = 0; co < cout_g; ++co)
      for (int64_t r = 0; r < kred; ++r) weights(co, r) = d.w[(grp * cout_g + co) * kred + r];
    const Eigen::MatrixXd product = weights * cols;
    for (int64_t co = 0; co < cout_g; ++co)
      for (int64_t m = 0; m < pixels; ++m) {
        const int64_t n = m / (s.out_h * s.out_w), oh = (m / s.out_w) % s.out_h, ow = m % s.out_w;
        const int64_t channel = grp * cout_g + co;
        y[offset(L, s.out_channels, s.out_h, s.out_w, n, channel, oh, ow)] =
            product(co, m) + (c.bias ? d.b[channel] : 0.0);
      }
  }
  return y;
}
#endif

bool is_simd(Conv2dImpl impl) {
  return impl == Conv2dImpl::kAvx2 || impl == Conv2dImpl::kAvx512;
}

// The rows of conv2d's fp32 table that can run `c` on this backend (kernels/conv2d.cc decides).
std::vector<Conv2dImpl> impls_for(const Backend& backend, const Case& c) {
  return cases::conv_case_impls<float>(backend, c);
}

// The CPU fast paths among them.
std::vector<Conv2dImpl> simd_impls(const Backend& backend, const Case& c) {
  std::vector<Conv2dImpl> simd;
  for (Conv2dImpl impl : impls_for(backend, c)) {
    if (is_simd(impl)) simd.push_back(impl);
  }
  return simd;
}

// What kAuto should choose for `c` (with C_out >= 8): the widest fast path (the table lists it
// first), else portable.
Conv2dImpl widest_impl(const Backend& backend, const Case& c) {
  const std::vector<Conv2dImpl> fast = simd_impls(backend, c);
  return fast.empty() ? Conv2dImpl::kPortable : fast.front();
}

// Mirrors the portable launcher's tiling: sync() hand-overs on the emulated GPU.
int64_t estimated_handoffs(const Case& c, const Conv2dShape& s, int group_size) {
  const int64_t cout_g = c.out_channels / c.params.groups;
  int64_t tc = 32, best = (cout_g + 31) / 32 * 32;
  for (int64_t t : {16, 8, 4}) {
    if ((cout_g + t - 1) / t * t < best) tc = t, best = (cout_g + t - 1) / t * t;
  }
  const int64_t tp = 2048 / tc;
  const int64_t tiles =
      c.params.groups * ((cout_g + tc - 1) / tc) * ((s.batch * s.out_h * s.out_w + tp - 1) / tp);
  const int64_t chunks = (c.in_channels / c.params.groups * c.kernel_h * c.kernel_w + 15) / 16;
  return (tiles * (2 * chunks + 1) + 4) * group_size;
}

// Runs `c` with every implementation and group_size, comparing with both references.
// `exact`: integer data, the results must equal the reference bit for bit.
void run_case(const Queue& queue, const Case& c, const Data& d, bool exact,
              const std::vector<int>& group_sizes, int64_t& skipped,
              const std::vector<Conv2dImpl>& only = {}) {
  const Conv2dShape s = shape_of(c);
  std::vector<double> y, magnitude;
  cases::conv_reference(c, s, d, y, magnitude);
#if KAAS_TEST_HAVE_EIGEN
  if (cross_check_references(queue.backend())) {
    const std::vector<double> y_eigen = reference_eigen(c, s, d);
    ASSERT_EQ(y.size(), y_eigen.size());
    for (size_t i = 0; i < y.size(); ++i) {
      ASSERT_NEAR(y[i], y_eigen[i], 1e-9 * (1.0 + magnitude[i])) << "references disagree at " << i;
    }
  }
#endif
  int64_t in[4], out[4], wext[4];
  cases::conv_input_extents(c, in);
  cases::conv_output_extents(c, s, out);
  cases::conv_weight_extents(c, wext);
  for (Conv2dImpl impl : only.empty() ? impls_for(queue.backend(), c) : only) {
    for (int group_size : group_sizes) {
      if (is_simd(impl) && group_size != group_sizes.front()) continue;
      if (impl == Conv2dImpl::kPortable &&
          !affordable(queue.backend(), estimated_handoffs(c, s, group_size ? group_size : 128))) {
        ++skipped;
        continue;
      }
      Case run = c;
      run.params.impl = impl;
      SCOPED_TRACE(describe(run) + " group_size=" + std::to_string(group_size));
      GuardedArray<float> dx(queue, d.x), dw(queue, d.w), db(queue, d.b);
      GuardedArray<float> dy(queue, y.size());
      const View<const float, 4> xv = make_view<4>(static_cast<const float*>(dx.view().data), in);
      const View<const float, 4> wv = make_view<4>(static_cast<const float*>(dw.view().data), wext);
      const View<float, 4> yv = make_view<4>(dy.view().data, out);
      ASSERT_EQ(conv2d_chosen_impl(queue, xv, wv, yv, run.params), impl);
      conv2d(queue, xv, wv, c.bias ? db.const_view() : View1<const float>{}, yv, run.params,
             {group_size, 0});
      const std::vector<float> got = dy.read();
      for (size_t i = 0; i < got.size(); ++i) {
        const double expected = cases::activation_reference(c.params.epilogue, y[i]);
        if (exact) {
          ASSERT_EQ(got[i], static_cast<float>(expected)) << "output " << i;
        } else {
          ASSERT_NEAR(got[i], expected, cases::conv_tolerance(c, magnitude[i])) << "output " << i;
        }
      }
    }
  }
}

Data make_data(const Case& c, uint32_t seed, bool integers) {
  return cases::conv_data(c, seed, integers);
}

// A random case of the given class; resampled until the output is non-empty.
Case random_case(std::mt19937& rng, Layout layout, AutoPad auto_pad, int groups_class,
                 Activation activation, int64_t batch) {
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  for (;;) {
    Case c{};
    c.batch = batch;
    const int64_t groups = groups_class == 0 ? 1 : groups_class == 1 ? pick(2, 3) : pick(2, 5);
    if (groups_class == 2) {  // depthwise: one input channel per group, multiplier 1 or 2
      c.in_channels = groups;
      c.out_channels = groups * pick(1, 2);
    } else {
      c.in_channels = groups * pick(1, 3);
      c.out_channels = groups * pick(1, groups_class == 0 ? 11 : 4);
    }
    c.in_h = pick(1, 9);
    c.in_w = pick(1, 11);
    c.kernel_h = pick(1, 5);
    c.kernel_w = pick(1, 5);
    c.bias = pick(0, 1) == 1;
    Conv2dParams& p = c.params;
    p.layout = layout;
    p.auto_pad = auto_pad;
    p.groups = groups;
    p.stride_h = pick(1, 3);
    p.stride_w = pick(1, 3);
    p.dilation_h = pick(1, 2);
    p.dilation_w = pick(1, 2);
    if (auto_pad == AutoPad::kNotSet) {
      p.pad_top = pick(0, 2), p.pad_left = pick(0, 2);
      p.pad_bottom = pick(0, 2), p.pad_right = pick(0, 2);
    }
    p.epilogue.activation = activation;
    p.epilogue.alpha = 0.125f;
    try {
      shape_of(c);
      return c;
    } catch (const Error&) {
      // output size <= 0: draw again
    }
  }
}

TEST_P(Conv2dTest, EveryCombinationClassMatchesReferences) {
  Queue queue(*GetParam());
  std::mt19937 rng(20240611u);
  int64_t skipped = 0, index = 0;
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC})
    for (AutoPad auto_pad :
         {AutoPad::kNotSet, AutoPad::kValid, AutoPad::kSameUpper, AutoPad::kSameLower})
      for (int groups_class : {0, 1, 2})
        for (Activation act :
             {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu, Activation::kSigmoid}) {
          ++index;
          const int64_t batch = index % 7 == 0 ? 0 : 1 + index % 3;
          const Case c = random_case(rng, layout, auto_pad, groups_class, act, batch);
          const Data d = make_data(c, static_cast<uint32_t>(100 + index), false);
          const std::vector<int> sizes =
              index % 5 == 0 ? std::vector<int>{0, 7} : std::vector<int>{32};
          run_case(queue, c, d, false, sizes, skipped);
          if (HasFatalFailure()) return;
        }
  if (skipped > 0)
    std::printf("[ emulator ] %lld configurations over budget not run\n", (long long)skipped);
}

TEST_P(Conv2dTest, IntegerInputsAreBitExact) {
  Queue queue(*GetParam());
  std::mt19937 rng(77u);
  int64_t skipped = 0;
  int index = 0;
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC})
    for (AutoPad auto_pad : {AutoPad::kNotSet, AutoPad::kSameUpper, AutoPad::kSameLower})
      for (int groups_class : {0, 1, 2})
        for (Activation act : {Activation::kNone, Activation::kRelu, Activation::kLeakyRelu}) {
          ++index;
          const Case c = random_case(rng, layout, auto_pad, groups_class, act, 1 + index % 2);
          run_case(queue, c, make_data(c, static_cast<uint32_t>(900 + index), true), true, {32},
                   skipped);
          if (HasFatalFailure()) return;
        }
  // Wide channel counts through the fast paths' 24-channel (AVX2) and 48-channel (AVX-512)
  // blocks, their narrower last blocks and masked tails; ReLU on each, and each other
  // activation on some (AVX2 stores full blocks with none or ReLU straight from registers).
  const Activation others[] = {Activation::kNone, Activation::kLeakyRelu, Activation::kSigmoid};
  int wide = 0;
  for (int64_t cout : {8, 20, 24, 37, 48, 56, 64, 72, 80, 100})
    for (Activation act : {Activation::kRelu, others[wide++ % 3]}) {
      Case c{};
      c.batch = 2, c.in_channels = 3, c.in_h = 7, c.in_w = 13, c.out_channels = cout;
      c.kernel_h = 3, c.kernel_w = 3, c.bias = true;
      c.params.layout = Layout::kNHWC;
      c.params.pad_top = 1, c.params.pad_left = 2, c.params.pad_right = 1;
      c.params.epilogue = {act, 0.125f};
      run_case(queue, c, make_data(c, static_cast<uint32_t>(cout), true),
               act != Activation::kSigmoid, {64}, skipped);
    }
  if (skipped > 0)
    std::printf("[ emulator ] %lld configurations over budget not run\n", (long long)skipped);
}

TEST_P(Conv2dTest, Batch257SmallSpatial) {
  Queue queue(*GetParam());
  int64_t skipped = 0;
  for (Layout layout : {Layout::kNCHW, Layout::kNHWC}) {
    Case c{};
    c.batch = 257, c.in_channels = 2, c.in_h = 4, c.in_w = 3, c.out_channels = 9;
    c.kernel_h = 3, c.kernel_w = 2, c.bias = true;
    c.params.layout = layout;
    c.params.auto_pad = AutoPad::kSameUpper;
    c.params.epilogue.activation = Activation::kLeakyRelu;
    run_case(queue, c, make_data(c, 5u, false), false, {0}, skipped);
  }
  EXPECT_EQ(skipped, 0);
}

TEST_P(Conv2dTest, EmTrkMichelIdShape) {
  // 5x5, 1 -> 48 channels, VALID, 48x48 NHWC patches, ReLU: the model's first layer.
  Queue queue(*GetParam());
  Case c{};
  c.batch = 2, c.in_channels = 1, c.in_h = 48, c.in_w = 48, c.out_channels = 48;
  c.kernel_h = 5, c.kernel_w = 5, c.bias = true;
  c.params.layout = Layout::kNHWC;
  c.params.auto_pad = AutoPad::kValid;
  c.params.epilogue.activation = Activation::kRelu;
  int64_t skipped = 0;
  run_case(queue, c, make_data(c, 48u, false), false, {0}, skipped);
  run_case(queue, c, make_data(c, 49u, true), true, {0}, skipped);
  EXPECT_EQ(skipped, 0);
  // kAuto takes the fast path where it applies.
  const Conv2dShape s = shape_of(c);
  GuardedArray<float> dx(queue, 2 * 48 * 48), dw(queue, 48 * 25), dy(queue, 2 * 44 * 44 * 48);
  const auto impl = conv2d_chosen_impl(
      queue, make_view<4>(static_cast<const float*>(dx.view().data), {2, 48, 48, 1}),
      make_view<4>(static_cast<const float*>(dw.view().data), {48, 1, 5, 5}),
      make_view<4>(dy.view().data, {2, s.out_h, s.out_w, 48}), c.params);
  EXPECT_EQ(impl, widest_impl(queue.backend(), c));
}

TEST_P(Conv2dTest, Avx512FastPathOnEmTrkShape) {
  const Backend& backend = *GetParam();
  if (!host_simd(backend.id())) {
    GTEST_SKIP() << "the CPU fast paths run on the host CPU backends only";
  }
  if (!conv2d_avx512_available()) {
    GTEST_SKIP() << "this CPU lacks AVX-512 F/BW/VL/DQ (or the OS does not save the zmm "
                    "state): kAvx512 cannot run here; the AVX2 kAvx2 path is still "
                    "tested";
  }
  Queue queue(backend);
  Case c{};
  c.in_channels = 1, c.in_h = 48, c.in_w = 48, c.out_channels = 48;
  c.kernel_h = 5, c.kernel_w = 5, c.bias = true;
  c.params.layout = Layout::kNHWC;
  c.params.auto_pad = AutoPad::kValid;
  c.params.epilogue.activation = Activation::kRelu;
  const std::vector<Conv2dImpl> both = {Conv2dImpl::kAvx2, Conv2dImpl::kAvx512};
  int64_t skipped = 0;
  // Batch 0 (nothing written), 1, and 24: an 8.9 MB output, past the size from which the
  // AVX-512 path writes with non-temporal stores.
  for (int64_t batch : {0, 1, 24}) {
    c.batch = batch;
    run_case(queue, c, make_data(c, static_cast<uint32_t>(480 + batch), false), false, {0}, skipped,
             both);
    run_case(queue, c, make_data(c, static_cast<uint32_t>(490 + batch), true), true, {0}, skipped,
             both);
    if (HasFatalFailure()) return;
  }
  // The guarded arrays above are deliberately misaligned, so the streamed (non-temporal) stores
  // are checked here on 64-byte aligned buffers: an 8.9 MB output, bit for bit equal to the
  // AVX2 path's (both add the same products in the same order).
  {
    c.batch = 24;
    const Data d = make_data(c, 510u, false);
    const size_t ny = static_cast<size_t>(c.batch * 44 * 44 * 48);
    const auto x = to_device(queue, d.x), w = to_device(queue, d.w), b = to_device(queue, d.b);
    const auto xv = make_view<4>(static_cast<const float*>(x.data()), {c.batch, 48, 48, 1});
    const auto wv = make_view<4>(static_cast<const float*>(w.data()), {48, 1, 5, 5});
    const auto bv = make_view(static_cast<const float*>(b.data()), 48);
    std::vector<std::vector<float>> results;
    for (Conv2dImpl impl : both) {
      auto y = make_device_buffer<float>(queue, ny);
      ASSERT_EQ(reinterpret_cast<uintptr_t>(y.data()) % 64, 0u);
      Conv2dParams p = c.params;
      p.impl = impl;
      conv2d(queue, xv, wv, bv, make_view<4>(y.data(), {c.batch, 44, 44, 48}), p);
      queue.wait();
      results.emplace_back(ny);
      copy_to_host(queue, y, std::span<float>(results.back()));
    }
    for (size_t i = 0; i < ny; ++i) {
      ASSERT_TRUE(same_bits(results[0][i], results[1][i]))
          << "output " << i << ": " << results[0][i] << " vs " << results[1][i];
    }
  }
  // Leaky ReLU and sigmoid epilogues without bias on the same shape.
  c.batch = 2, c.bias = false;
  for (Activation act : {Activation::kNone, Activation::kLeakyRelu, Activation::kSigmoid}) {
    c.params.epilogue.activation = act;
    c.params.epilogue.alpha = 0.25f;
    run_case(queue, c, make_data(c, 500u + static_cast<uint32_t>(act), false), false, {0}, skipped,
             both);
    if (HasFatalFailure()) return;
  }
  EXPECT_EQ(skipped, 0);
}

struct Bf16Shape {
  int64_t batch, cin, h, w, cout, kh, kw, stride;
  AutoPad pad;
};

// The bf16 test's inputs as drawn, widened to double for the reference.
struct Bf16Inputs {
  std::vector<bf16> x, w;
  std::vector<float> bias;
};

// The double-precision NHWC convolution + ReLU of the same bf16 values (weights OIHW).
std::vector<double> bf16_conv_reference(const Bf16Shape& sh, const Conv2dShape& s,
                                        const Bf16Inputs& in) {
  std::vector<double> expected(size_t(sh.batch * s.out_h * s.out_w * sh.cout));
  for (int64_t n = 0; n < sh.batch; ++n)
    for (int64_t oh = 0; oh < s.out_h; ++oh)
      for (int64_t ow = 0; ow < s.out_w; ++ow)
        for (int64_t co = 0; co < sh.cout; ++co) {
          double sum = in.bias[size_t(co)];
          for (int64_t kh = 0; kh < sh.kh; ++kh)
            for (int64_t kw = 0; kw < sh.kw; ++kw) {
              const int64_t ih = oh * sh.stride - s.pad_top + kh;
              const int64_t iw = ow * sh.stride - s.pad_left + kw;
              if (ih < 0 || ih >= sh.h || iw < 0 || iw >= sh.w) continue;
              for (int64_t ci = 0; ci < sh.cin; ++ci)
                sum += double(math::to_float(
                           in.x[size_t(((n * sh.h + ih) * sh.w + iw) * sh.cin + ci)])) *
                       math::to_float(in.w[size_t(((co * sh.cin + ci) * sh.kh + kh) * sh.kw + kw)]);
            }
          expected[size_t(((n * s.out_h + oh) * s.out_w + ow) * sh.cout + co)] = std::max(sum, 0.0);
        }
  return expected;
}

// Runs `params` (its impl set) on the device copies and compares image 0 (all images when the
// batch is 1) with the reference: finite, and within one bf16 step.
void expect_bf16_conv_near(const Queue& queue, const Bf16Shape& sh, const Conv2dShape& s,
                           const Conv2dParams& params, const DeviceBuffer<bf16>& dx,
                           const DeviceBuffer<bf16>& dw, const DeviceBuffer<float>& db,
                           const std::vector<double>& expected) {
  auto dy = make_device_buffer<bf16>(queue, expected.size());
  conv2d(queue, make_view<4>(static_cast<const bf16*>(dx.data()), {sh.batch, sh.h, sh.w, sh.cin}),
         make_view<4>(static_cast<const bf16*>(dw.data()), {sh.cout, sh.cin, sh.kh, sh.kw}),
         make_view(static_cast<const float*>(db.data()), sh.cout),
         make_view<4>(dy.data(), {sh.batch, s.out_h, s.out_w, sh.cout}), params);
  queue.wait();
  std::vector<bf16> y(expected.size());
  copy_to_host(queue, dy, std::span<bf16>(y));
  const size_t checked = sh.batch > 1 ? expected.size() / size_t(sh.batch) : expected.size();
  for (size_t i = 0; i < checked; ++i) {
    const double got = math::to_float(y[i]), want = expected[i];
    ASSERT_TRUE(std::isfinite(got)) << "output " << i;
    ASSERT_LE(std::abs(got - want), std::abs(want) * 0x1p-7 + 2e-5)
        << "output " << i << ": " << got << " vs " << want;
  }
}

// bf16 activations: every implementation that applies (portable, the widened AVX-512 kernel and
// the vdpbf16ps pair kernel) against a double-precision convolution of the same bf16 values,
// rounded once to bf16. The fp32 sums may land on the other side of a rounding boundary, so one
// bf16 step (relative 2^-7) is allowed. The shapes cover a kernel row of odd and even taps
// (C_in x kernel_w = 5, 6, 9), a channel tail, stride 2, SAME padding (clipped windows) and every
// pixel block width; +inf right after image 0's last input value is read by no window of
// image 0, so image 0's outputs must stay finite (an odd row's last pair reads one tap only).
TEST_P(Conv2dTest, Bf16ImplementationsAgreeWithDoubleReference) {
  const Backend& backend = *GetParam();
  const Bf16Shape shapes[] = {{2, 1, 48, 48, 48, 5, 5, 1, AutoPad::kValid},
                              {2, 2, 9, 13, 20, 3, 3, 1, AutoPad::kSameUpper},
                              {1, 3, 11, 20, 33, 3, 3, 2, AutoPad::kSameLower},
                              {3, 1, 7, 12, 16, 5, 5, 1, AutoPad::kValid}};
  std::mt19937 rng(77);
  std::uniform_real_distribution<float> u(-2.0f, 2.0f);
  for (const Bf16Shape& sh : shapes) {
    Conv2dParams params;
    params.layout = Layout::kNHWC;
    params.auto_pad = sh.pad;
    params.stride_h = params.stride_w = sh.stride;
    params.epilogue.activation = Activation::kRelu;
    const int64_t in_ext[4] = {sh.batch, sh.h, sh.w, sh.cin};
    const int64_t w_ext[4] = {sh.cout, sh.cin, sh.kh, sh.kw};
    const Conv2dShape s = conv2d_output_shape(params, in_ext, w_ext);
    Bf16Inputs in{std::vector<bf16>(size_t(sh.batch * sh.h * sh.w * sh.cin)),
                  std::vector<bf16>(size_t(sh.cout * sh.cin * sh.kh * sh.kw)),
                  std::vector<float>(size_t(sh.cout))};
    for (auto& v : in.x) v = math::to_bf16(u(rng));
    for (auto& v : in.w) v = math::to_bf16(u(rng) * 0.5f);
    for (auto& v : in.bias) v = u(rng);
    const size_t image = size_t(sh.h * sh.w * sh.cin);
    if (sh.batch > 1) in.x[image] = math::to_bf16(INFINITY);  // image 1's first value
    const std::vector<double> expected = bf16_conv_reference(sh, s, in);
    Queue queue(backend);
    const auto dx = to_device(queue, in.x), dw = to_device(queue, in.w);
    const auto db = to_device(queue, in.bias);
    std::vector<Conv2dImpl> impls = {Conv2dImpl::kPortable};
    const bool cpu = host_simd(backend.id());
    if (cpu && conv2d_avx512_available()) impls.push_back(Conv2dImpl::kAvx512);
    if (cpu && conv2d_avx512_bf16_available()) impls.push_back(Conv2dImpl::kAvx512Bf16);
    for (Conv2dImpl impl : impls) {
      SCOPED_TRACE(std::string(to_string(impl)) + " on " + std::to_string(sh.batch) + "x" +
                   std::to_string(sh.h) + "x" + std::to_string(sh.w) + "x" +
                   std::to_string(sh.cin) + " kernel " + std::to_string(sh.kh) + "x" +
                   std::to_string(sh.kw) + " -> " + std::to_string(sh.cout));
      params.impl = impl;
      expect_bf16_conv_near(queue, sh, s, params, dx, dw, db, expected);
      if (HasFatalFailure()) return;
    }
  }
}

TEST(Conv2dShapeTest, OnnxPaddingRules) {
  Conv2dParams p;
  const int64_t w[4] = {4, 3, 3, 3};
  {
    p.auto_pad = AutoPad::kSameUpper;
    p.stride_h = p.stride_w = 2;
    const Conv2dShape s = conv2d_output_shape(p, {1, 3, 6, 5}, w);
    EXPECT_EQ(s.out_h, 3);  // ceil(6 / 2); total pad 1: 0 before, 1 after
    EXPECT_EQ(s.pad_top, 0);
    EXPECT_EQ(s.pad_bottom, 1);
    EXPECT_EQ(s.out_w, 3);  // ceil(5 / 2); total pad 2
    EXPECT_EQ(s.pad_left, 1);
    EXPECT_EQ(s.pad_right, 1);
  }
  {
    p.auto_pad = AutoPad::kSameLower;
    const Conv2dShape s = conv2d_output_shape(p, {1, 3, 6, 5}, w);
    EXPECT_EQ(s.pad_top, 1);
    EXPECT_EQ(s.pad_bottom, 0);
  }
  {
    p.auto_pad = AutoPad::kValid;
    p.stride_h = p.stride_w = 1;
    p.dilation_h = 2;
    p.layout = Layout::kNHWC;
    const Conv2dShape s = conv2d_output_shape(p, {2, 7, 5, 3}, w);
    EXPECT_EQ(s.out_h, 3);  // 7 - (2 * 2 + 1) + 1
    EXPECT_EQ(s.out_w, 3);
    EXPECT_EQ(s.batch, 2);
    EXPECT_EQ(s.out_channels, 4);
  }
  {
    Conv2dParams q;
    q.pad_top = 1, q.pad_bottom = 2, q.stride_h = 3;
    const Conv2dShape s = conv2d_output_shape(q, {1, 3, 10, 3}, w);
    EXPECT_EQ(s.out_h, (10 + 3 - 3) / 3 + 1);
    EXPECT_EQ(s.out_w, 1);
  }
}

void expect_error(const std::function<void()>& f, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "accepted; expected: " << message;
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()), message);
  }
}

// The buffers of the bad-input test and views of them with any extents (the checks come first).
struct BadCallRig {
  explicit BadCallRig(const Backend& backend)
      : queue(backend),
        dx(queue, 2 * 4 * 6 * 6),
        dw(queue, 8 * 4 * 3 * 3),
        db(queue, 8),
        dy(queue, 2 * 8 * 4 * 4) {}

  static void copy_extents(std::initializer_list<int64_t> e, int64_t* ext) {
    std::copy(e.begin(), e.end(), ext);
  }
  View<const float, 4> x(std::initializer_list<int64_t> e) const {
    int64_t ext[4];
    copy_extents(e, ext);
    return make_view<4>(static_cast<const float*>(dx.view().data), ext);
  }
  View<const float, 4> w(std::initializer_list<int64_t> e) const {
    int64_t ext[4];
    copy_extents(e, ext);
    return make_view<4>(static_cast<const float*>(dw.view().data), ext);
  }
  View<float, 4> y(std::initializer_list<int64_t> e) const {
    int64_t ext[4];
    copy_extents(e, ext);
    return make_view<4>(dy.view().data, ext);
  }
  View1<const float> bias(int64_t n) const {
    return make_view(static_cast<const float*>(db.view().data), n);
  }
  // The good call's parameters with `change` applied.
  template <class Change>
  static Conv2dParams with(Change change) {
    Conv2dParams p;
    change(p);
    return p;
  }
  // The good call's tensors, no bias, with parameters p.
  std::function<void()> call(const Conv2dParams& p) const {
    return [this, p] {
      conv2d(queue, x({2, 4, 6, 6}), w({8, 4, 3, 3}), View1<const float>{}, y({2, 8, 4, 4}), p);
    };
  }

  Queue queue;
  GuardedArray<float> dx, dw, db, dy;
};

void expect_parameter_errors(const BadCallRig& r) {
  using P = Conv2dParams;
  expect_error(r.call(r.with([](P& p) { p.stride_h = 0; })),
               "conv2d: stride_h: expected >= 1, received 0");
  expect_error(r.call(r.with([](P& p) { p.stride_w = -2; })),
               "conv2d: stride_w: expected >= 1, received -2");
  expect_error(r.call(r.with([](P& p) { p.dilation_h = 0; })),
               "conv2d: dilation_h: expected >= 1, received 0");
  expect_error(r.call(r.with([](P& p) { p.dilation_w = -1; })),
               "conv2d: dilation_w: expected >= 1, received -1");
  expect_error(r.call(r.with([](P& p) { p.pad_left = -1; })),
               "conv2d: pad_left: expected >= 0, received -1");
  expect_error(r.call(r.with([](P& p) { p.pad_bottom = -3; })),
               "conv2d: pad_bottom: expected >= 0, received -3");
  expect_error(r.call(r.with([](P& p) {
    p.auto_pad = AutoPad::kValid;
    p.pad_top = 1;
  })),
               "conv2d: pad_top: expected 0 when auto_pad is set, received 1");
  expect_error(r.call(r.with([](P& p) { p.groups = 0; })),
               "conv2d: groups: expected >= 1, received 0");
  expect_error(r.call(r.with([](P& p) { p.groups = 3; })),
               "conv2d: input channels: expected a multiple of groups (3), received 4");
  expect_error(r.call(r.with([](P& p) { p.auto_pad = static_cast<AutoPad>(9); })),
               "conv2d: auto_pad: expected kNotSet, kValid, kSameUpper or kSameLower, received 9");
  expect_error(
      r.call(r.with([](P& p) { p.epilogue.activation = static_cast<Activation>(7); })),
      "conv2d: epilogue.activation: expected none, relu, leaky_relu or sigmoid, received 7");
  // groups = 2 with a weight for groups = 1.
  expect_error(r.call(r.with([](P& p) { p.groups = 2; })),
               "conv2d: weight extent[1] (C_in / groups): expected 2, received 4");
}

void expect_extent_errors(const BadCallRig& r) {
  const Conv2dParams ok;
  const View1<const float> no_bias{};
  const auto& q = r.queue;
  expect_error(
      [&] {
        Conv2dParams p = ok;
        p.groups = 2;
        conv2d(q, r.x({2, 4, 6, 6}), r.w({7, 2, 3, 3}), no_bias, r.y({2, 7, 4, 4}), p);
      },
      "conv2d: weight extent[0] (C_out): expected a multiple of groups (2), received 7");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 3, 6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}), ok);
      },
      "conv2d: weight extent[1] (C_in / groups): expected 3, received 4");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 0, 3}), no_bias, r.y({2, 8, 4, 4}), ok);
      },
      "conv2d: weight extent[2] (kernel height): expected >= 1, received 0");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 2, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}), ok);
      },
      "conv2d: output height: expected >= 1, received 0");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}),
               r.with([](Conv2dParams& p) {
                 p.auto_pad = AutoPad::kValid;
                 p.dilation_w = 3;
               }));
      },
      "conv2d: output width: expected >= 1, received 0");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 5}), ok);
      },
      "conv2d: output extent[3]: expected 4, received 5");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 6, 6, 4}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}),
               r.with([](Conv2dParams& p) { p.layout = Layout::kNHWC; }));
      },
      "conv2d: output extent[1]: expected 4, received 8");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), r.bias(5), r.y({2, 8, 4, 4}), ok);
      },
      "conv2d: bias extent: expected 0 or 8, received 5");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, -6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}), ok);
      },
      "conv2d: input extent[2]: expected >= 0, received -6");
}

void expect_impl_errors(const BadCallRig& r) {
  const View1<const float> no_bias{};
  const auto& q = r.queue;
  // A fast path asked for an NCHW call: the table names the first reason it cannot run, the
  // tier (this CPU, KAAS_MAX_CPU_ISA), the backend, then the call.
  const auto refusal = [&](IsaTier tier, const char* name) {
    std::string why = isa_tier_unavailable(tier);
    if (why.empty() && !host_simd(q.backend_id())) {
      why = "backend " + std::string(q.backend().name()) +
            " runs no host SIMD code (serial, openmp and tbb do)";
    }
    if (why.empty()) why = "needs NHWC activations";
    return "conv2d fp32: impl " + std::string(name) + " cannot run here: " + why;
  };
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}),
               r.with([](Conv2dParams& p) { p.impl = Conv2dImpl::kAvx2; }));
      },
      refusal(IsaTier::kAvx2, "avx2"));
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}),
               r.with([](Conv2dParams& p) { p.impl = Conv2dImpl::kAvx512; }));
      },
      refusal(IsaTier::kAvx512, "avx512"));
  expect_error(
      r.call(r.with([](Conv2dParams& p) { p.impl = static_cast<Conv2dImpl>(9); })),
      "conv2d: impl: expected kAuto, kPortable, kAvx2, kAvx512 or kAvx512Bf16, received 9");
  expect_error(
      [&] {
        conv2d(q, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), no_bias, r.y({2, 8, 4, 4}), Conv2dParams{},
               {-1, 0});
      },
      "conv2d: LaunchConfig.group_size: expected >= 0 (0 = default), received -1");
}

TEST_P(Conv2dTest, BadInputIsRejectedBeforeLaunch) {
  const BadCallRig r(*GetParam());
  const Conv2dParams ok;
  // The good call works.
  conv2d(r.queue, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), r.bias(8), r.y({2, 8, 4, 4}), ok);
  expect_parameter_errors(r);
  expect_extent_errors(r);
  expect_impl_errors(r);
  // Nothing was written by the rejected calls after the good one: the output is unchanged.
  const auto before = r.dy.read();
  expect_error(
      [&] {
        conv2d(r.queue, r.x({2, 4, 6, 6}), r.w({8, 4, 3, 3}), r.bias(3), r.y({2, 8, 4, 4}), ok);
      },
      "conv2d: bias extent: expected 0 or 8, received 3");
  const auto after = r.dy.read();
  for (size_t i = 0; i < before.size(); ++i) ASSERT_TRUE(same_bits(before[i], after[i]));
}

// Every case of cases/conv2d_cases.cc, with every implementation, against its host reference.
TEST_P(Conv2dTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "conv2d");
}

KAAS_INSTANTIATE_FOR_BACKENDS(Conv2dTest);

}  // namespace
}  // namespace kaas::testing
