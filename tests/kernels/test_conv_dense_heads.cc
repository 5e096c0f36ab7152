#include "kaas/kernels/conv_dense_heads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/omp_threads.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

// A small network of the EmTrkMichelId shape: [n, 9, 7, 2] NHWC -> conv 6 x 3x3 + ReLU ->
// dense 210 -> 10 ReLU -> dense 8 ReLU -> softmax(3) and sigmoid(2).
constexpr int64_t kH = 9, kW = 7, kC = 2, kOC = 6, kK = 3, kOH = kH - kK + 1, kOW = kW - kK + 1;
constexpr int64_t kFlat = kOH * kOW * kOC, kN1 = 10, kN2 = 8, kA = 3, kB = 2;

struct Net {
  std::vector<float> conv_w, conv_b, w1, b1, w2, b2, wa, ba, wb, bb;
};

Net make_net() {
  return {random_floats(kOC * kC * kK * kK, 11, -0.5f, 0.5f), random_floats(kOC, 12, -0.1f, 0.1f),
          random_floats(kFlat * kN1, 13, -0.1f, 0.1f),        random_floats(kN1, 14, -0.1f, 0.1f),
          random_floats(kN1 * kN2, 15, -0.5f, 0.5f),          random_floats(kN2, 16, -0.1f, 0.1f),
          random_floats(kN2 * kA, 17, -0.5f, 0.5f),           random_floats(kA, 18, -0.1f, 0.1f),
          random_floats(kN2 * kB, 19, -0.5f, 0.5f),           random_floats(kB, 20, -0.1f, 0.1f)};
}

// The forward pass in double precision; outputs [n][kA + kB].
std::vector<double> reference(const Net& net, const std::vector<float>& x, int64_t n) {
  std::vector<double> out;
  for (int64_t p = 0; p < n; ++p) {
    std::vector<double> flat(kFlat);
    for (int64_t oh = 0; oh < kOH; ++oh)
      for (int64_t ow = 0; ow < kOW; ++ow)
        for (int64_t o = 0; o < kOC; ++o) {
          double s = net.conv_b[o];
          for (int64_t c = 0; c < kC; ++c)
            for (int64_t kh = 0; kh < kK; ++kh)
              for (int64_t kw = 0; kw < kK; ++kw)
                s += double(net.conv_w[((o * kC + c) * kK + kh) * kK + kw]) *
                     x[((p * kH + oh + kh) * kW + ow + kw) * kC + c];
          flat[(oh * kOW + ow) * kOC + o] = std::max(s, 0.0);
        }
    auto dense = [](const std::vector<double>& in, const std::vector<float>& w,
                    const std::vector<float>& b) {
      std::vector<double> y(b.begin(), b.end());
      for (size_t i = 0; i < in.size(); ++i)
        for (size_t j = 0; j < y.size(); ++j) y[j] += in[i] * w[i * y.size() + j];
      return y;
    };
    auto relu = [](std::vector<double> v) {
      for (double& e : v) e = std::max(e, 0.0);
      return v;
    };
    const auto h2 = relu(dense(relu(dense(flat, net.w1, net.b1)), net.w2, net.b2));
    const auto a = dense(h2, net.wa, net.ba);
    const double top = *std::max_element(a.begin(), a.end());
    double sum = 0;
    for (double v : a) sum += std::exp(v - top);
    for (double v : a) out.push_back(std::exp(v - top) / sum);
    for (double v : dense(h2, net.wb, net.bb)) out.push_back(1.0 / (1.0 + std::exp(-v)));
  }
  return out;
}

struct Outputs {
  std::vector<float> a, b;
};

class ConvDenseHeadsTest : public ::testing::TestWithParam<const Backend*> {
 protected:
  // Runs the network on `x` ([n, kH, kW, kC]); W1 stored transposed ([N1, K]) when trans_b.
  Outputs run(const Net& net, const std::vector<float>& x, int64_t n, int64_t batch_tile,
              int64_t rows_per_pass, bool trans_b, Conv2dParams conv = nhwc_relu(),
              ConvDenseHeadsSplit split = ConvDenseHeadsSplit::kKernels) {
    Queue queue(*GetParam());
    std::vector<float> w1 = net.w1;
    if (trans_b)
      for (int64_t k = 0; k < kFlat; ++k)
        for (int64_t j = 0; j < kN1; ++j) w1[j * kFlat + k] = net.w1[k * kN1 + j];
    GuardedArray<float> dx(queue, x), dcw(queue, net.conv_w), dcb(queue, net.conv_b),
        dw1(queue, w1), db1(queue, net.b1), dw2(queue, net.w2), db2(queue, net.b2),
        dwa(queue, net.wa), dba(queue, net.ba), dwb(queue, net.wb), dbb(queue, net.bb),
        dense1(queue, n * kN1), slab(queue, batch_tile * rows_per_pass * kOW * kOC),
        out_a(queue, n * kA), out_b(queue, n * kB);
    auto cv2 = [](const GuardedArray<float>& g, int64_t r, int64_t c) {
      return make_view<2>(static_cast<const float*>(g.view().data), {r, c});
    };
    ConvDenseHeadsWeights<float> w;
    w.conv_weight = make_view<4>(static_cast<const float*>(dcw.view().data), {kOC, kC, kK, kK});
    w.conv_bias = dcb.const_view();
    w.conv = conv;
    w.dense1_weight = trans_b ? cv2(dw1, kN1, kFlat) : cv2(dw1, kFlat, kN1);
    w.dense1_trans_b = trans_b;
    w.dense1_bias = db1.const_view();
    w.dense1_epilogue = {Activation::kRelu, 0};
    w.hidden = {cv2(dw2, kN1, kN2), db2.const_view(), {Activation::kRelu, 0}};
    w.head_a = {cv2(dwa, kN2, kA), dba.const_view(), {}};
    w.head_b = {cv2(dwb, kN2, kB), dbb.const_view(), {Activation::kSigmoid, 0}};
    ConvDenseHeadsWorkspace ws;
    ws.dense1 = make_view<2>(dense1.view().data, {n, kN1});
    ws.slab = slab.view().data;
    ws.batch_tile = batch_tile;
    ws.rows_per_pass = rows_per_pass;
    ws.split = split;
    last_run = conv_dense_heads<float>(
        queue, make_view<4>(static_cast<const float*>(dx.view().data), {n, kH, kW, kC}), w, ws,
        make_view<2>(out_a.view().data, {n, kA}), make_view<2>(out_b.view().data, {n, kB}));
    queue.wait();
    return {out_a.read(), out_b.read()};
  }

  ConvDenseHeadsRun last_run;

  static Conv2dParams nhwc_relu() {
    Conv2dParams p;
    p.layout = Layout::kNHWC;
    p.epilogue = {Activation::kRelu, 0};
    return p;
  }
};

// Every slab partition (one row per pass to the whole output), batch tiles that split the batch
// unevenly, and both W1 layouts agree with the double forward pass.
TEST_P(ConvDenseHeadsTest, MatchesTheDoubleForwardPass) {
  const Net net = make_net();
  const int64_t n = 5;
  const auto x = random_floats(n * kH * kW * kC, 21, -1.0f, 2.0f);
  const auto want = reference(net, x, n);
  for (bool trans_b : {false, true}) {
    for (int64_t tile : {int64_t(1), int64_t(2), n}) {
      for (int64_t rows : {int64_t(1), int64_t(3), kOH}) {
        SCOPED_TRACE("trans_b " + std::to_string(trans_b) + " tile " + std::to_string(tile) +
                     " rows " + std::to_string(rows));
        const Outputs got = run(net, x, n, tile, rows, trans_b);
        for (int64_t p = 0; p < n; ++p) {
          for (int64_t j = 0; j < kA; ++j)
            ASSERT_NEAR(got.a[p * kA + j], want[p * (kA + kB) + j], 2e-6) << p << "," << j;
          for (int64_t j = 0; j < kB; ++j)
            ASSERT_NEAR(got.b[p * kB + j], want[p * (kA + kB) + kA + j], 2e-6) << p << "," << j;
        }
      }
    }
  }
}

// A patch's scores do not depend on what it is batched with (the slab partition is the
// caller's, not the batch's): patch 3 alone equals patch 3 of the batch, bit for bit.
TEST_P(ConvDenseHeadsTest, APatchGivesTheSameBitsInAnyBatch) {
  const Net net = make_net();
  const int64_t n = 5;
  const auto x = random_floats(n * kH * kW * kC, 22, -1.0f, 2.0f);
  const Outputs batch = run(net, x, n, 2, 3, false);
  const std::vector<float> one(x.begin() + 3 * kH * kW * kC, x.begin() + 4 * kH * kW * kC);
  const Outputs alone = run(net, one, 1, 2, 3, false);
  for (int64_t j = 0; j < kA; ++j) EXPECT_EQ(alone.a[j], batch.a[3 * kA + j]) << j;
  for (int64_t j = 0; j < kB; ++j) EXPECT_EQ(alone.b[j], batch.b[3 * kB + j]) << j;
}

// The batch split (one share of the batch per thread, each running its own slab passes) gives
// the kernel split's bits: for batches and tiles that divide unevenly over 2 and 3 threads,
// called from the first thread and from a std::thread (whose OpenMP setting is its own).
TEST_P(ConvDenseHeadsTest, TheBatchSplitGivesTheKernelSplitsBits) {
  const Net net = make_net();
  const int64_t n = 7;
  const auto x = random_floats(n * kH * kW * kC, 24, -1.0f, 2.0f);
  const bool parallel = runs_parallel(*GetParam());
  for (int threads : {2, 3}) {
    for (int64_t tile : {int64_t(1), int64_t(3), n, int64_t(12)}) {  // 12: a slab over the batch
      SCOPED_TRACE("threads " + std::to_string(threads) + " tile " + std::to_string(tile));
      const Outputs kernels = run(net, x, n, tile, 2, false);
      auto batch_split = [&] {
        const OmpThreadsForTest omp(threads);
        return run(net, x, n, tile, 2, false, nhwc_relu(), ConvDenseHeadsSplit::kBatch);
      };
      Outputs split = batch_split();
      EXPECT_EQ(kernels.a, split.a);
      EXPECT_EQ(kernels.b, split.b);
      const bool splits = parallel && tile >= threads;
      EXPECT_EQ(last_run.split,
                splits ? ConvDenseHeadsSplit::kBatch : ConvDenseHeadsSplit::kKernels);
      EXPECT_EQ(last_run.threads, splits ? threads : 1);
      last_run = {};
      std::thread([&] { split = batch_split(); }).join();
      EXPECT_EQ(kernels.a, split.a);
      EXPECT_EQ(last_run.threads, splits ? threads : 1) << "from a std::thread";
    }
  }
}

TEST_P(ConvDenseHeadsTest, RejectsWhatTheSlabPassesCannotSlice) {
  const Net net = make_net();
  const auto x = random_floats(2 * kH * kW * kC, 23, -1.0f, 2.0f);
  auto expect_message = [&](Conv2dParams conv, const std::string& message) {
    try {
      run(net, x, 2, 1, 1, false, conv);
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(e.what(), message);
    }
  };
  Conv2dParams nchw = nhwc_relu();
  nchw.layout = Layout::kNCHW;
  expect_message(nchw, "conv_dense_heads: conv layout: expected NHWC, received NCHW");
  Conv2dParams strided = nhwc_relu();
  strided.stride_h = 2;
  expect_message(strided,
                 "conv_dense_heads: conv: expected valid padding, stride 1, dilation 1, groups 1, "
                 "received pads 0,0,0,0 stride 2x1 dilation 1x1 groups 1");
}

KAAS_INSTANTIATE_FOR_BACKENDS(ConvDenseHeadsTest);

}  // namespace
}  // namespace kaas::testing
