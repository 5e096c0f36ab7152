#include "tools/self_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "kaas/backends/buffer.h"
#include "kaas/kernels/axpy.h"
#include "kaas/kernels/conv2d.h"
#include "kaas/kernels/gemm.h"
#include "kaas/kernels/reduce.h"
#include "kaas/kernels/scan.h"
#include "kaas/kernels/softmax.h"

namespace kaas::tools {

namespace {

std::string format_error(double error, double tolerance) {
  char text[96];
  std::snprintf(text, sizeof text, "max error %.2e (tolerance %.2e)", error, tolerance);
  return text;
}

CheckResult run_check(const std::string& kernel, const std::function<CheckResult()>& body) {
  const auto start = std::chrono::steady_clock::now();
  CheckResult result;
  try {
    result = body();
  } catch (const std::exception& e) {
    result.passed = false;
    result.detail = e.what();
  }
  result.kernel = kernel;
  result.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

std::vector<CheckResult> self_check(const Backend& backend) {
  std::vector<CheckResult> results;
  Queue queue(backend);
  std::mt19937 rng(20261122);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  const int64_t n = 100003;
  std::vector<float> x(n), y(n);
  for (auto& v : x) v = uniform(rng);
  for (auto& v : y) v = uniform(rng);

  results.push_back(run_check("axpy", [&] {
    auto dx = to_device(queue, x), dy = to_device(queue, y);
    axpy(queue, 0.5f, dx.view(), dy.view());
    const auto out = to_host(queue, dy);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::abs(out[i] - (0.5 * x[i] + y[i])));
    }
    const double tolerance = 2 * std::numeric_limits<float>::epsilon();
    return CheckResult{"", worst <= tolerance, format_error(worst, tolerance), 0};
  }));

  results.push_back(run_check("reduce_rows (sum)", [&] {
    const int64_t rows = 97, cols = n / rows;
    auto dx = to_device(queue, x);
    auto dout = make_device_buffer<float>(queue, rows);
    reduce_rows(queue, ReduceOp::kSum,
                make_view<2>(static_cast<const float*>(dx.data()), {rows, cols}), dout.view());
    const auto out = to_host(queue, dout);
    double worst = 0, tolerance = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double sum = 0, magnitude = 0;
      for (int64_t c = 0; c < cols; ++c) {
        sum += x[r * cols + c];
        magnitude += std::abs(x[r * cols + c]);
      }
      worst = std::max(worst, std::abs(out[r] - sum));
      tolerance = std::max(tolerance, 2 * std::sqrt(double(cols)) * 6e-8 * magnitude);
    }
    return CheckResult{"", worst <= tolerance, format_error(worst, tolerance), 0};
  }));

  results.push_back(run_check("reduce_all (max)", [&] {
    auto dx = to_device(queue, x);
    auto dout = make_device_buffer<float>(queue, 1);
    reduce_all(queue, ReduceOp::kMax, dx.view(), dout.view());
    const auto out = to_host(queue, dout);
    const float expected = *std::max_element(x.begin(), x.end());
    return CheckResult{"", out[0] == expected, out[0] == expected ? "bit-exact" : "wrong maximum",
                       0};
  }));

  results.push_back(run_check("exclusive_scan (int64)", [&] {
    std::vector<int64_t> counts(n);
    std::uniform_int_distribution<int64_t> count(0, 1000);
    for (auto& c : counts) c = count(rng);
    auto dx = to_device(queue, counts);
    auto dy = make_device_buffer<int64_t>(queue, n);
    exclusive_scan(queue, View1<const int64_t>(dx.view()), dy.view());
    const auto out = to_host(queue, dy);
    int64_t running = 0, wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      wrong += out[i] != running;
      running += counts[i];
    }
    return CheckResult{"", wrong == 0,
                       wrong == 0 ? "bit-exact" : std::to_string(wrong) + " wrong elements", 0};
  }));
  results.push_back(run_check("dense (EmTrk 1452->128)", [&] {
    // integer-valued operands: every partial sum is exact, so any path must match bit for bit
    const int64_t m = 33, k = 1452, n = 128;
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> xs(m * k), ws(k * n), bs(n);
    for (auto& v : xs) v = float(small(rng));
    for (auto& v : ws) v = float(small(rng));
    for (auto& v : bs) v = float(small(rng));
    auto dx = to_device(queue, xs), dw = to_device(queue, ws), db = to_device(queue, bs);
    auto dy = make_device_buffer<float>(queue, m * n);
    dense(queue, make_view<2>(static_cast<const float*>(dx.data()), {m, k}),
          make_view<2>(static_cast<const float*>(dw.data()), {k, n}), View1<const float>(db.view()),
          make_view<2>(dy.data(), {m, n}), {Activation::kRelu, 0});
    const auto out = to_host(queue, dy);
    int64_t wrong = 0;
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = bs[j];
        for (int64_t p = 0; p < k; ++p) sum += double(xs[i * k + p]) * ws[p * n + j];
        wrong += out[i * n + j] != float(std::max(sum, 0.0));
      }
    }
    return CheckResult{"", wrong == 0, wrong == 0 ? "bit-exact" : std::to_string(wrong) + " wrong",
                       0};
  }));

  results.push_back(run_check("softmax (rows of 3)", [&] {
    const int64_t rows = 1000, classes = 3;
    std::vector<float> logits(rows * classes);
    for (auto& v : logits) v = 4.0f * uniform(rng);
    auto dx = to_device(queue, logits);
    auto dy = make_device_buffer<float>(queue, rows * classes);
    softmax(queue, SoftmaxKind::kSoftmax,
            make_view<3>(static_cast<const float*>(dx.data()), {rows, classes, 1}),
            make_view<3>(dy.data(), {rows, classes, 1}));
    const auto out = to_host(queue, dy);
    double worst = 0;
    for (int64_t r = 0; r < rows; ++r) {
      double max = -1e30, sum = 0;
      for (int64_t c = 0; c < classes; ++c) max = std::max(max, double(logits[r * classes + c]));
      for (int64_t c = 0; c < classes; ++c) sum += std::exp(logits[r * classes + c] - max);
      for (int64_t c = 0; c < classes; ++c) {
        worst = std::max(
            worst, std::abs(out[r * classes + c] - std::exp(logits[r * classes + c] - max) / sum));
      }
    }
    return CheckResult{"", worst <= 1e-6, format_error(worst, 1e-6), 0};
  }));

  results.push_back(run_check("conv2d (EmTrk 5x5 1->48)", [&] {
    const int64_t batch = 2, size = 48, out_size = 44, channels = 48;
    std::uniform_int_distribution<int> small(-3, 3);
    std::vector<float> input(batch * size * size), weight(channels * 25), bias(channels);
    for (auto& v : input) v = float(small(rng));
    for (auto& v : weight) v = float(small(rng));
    for (auto& v : bias) v = float(small(rng));
    auto di = to_device(queue, input), dw = to_device(queue, weight), db = to_device(queue, bias);
    auto dy = make_device_buffer<float>(queue, batch * out_size * out_size * channels);
    Conv2dParams params;
    params.layout = Layout::kNHWC;
    params.epilogue = {Activation::kRelu, 0};
    conv2d(queue, make_view<4>(static_cast<const float*>(di.data()), {batch, size, size, 1}),
           make_view<4>(static_cast<const float*>(dw.data()), {channels, 1, 5, 5}),
           View1<const float>(db.view()),
           make_view<4>(dy.data(), {batch, out_size, out_size, channels}), params);
    const auto out = to_host(queue, dy);
    int64_t wrong = 0;
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t oh = 0; oh < out_size; ++oh)
        for (int64_t ow = 0; ow < out_size; ++ow)
          for (int64_t c = 0; c < channels; ++c) {
            double sum = bias[c];
            for (int64_t kh = 0; kh < 5; ++kh)
              for (int64_t kw = 0; kw < 5; ++kw) {
                sum += double(input[(b * size + oh + kh) * size + ow + kw]) *
                       weight[c * 25 + kh * 5 + kw];
              }
            wrong += out[((b * out_size + oh) * out_size + ow) * channels + c] !=
                     float(std::max(sum, 0.0));
          }
    return CheckResult{"", wrong == 0, wrong == 0 ? "bit-exact" : std::to_string(wrong) + " wrong",
                       0};
  }));
  return results;
}

}  // namespace kaas::tools
