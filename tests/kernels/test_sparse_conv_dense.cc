#include "kaas/kernels/sparse_conv_dense.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "kaas/kernels/conv_dense_heads.h"
#include "kaas/kernels/scan.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

// Its own namespace: helper names (Case, Shape, ...) that other kernel tests use for the
// cases:: types stay apart in a unity build.
namespace kaas::testing::sparse_conv_dense_test {
namespace {

// A small network of the EmTrkMichelId shape: [n, 12, 11, 1] -> conv 8 x 3x3 + ReLU -> dense
// N1 ReLU -> dense 8 ReLU -> softmax(3) and sigmoid(1). N1 = 128 and 64 run the CPU fast paths
// two register blockings (one window's non-zero channels; blocks of windows), N1 = 10 the
// portable kernel everywhere.
constexpr int64_t kH = 12, kW = 11, kC = 1, kOC = 8, kK = 3, kOH = kH - kK + 1, kOW = kW - kK + 1;
constexpr int64_t kFlat = kOH * kOW * kOC, kN2 = 8, kA = 3, kB = 1;

struct Net {
  int64_t n1;
  std::vector<float> conv_w, conv_b, w1, b1, w2, b2, wa, ba, wb, bb;
};

// Conv biases of both signs, so relu(bias) is 0 for some channels and not for others.
Net make_net(int64_t n1) {
  return {n1,
          random_floats(kOC * kC * kK * kK, 31, -0.5f, 0.5f),
          random_floats(kOC, 32, -0.3f, 0.3f),
          random_floats(kFlat * n1, 33, -0.1f, 0.1f),
          random_floats(n1, 34, -0.1f, 0.1f),
          random_floats(n1 * kN2, 35, -0.5f, 0.5f),
          random_floats(kN2, 36, -0.1f, 0.1f),
          random_floats(kN2 * kA, 37, -0.5f, 0.5f),
          random_floats(kA, 38, -0.1f, 0.1f),
          random_floats(kN2 * kB, 39, -0.5f, 0.5f),
          random_floats(kB, 40, -0.1f, 0.1f)};
}

// Images whose pixels are non-zero with probability `occupancy` (values in [-1, 2], never 0).
std::vector<float> sparse_images(int64_t n, int64_t h, int64_t w, double occupancy, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> value(0.05f, 2.0f);
  std::bernoulli_distribution charged(occupancy);
  std::vector<float> x(size_t(n * h * w * kC), 0.0f);
  for (float& v : x)
    if (charged(rng)) v = rng() % 3 == 0 ? -value(rng) / 2 : value(rng);
  return x;
}

struct Outputs {
  std::vector<float> a, b;
};

class SparseConvDenseTest : public ::testing::TestWithParam<const Backend*> {
 protected:
  struct Device {
    GuardedArray<float> cw, cb, w1, b1, w2, b2, wa, ba, wb, bb;
    Device(const Queue& q, const Net& net)
        : cw(q, net.conv_w),
          cb(q, net.conv_b),
          w1(q, net.w1),
          b1(q, net.b1),
          w2(q, net.w2),
          b2(q, net.b2),
          wa(q, net.wa),
          ba(q, net.ba),
          wb(q, net.wb),
          bb(q, net.bb) {}
  };
  static View2<const float> v2(const GuardedArray<float>& g, int64_t r, int64_t c) {
    return make_view<2>(static_cast<const float*>(g.view().data), {r, c});
  }
  static void heads(const Queue& q, const Device& d, const Net& net, View2<const float> dense1,
                    View2<float> a, View2<float> b) {
    mlp_two_heads(q, dense1, {v2(d.w2, net.n1, kN2), d.b2.const_view(), {Activation::kRelu, 0}},
                  {v2(d.wa, kN2, kA), d.ba.const_view(), {}},
                  {v2(d.wb, kN2, kB), d.bb.const_view(), {Activation::kSigmoid, 0}}, a, b);
  }

  // The dense fused plan (conv_dense_heads) on patches [n, kH, kW, kC].
  Outputs dense(const Net& net, const std::vector<float>& x, int64_t n) {
    Queue q(*GetParam());
    Device d(q, net);
    GuardedArray<float> dx(q, x), dense1(q, n * net.n1), slab(q, n * kOH * kOW * kOC),
        out_a(q, n * kA), out_b(q, n * kB);
    ConvDenseHeadsWeights<float> w;
    w.conv_weight = make_view<4>(static_cast<const float*>(d.cw.view().data), {kOC, kC, kK, kK});
    w.conv_bias = d.cb.const_view();
    w.conv.layout = Layout::kNHWC;
    w.conv.epilogue = {Activation::kRelu, 0};
    w.dense1_weight = v2(d.w1, kFlat, net.n1);
    w.dense1_bias = d.b1.const_view();
    w.dense1_epilogue = {Activation::kRelu, 0};
    w.hidden = {v2(d.w2, net.n1, kN2), d.b2.const_view(), {Activation::kRelu, 0}};
    w.head_a = {v2(d.wa, kN2, kA), d.ba.const_view(), {}};
    w.head_b = {v2(d.wb, kN2, kB), d.bb.const_view(), {Activation::kSigmoid, 0}};
    ConvDenseHeadsWorkspace ws;
    ws.dense1 = make_view<2>(dense1.view().data, {n, net.n1});
    ws.slab = slab.view().data;
    ws.batch_tile = n;
    ws.rows_per_pass = kOH;
    conv_dense_heads<float>(
        q, make_view<4>(static_cast<const float*>(dx.view().data), {n, kH, kW, kC}), w, ws,
        make_view<2>(out_a.view().data, {n, kA}), make_view<2>(out_b.view().data, {n, kB}));
    q.wait();
    return {out_a.read(), out_b.read()};
  }

  // The sparse steps on images [images, ih, iw, kC], one window per (image, y, x) triple.
  Outputs sparse(const Net& net, const std::vector<float>& x, int64_t images, int64_t ih,
                 int64_t iw, const std::vector<int32_t>& wi, const std::vector<int32_t>& wy,
                 const std::vector<int32_t>& wx, int64_t* active = nullptr, int64_t capacity = 0,
                 int64_t* groups = nullptr) {
    Queue q(*GetParam());
    Device d(q, net);
    const int64_t n = int64_t(wi.size()), oh = ih - kK + 1, ow = iw - kK + 1;
    const int64_t total = images * oh * ow;
    const Epilogue relu{Activation::kRelu, 0};
    const auto conv_constant = sparse_conv_constant(net.conv_b, kOC, relu);
    const auto dense1_constant =
        sparse_dense1_constant(conv_constant, net.w1.data(), kFlat, net.n1, net.b1.data());
    GuardedArray<float> dx(q, x), cc(q, conv_constant), dc(q, dense1_constant),
        delta(q, std::max<int64_t>(total, 1) * kOC), dense1(q, n * net.n1), out_a(q, n * kA),
        out_b(q, n * kB);
    GuardedArray<int32_t> index(q, total), offsets(q, total),
        scan(q, exclusive_scan_workspace_size(q, total)), positions(q, total), di(q, wi), dy(q, wy),
        dxw(q, wx);
    const auto in = make_view<4>(static_cast<const float*>(dx.view().data), {images, ih, iw, kC});
    const auto idx = make_view<3>(index.view().data, {images, oh, ow});
    const int64_t count =
        sparse_conv_index(q, in, kK, kK, idx, offsets.view(), scan.view(), positions.view());
    if (active != nullptr) *active = count;
    SparseConvWeights cw;
    cw.conv_weight = make_view<4>(static_cast<const float*>(d.cw.view().data), {kOC, kC, kK, kK});
    cw.conv_bias = d.cb.const_view();
    cw.conv_epilogue = relu;
    cw.conv_constant = cc.const_view();
    const SparseWindows windows{di.const_view(), dy.const_view(), dxw.const_view(), kOH, kOW};
    const SparseDense1Weights dw{v2(d.w1, kFlat, net.n1), dc.const_view(), relu};
    const auto d1 = make_view<2>(dense1.view().data, {n, net.n1});
    const auto positions_view =
        make_view(static_cast<const int32_t*>(positions.view().data), count);
    if (capacity == 0) {
      const auto deltas = make_view<2>(delta.view().data, {count, kOC});
      sparse_conv_delta(q, in, cw, positions_view, deltas);
      sparse_dense1(q, View<const int32_t, 3>(idx), View2<const float>(deltas), 0, windows, dw, d1);
    } else {
      // Each window's numbers: from its first row's first position to past its last row's.
      const auto offs = offsets.read();
      auto number_at = [&](int64_t image, int64_t row) {
        const int64_t flat = (image * oh + row) * ow;
        return flat < total ? int64_t(offs[size_t(flat)]) : count;
      };
      std::vector<SparseRange> ranges;
      for (int64_t r = 0; r < n; ++r)
        ranges.push_back({number_at(wi[size_t(r)], wy[size_t(r)]),
                          number_at(wi[size_t(r)], wy[size_t(r)] + kOH)});
      const auto deltas = make_view<2>(delta.view().data, {capacity, kOC});
      const int64_t g = sparse_conv_dense1_grouped(q, in, cw, positions_view, idx, ranges.data(),
                                                   windows, dw, deltas, d1);
      if (groups != nullptr) *groups = g;
    }
    heads(q, d, net, d1, make_view<2>(out_a.view().data, {n, kA}),
          make_view<2>(out_b.view().data, {n, kB}));
    q.wait();
    return {out_a.read(), out_b.read()};
  }

  // Patches as their own images, windows at (0, 0).
  Outputs sparse_patches(const Net& net, const std::vector<float>& x, int64_t n,
                         int64_t* active = nullptr) {
    std::vector<int32_t> wi(static_cast<size_t>(n)), zeros(static_cast<size_t>(n), 0);
    for (int64_t i = 0; i < n; ++i) wi[size_t(i)] = int32_t(i);
    return sparse(net, x, n, kH, kW, wi, zeros, zeros, active);
  }

  static void expect_near(const Outputs& got, const Outputs& want, double tolerance) {
    ASSERT_EQ(got.a.size(), want.a.size());
    for (size_t i = 0; i < got.a.size(); ++i) EXPECT_NEAR(got.a[i], want.a[i], tolerance) << i;
    for (size_t i = 0; i < got.b.size(); ++i) EXPECT_NEAR(got.b[i], want.b[i], tolerance) << i;
  }
};

// Every case of cases/sparse_conv_dense_cases.cc against the dense forward pass in double (the
// EmTrkMichelId-sized ones where the host reference fits the test budget).
TEST_P(SparseConvDenseTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "sparse_conv_dense");
}

// Every occupancy from empty to full, for both column counts: the sparse steps give the dense
// plan's scores within reassociation, and the index counts exactly the windows touching charge.
TEST_P(SparseConvDenseTest, MatchesTheDensePlanAtEveryOccupancy) {
  const int64_t n = 5;
  for (int64_t n1 : {int64_t(128), int64_t(64), int64_t(10)}) {
    const Net net = make_net(n1);
    for (double occupancy : {0.0, 0.01, 0.1, 0.5, 1.0}) {
      SCOPED_TRACE("N1 " + std::to_string(n1) + " occupancy " + std::to_string(occupancy));
      const auto x = sparse_images(n, kH, kW, occupancy, uint32_t(41 + occupancy * 100));
      int64_t want_active = 0;
      for (int64_t p = 0; p < n; ++p)
        for (int64_t y = 0; y < kOH; ++y)
          for (int64_t xx = 0; xx < kOW; ++xx) {
            bool touched = false;
            for (int64_t dy = 0; dy < kK; ++dy)
              for (int64_t dx = 0; dx < kK; ++dx)
                touched |= x[size_t((p * kH + y + dy) * kW + xx + dx)] != 0.0f;
            want_active += touched;
          }
      int64_t active = -1;
      const Outputs got = sparse_patches(net, x, n, &active);
      EXPECT_EQ(active, want_active);
      expect_near(got, dense(net, x, n), 1e-5);
    }
  }
}

// A patch whose charge touches only its outermost ring (each value seen by a single corner or
// edge window), and an all-zero batch (every window constant: the scores are the constant's).
TEST_P(SparseConvDenseTest, BorderOnlyChargeAndAllZeroPatches) {
  const Net net = make_net(64);
  std::vector<float> x(size_t(2 * kH * kW), 0.0f);
  for (int64_t i = 0; i < kW; ++i) x[size_t(i)] = 1.5f, x[size_t((kH - 1) * kW + i)] = -0.7f;
  for (int64_t i = 0; i < kH; ++i) x[size_t(i * kW)] = 0.9f, x[size_t(i * kW + kW - 1)] = 2.0f;
  int64_t active = -1;
  expect_near(sparse_patches(net, x, 2, &active), dense(net, x, 2), 1e-5);
  EXPECT_EQ(active, 2 * kOH + 2 * (kOW - 2));  // patch 1 is all zeros: nothing active there
  const std::vector<float> zeros(size_t(3 * kH * kW), 0.0f);
  expect_near(sparse_patches(net, zeros, 3, &active), dense(net, zeros, 3), 1e-5);
  EXPECT_EQ(active, 0);
}

// One plane image, one window per hit at its patch origin (corners and edges included): each
// hit's scores are those of its patch cut out and run through the dense plan.
TEST_P(SparseConvDenseTest, APlaneWindowGivesItsPatchsScores) {
  const Net net = make_net(64);
  const int64_t ph = 31, pw = 27;
  auto plane = sparse_images(1, ph, pw, 0.08, 51);
  for (int64_t i = 0; i < ph; ++i) plane[size_t(i * pw + (i * 2) % pw)] = 1.2f;  // a track
  const std::vector<int32_t> ys{0, 0, int32_t(ph - kH), int32_t(ph - kH), 7, 3, 11};
  const std::vector<int32_t> xs{0, int32_t(pw - kW), 0, int32_t(pw - kW), 5, 9, 16};
  const int64_t n = int64_t(ys.size());
  std::vector<float> patches;
  for (int64_t h = 0; h < n; ++h)
    for (int64_t i = 0; i < kH; ++i)
      for (int64_t j = 0; j < kW; ++j)
        patches.push_back(plane[size_t((ys[size_t(h)] + i) * pw + xs[size_t(h)] + j)]);
  const std::vector<int32_t> image(size_t(n), 0);
  const Outputs want = dense(net, patches, n);
  expect_near(sparse(net, plane, 1, ph, pw, image, ys, xs), want, 1e-5);
  // Hits in order of their first row, the conv output in groups that fit a small delta buffer:
  // the same scores, bit for bit, as one group.
  std::vector<size_t> order(ys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ys[a] < ys[b]; });
  std::vector<int32_t> sy, sx;
  std::vector<float> sorted_patches;
  for (size_t i : order) {
    sy.push_back(ys[i]), sx.push_back(xs[i]);
    sorted_patches.insert(sorted_patches.end(), patches.begin() + std::ptrdiff_t(i * kH * kW),
                          patches.begin() + std::ptrdiff_t((i + 1) * kH * kW));
  }
  const Outputs one = sparse(net, plane, 1, ph, pw, image, sy, sx);
  int64_t groups = 0;
  const Outputs grouped =
      sparse(net, plane, 1, ph, pw, image, sy, sx, nullptr, kOH * (pw - kK + 1), &groups);
  EXPECT_GE(groups, 3);
  EXPECT_EQ(grouped.a, one.a);
  EXPECT_EQ(grouped.b, one.b);
  expect_near(one, dense(net, sorted_patches, n), 1e-5);
}

// A window reaching outside the index and a weight of the wrong size are rejected by name.
TEST_P(SparseConvDenseTest, RejectsWindowsOutsideTheIndexAndWrongWeights) {
  Queue q(*GetParam());
  if (!q.backend().device_memory_is_host()) GTEST_SKIP() << "windows are checked on the host";
  GuardedArray<int32_t> index(q, 4 * 4), w(q, std::vector<int32_t>{0}),
      y(q, std::vector<int32_t>{1});
  GuardedArray<float> delta(q, 8), weight(q, 2 * 2 * 2 * 4), constant(q, 4), out(q, 4);
  const auto idx = make_view<3>(static_cast<const int32_t*>(index.view().data), {1, 4, 4});
  const SparseDense1Weights dw{make_view<2>(static_cast<const float*>(weight.view().data), {16, 4}),
                               constant.const_view(),
                               {}};
  const auto d = make_view<2>(static_cast<const float*>(delta.view().data), {4, 2});
  const auto o = make_view<2>(out.view().data, {1, 4});
  try {
    sparse_dense1(q, idx, d, 0, {w.const_view(), y.const_view(), y.const_view(), 4, 2}, dw, o);
    ADD_FAILURE() << "a 4-row window at row 1 of a 4-row index was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("window 0"), std::string::npos) << e.what();
  }
  try {
    sparse_dense1(q, idx, d, 0, {w.const_view(), y.const_view(), y.const_view(), 3, 3}, dw, o);
    ADD_FAILURE() << "a weight of 16 rows for 3x3 positions x 2 channels was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("weight rows"), std::string::npos) << e.what();
  }
}

KAAS_INSTANTIATE_FOR_BACKENDS(SparseConvDenseTest);

}  // namespace
}  // namespace kaas::testing::sparse_conv_dense_test
