#include "tools/self_check.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>

#include "backends/buffer.h"
#include "kernels/axpy.h"
#include "kernels/reduce.h"
#include "kernels/scan.h"

namespace kaas::tools {

namespace {

std::string format_error(double error, double tolerance) {
  char text[96];
  std::snprintf(text, sizeof text, "max error %.2e (tolerance %.2e)", error, tolerance);
  return text;
}

template <class T>
DeviceBuffer<T> upload(const Queue& queue, const std::vector<T>& host) {
  auto buffer = make_device_buffer<T>(queue, host.size());
  copy_to_device(queue, std::span<const T>(host), buffer);
  return buffer;
}

template <class T>
std::vector<T> download(const Queue& queue, const DeviceBuffer<T>& buffer) {
  std::vector<T> host(buffer.size());
  copy_to_host(queue, buffer, std::span<T>(host));
  queue.wait();
  return host;
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
    auto dx = upload(queue, x), dy = upload(queue, y);
    axpy(queue, 0.5f, dx.view(), dy.view());
    const auto out = download(queue, dy);
    double worst = 0;
    for (int64_t i = 0; i < n; ++i) {
      worst = std::max(worst, std::abs(out[i] - (0.5 * x[i] + y[i])));
    }
    const double tolerance = 2 * std::numeric_limits<float>::epsilon();
    return CheckResult{"", worst <= tolerance, format_error(worst, tolerance), 0};
  }));

  results.push_back(run_check("reduce_rows (sum)", [&] {
    const int64_t rows = 97, cols = n / rows;
    auto dx = upload(queue, x);
    auto dout = make_device_buffer<float>(queue, rows);
    reduce_rows(queue, ReduceOp::kSum,
                make_view<2>(static_cast<const float*>(dx.data()), {rows, cols}), dout.view());
    const auto out = download(queue, dout);
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
    auto dx = upload(queue, x);
    auto dout = make_device_buffer<float>(queue, 1);
    reduce_all(queue, ReduceOp::kMax, dx.view(), dout.view());
    const auto out = download(queue, dout);
    const float expected = *std::max_element(x.begin(), x.end());
    return CheckResult{"", out[0] == expected, out[0] == expected ? "bit-exact" : "wrong maximum",
                       0};
  }));

  results.push_back(run_check("exclusive_scan (int64)", [&] {
    std::vector<int64_t> counts(n);
    std::uniform_int_distribution<int64_t> count(0, 1000);
    for (auto& c : counts) c = count(rng);
    auto dx = upload(queue, counts);
    auto dy = make_device_buffer<int64_t>(queue, n);
    exclusive_scan(queue, View1<const int64_t>(dx.view()), dy.view());
    const auto out = download(queue, dy);
    int64_t running = 0, wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      wrong += out[i] != running;
      running += counts[i];
    }
    return CheckResult{"", wrong == 0,
                       wrong == 0 ? "bit-exact" : std::to_string(wrong) + " wrong elements", 0};
  }));
  return results;
}

}  // namespace kaas::tools
