#include "cases/sparse_conv_dense_cases.h"

#include <algorithm>
#include <cmath>
#include <random>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "cases/uniform.h"
#include "kaas/kernels/scan.h"
#include "kaas/kernels/sparse_conv_dense.h"

namespace kaas::cases {

namespace {

struct Inputs {
  std::vector<float> x, conv_w, conv_b, w1, b1;
};

Inputs make_inputs(const SparseConvDenseCase& c) {
  const int64_t oh = c.height - c.kernel + 1, ow = c.width - c.kernel + 1;
  const int64_t k = oh * ow * c.conv_channels;
  const uint32_t seed = uint32_t(c.patches * 13 + c.height + int64_t(c.occupancy * 1000));
  Inputs in;
  in.x.assign(size_t(c.patches * c.height * c.width), 0.0f);
  std::mt19937 rng(seed);
  std::bernoulli_distribution charged(c.occupancy);
  for (float& v : in.x)
    if (charged(rng)) v = uniform_float(rng, 0.1f, 15.0f);  // the network's scaled ADC range
  in.conv_w = random_floats(size_t(c.conv_channels * c.kernel * c.kernel), seed + 1, -0.3f, 0.3f);
  in.conv_b = random_floats(size_t(c.conv_channels), seed + 2, -0.2f, 0.2f);
  const float scale = 1.0f / std::sqrt(float(k));
  in.w1 = random_floats(size_t(k * c.n1), seed + 3, -scale, scale);
  in.b1 = random_floats(size_t(c.n1), seed + 4, -0.1f, 0.1f);
  return in;
}

class SparseConvDenseInstance : public Instance {
 public:
  SparseConvDenseInstance(const Queue& queue, const SparseConvDenseCase& c, SparseImpl impl)
      : queue_(queue),
        c_(c),
        impl_(impl),
        in_(make_inputs(c)),
        oh_(c.height - c.kernel + 1),
        ow_(c.width - c.kernel + 1),
        total_(c.patches * oh_ * ow_),
        conv_constant_(sparse_conv_constant(in_.conv_b, c.conv_channels, kRelu)),
        x_(queue, in_.x),
        conv_w_(queue, in_.conv_w),
        conv_b_(queue, in_.conv_b),
        w1_(queue, in_.w1),
        cc_(queue, conv_constant_),
        dc_(queue, sparse_dense1_constant(conv_constant_, in_.w1.data(),
                                          oh_ * ow_ * c.conv_channels, c.n1, in_.b1.data())),
        delta_(queue, size_t(total_ * c.conv_channels)),
        out_(queue, size_t(c.patches * c.n1)),
        index_(queue, size_t(total_)),
        offsets_(queue, size_t(total_)),
        scan_(queue, size_t(exclusive_scan_workspace_size(queue, total_))),
        positions_(queue, size_t(total_)),
        image_(queue, iota(c.patches)),
        origin_(queue, std::vector<int32_t>(size_t(c.patches), 0)) {}

  void run() override {
    const auto images = make_view<4>(static_cast<const float*>(x_.data()),
                                     {c_.patches, c_.height, c_.width, int64_t(1)});
    const auto index = make_view<3>(index_.data(), {c_.patches, oh_, ow_});
    const int64_t count = sparse_conv_index(queue_, images, c_.kernel, c_.kernel, index,
                                            offsets_.view(), scan_.view(), positions_.view());
    SparseConvWeights conv;
    conv.conv_weight = make_view<4>(static_cast<const float*>(conv_w_.data()),
                                    {c_.conv_channels, int64_t(1), c_.kernel, c_.kernel});
    conv.conv_bias = conv_b_.const_view();
    conv.conv_epilogue = kRelu;
    conv.conv_constant = cc_.const_view();
    const auto delta = make_view<2>(delta_.data(), {count, c_.conv_channels});
    sparse_conv_delta(queue_, images, conv,
                      make_view(static_cast<const int32_t*>(positions_.data()), count), delta, {},
                      impl_);
    const SparseWindows windows{image_.const_view(), origin_.const_view(), origin_.const_view(),
                                oh_, ow_};
    const SparseDense1Weights dense1{
        make_view<2>(static_cast<const float*>(w1_.data()), {oh_ * ow_ * c_.conv_channels, c_.n1}),
        dc_.const_view(), kRelu};
    sparse_dense1(queue_, View<const int32_t, 3>(index), View2<const float>(delta), 0, windows,
                  dense1, make_view<2>(out_.data(), {c_.patches, c_.n1}), {}, impl_);
  }

  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto out = out_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const int64_t k = oh_ * ow_ * c_.conv_channels;
    std::vector<double> conv(static_cast<size_t>(k));
    for (int64_t p = 0; p < c_.patches; ++p) {
      for (int64_t y = 0; y < oh_; ++y)
        for (int64_t x = 0; x < ow_; ++x)
          for (int64_t o = 0; o < c_.conv_channels; ++o) {
            double s = in_.conv_b[size_t(o)];
            for (int64_t dy = 0; dy < c_.kernel; ++dy)
              for (int64_t dx = 0; dx < c_.kernel; ++dx)
                s += double(in_.conv_w[size_t((o * c_.kernel + dy) * c_.kernel + dx)]) *
                     in_.x[size_t((p * c_.height + y + dy) * c_.width + x + dx)];
            conv[size_t((y * ow_ + x) * c_.conv_channels + o)] = std::max(s, 0.0);
          }
      for (int64_t j = 0; j < c_.n1; ++j) {
        double s = in_.b1[size_t(j)], magnitude = std::abs(s);
        for (int64_t i = 0; i < k; ++i) {
          s += conv[size_t(i)] * in_.w1[size_t(i * c_.n1 + j)];
          magnitude += std::abs(conv[size_t(i)] * in_.w1[size_t(i * c_.n1 + j)]);
        }
        // The conv's own rounding (25 terms) carried through W1 is inside the same bound.
        checker.near(out[size_t(p * c_.n1 + j)], std::max(s, 0.0),
                     reduction_tolerance(k + c_.kernel * c_.kernel, 2 * magnitude), "dense1",
                     p * c_.n1 + j);
      }
    }
    return checker.result();
  }

  std::string label() const override {
    return impl_ == SparseImpl::kAuto ? sparse_dense1_impl(queue_, c_.n1)
                                      : std::string(to_string(impl_));
  }

 private:
  static constexpr Epilogue kRelu{Activation::kRelu, 0};
  static std::vector<int32_t> iota(int64_t n) {
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = int32_t(i);
    return v;
  }

  const Queue& queue_;
  SparseConvDenseCase c_;
  SparseImpl impl_;
  Inputs in_;
  int64_t oh_, ow_, total_;
  std::vector<float> conv_constant_;
  Guarded<float> x_, conv_w_, conv_b_, w1_, cc_, dc_, delta_, out_;
  Guarded<int32_t> index_, offsets_, scan_, positions_, image_, origin_;
};

}  // namespace

std::vector<SparseConvDenseCase> sparse_conv_dense_shapes() {
  // The first two are small enough to check on every backend: 8 conv channels (AVX2 conv
  // vectors only) and 16 (both widths).
  return {{6, 12, 11, 8, 3, 64, 0.1},
          {4, 12, 12, 16, 3, 64, 0.2},
          {256, 48, 48, 48, 5, 128, 0.01},  // EmTrkMichelId's conv and first dense layer
          {256, 48, 48, 48, 5, 128, 0.1},
          {256, 48, 48, 48, 5, 128, 1.0}};
}

std::vector<Case> sparse_conv_dense_cases() {
  std::vector<Case> cases;
  for (const SparseConvDenseCase& c : sparse_conv_dense_shapes()) {
    const int64_t oh = c.height - c.kernel + 1, ow = c.width - c.kernel + 1;
    const int64_t k = oh * ow * c.conv_channels;
    const std::string shape = std::to_string(c.height) + "x" + std::to_string(c.width) + "_oc" +
                              std::to_string(c.conv_channels) + "_n" + std::to_string(c.n1);
    const std::string occupancy = std::to_string(int(std::lround(c.occupancy * 100)));
    Case kc;
    kc.kernel = "sparse_conv_dense";
    kc.name = "sparse_conv_dense_" + shape + "_occ" + occupancy + "/{backend}/{impl}/" +
              std::to_string(c.patches);
    kc.title = "sparse conv+dense1 " + shape + " " + occupancy + " % charged";
    kc.bytes = 4.0 * double(c.patches * (c.height * c.width + c.n1) + k * c.n1);
    // The dense network's work: what the sparse steps replace.
    kc.flops = 2.0 * double(c.patches) * double(k * c.n1 + k * c.kernel * c.kernel);
    kc.reference_ops = kc.flops;
    kc.items = double(c.patches);
    kc.items_name = "patches/s";
    kc.impl_tables = {"sparse conv", "sparse first layer"};
    kc.impls = [c](const Backend& backend) {
      std::vector<std::string> names = {"auto"};
      for (std::string& name : sparse_impls_for(Queue(backend), c.conv_channels, c.n1))
        names.push_back(std::move(name));
      return names;
    };
    kc.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<SparseConvDenseInstance>(queue, c,
                                                       sparse_impl_from_name(options.impl));
    };
    cases.push_back(std::move(kc));
  }
  return cases;
}

}  // namespace kaas::cases
