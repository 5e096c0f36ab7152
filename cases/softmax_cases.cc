#include "cases/softmax_cases.h"

#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"

namespace kaas::cases {

std::vector<float> softmax_inputs(const SoftmaxCase& c) {
  const int64_t n = c.outer * c.length * c.inner;
  if (c.activation) {
    auto x = random_floats(size_t(n), 9, -20.0f, 20.0f);
    const float edges[] = {100.0f, -100.0f, 0.0f, -0.0f};  // sigmoid saturation, no NaN
    for (size_t i = 0; i < 4 && i < x.size(); ++i) x[i] = edges[i];
    return x;
  }
  auto x = random_floats(size_t(n), uint32_t(n + c.length), -5.0f, 5.0f);
  for (auto& v : x) v += c.offset;
  return x;
}

void softmax_reference(SoftmaxKind kind, const float* x, int64_t length, int64_t stride,
                       double* expected, double* tolerance) {
  double max = -INFINITY, sum = 0;
  for (int64_t l = 0; l < length; ++l) max = std::max(max, double(x[l * stride]));
  for (int64_t l = 0; l < length; ++l) sum += std::exp(double(x[l * stride]) - max);
  for (int64_t l = 0; l < length; ++l) {
    const double shifted = double(x[l * stride]) - max;
    const double bound =
        8 * kFloatUnitRoundoff * (std::sqrt(double(length)) + std::abs(shifted) + 2);
    if (kind == SoftmaxKind::kSoftmax) {
      expected[l] = std::exp(shifted) / sum;
      tolerance[l] = bound * expected[l] + 1e-30;
    } else {
      expected[l] = shifted - std::log(sum);
      tolerance[l] = bound * (1 + std::abs(expected[l]));
    }
  }
}

double activation_reference(const Epilogue& e, double x) {
  switch (e.activation) {
    case Activation::kRelu:
      return x > 0 ? x : 0;
    case Activation::kLeakyRelu:
      return x >= 0 ? x : double(e.alpha) * x;
    case Activation::kSigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case Activation::kNone:
      break;
  }
  return x;
}

double activation_tolerance(double expected) {
  return 4 * kFloatUnitRoundoff * std::abs(expected) + 1e-38;
}

std::vector<SoftmaxCase> softmax_shapes() {
  const Epilogue none{};
  return {{false, SoftmaxKind::kSoftmax, none, 1000, 3, 1, 0.0f},
          {false, SoftmaxKind::kSoftmax, none, 52'000, 3, 1, 0.0f},
          {false, SoftmaxKind::kSoftmax, none, 256, 1000, 1, 0.0f},
          {false, SoftmaxKind::kLogSoftmax, none, 2, 31, 3, 10000.0f},
          {true, SoftmaxKind::kSoftmax, {Activation::kSigmoid, 0}, 1, 10'007, 1, 0.0f},
          {true, SoftmaxKind::kSoftmax, {Activation::kLeakyRelu, 0.1f}, 1, 1 << 20, 1, 0.0f}};
}

namespace {

class SoftmaxInstance : public Instance {
 public:
  SoftmaxInstance(const Queue& queue, const SoftmaxCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        x_host_(softmax_inputs(c)),
        x_(queue, x_host_),
        y_(queue, x_host_.size()) {}
  void run() override {
    if (c_.activation) {
      activate(queue_, c_.epilogue, x_.const_view(), y_.view(), options_.config);
      return;
    }
    const int64_t extents[3] = {c_.outer, c_.length, c_.inner};
    softmax(queue_, c_.kind, make_view<3>(static_cast<const float*>(x_.data()), extents),
            make_view<3>(y_.data(), extents), options_.config);
  }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto y = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    if (c_.activation) {
      for (size_t i = 0; i < y.size(); ++i) {
        const double expected = activation_reference(c_.epilogue, x_host_[i]);
        checker.near(y[i], expected, activation_tolerance(expected), "y", int64_t(i));
      }
      return checker.result();
    }
    std::vector<double> expected(size_t(c_.length)), tolerance(size_t(c_.length));
    for (int64_t o = 0; o < c_.outer; ++o) {
      for (int64_t i = 0; i < c_.inner; ++i) {
        const int64_t first = o * c_.length * c_.inner + i;
        softmax_reference(c_.kind, x_host_.data() + first, c_.length, c_.inner, expected.data(),
                          tolerance.data());
        for (int64_t l = 0; l < c_.length; ++l) {
          const int64_t at = first + l * c_.inner;
          checker.near(y[at], expected[l], tolerance[l], "y", at);
        }
      }
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  SoftmaxCase c_;
  RunOptions options_;
  std::vector<float> x_host_;
  Guarded<float> x_, y_;
};

std::string shape_name(const SoftmaxCase& c) {
  if (c.activation) {
    return "activate_" + std::string(to_string(c.epilogue.activation)) + "/{backend}/" +
           std::to_string(c.length);
  }
  const std::string kind = c.kind == SoftmaxKind::kSoftmax ? "softmax" : "log_softmax";
  if (c.inner == 1)
    return kind + "_len" + std::to_string(c.length) + "/{backend}/" + std::to_string(c.outer);
  return kind + "_" + std::to_string(c.outer) + "x" + std::to_string(c.length) + "x" +
         std::to_string(c.inner) + "/{backend}";
}

}  // namespace

std::vector<Case> softmax_cases() {
  std::vector<Case> cases;
  for (const SoftmaxCase& c : softmax_shapes()) {
    const int64_t n = c.outer * c.length * c.inner;
    Case k;
    k.kernel = "softmax";
    k.name = shape_name(c);
    k.title = c.activation ? "activate " + std::string(to_string(c.epilogue.activation))
                           : (c.kind == SoftmaxKind::kSoftmax ? "softmax " : "log_softmax ") +
                                 std::to_string(c.outer) + "x" + std::to_string(c.length);
    k.bytes = 8.0 * double(n);
    k.flops = (c.activation ? 4.0 : 6.0) * double(n);
    k.reference_ops = 10.0 * double(n);
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<SoftmaxInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
