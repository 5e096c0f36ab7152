#include "cases/mlp_heads_cases.h"

#include <algorithm>
#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "cases/softmax_cases.h"
#include "kaas/kernels/mlp_heads.h"

namespace kaas::cases {

MlpHeadsInputs mlp_heads_inputs(const MlpHeadsCase& c) {
  const uint32_t seed = uint32_t(c.rows * 7 + c.in);
  const float scale = 2.0f / std::sqrt(float(c.in));  // keeps the logits of order 1
  return {random_floats(size_t(c.rows * c.in), seed),
          random_floats(size_t(c.in * c.hidden), seed + 1, -scale, scale),
          random_floats(size_t(c.hidden), seed + 2),
          random_floats(size_t(c.hidden * c.out_a), seed + 3),
          random_floats(size_t(c.out_a), seed + 4),
          random_floats(size_t(c.hidden * c.out_b), seed + 5),
          random_floats(size_t(c.out_b), seed + 6)};
}

namespace {

// The derivative bound of an epilogue at its output y.
double slope(const Epilogue& e, double y) {
  switch (e.activation) {
    case Activation::kSigmoid:
      return y * (1 - y);
    case Activation::kLeakyRelu:
      return std::max(1.0, std::abs(double(e.alpha)));
    default:
      return 1.0;
  }
}

// One dense layer in double: z = x . w + b (w [in, out] row-major) and the bound of its error
// given the bound x_error of each input.
void layer(const double* x, const double* x_error, int64_t in, const std::vector<float>& w,
           const std::vector<float>& b, int64_t out, double* z, double* z_error) {
  for (int64_t j = 0; j < out; ++j) {
    double sum = b[j], magnitude = std::abs(b[j]), carried = 0;
    for (int64_t k = 0; k < in; ++k) {
      sum += x[k] * w[k * out + j];
      magnitude += std::abs(x[k] * w[k * out + j]);
      carried += x_error[k] * std::abs(w[k * out + j]);
    }
    z[j] = sum;
    z_error[j] = carried + reduction_tolerance(in + 1, magnitude);
  }
}

}  // namespace

MlpHeadsReference mlp_heads_reference(const MlpHeadsCase& c, const MlpHeadsInputs& in) {
  MlpHeadsReference ref;
  ref.a.resize(size_t(c.rows * c.out_a));
  ref.a_tolerance.resize(ref.a.size());
  ref.b.resize(size_t(c.rows * c.out_b));
  ref.b_tolerance.resize(ref.b.size());
  std::vector<double> x(size_t(c.in)), zero(size_t(c.in), 0.0), h(size_t(c.hidden)),
      h_error(size_t(c.hidden)), z(size_t(std::max(c.out_a, c.out_b))), z_error(z.size());
  for (int64_t r = 0; r < c.rows; ++r) {
    for (int64_t k = 0; k < c.in; ++k) x[k] = in.x[r * c.in + k];
    layer(x.data(), zero.data(), c.in, in.w_hidden, in.b_hidden, c.hidden, h.data(),
          h_error.data());
    for (int64_t j = 0; j < c.hidden; ++j) h[j] = activation_reference(c.hidden_epilogue, h[j]);
    layer(h.data(), h_error.data(), c.hidden, in.w_a, in.b_a, c.out_a, z.data(), z_error.data());
    std::vector<float> logits(z.begin(), z.begin() + c.out_a);
    std::vector<double> rounding(size_t(c.out_a));
    softmax_reference(SoftmaxKind::kSoftmax, logits.data(), c.out_a, 1, &ref.a[r * c.out_a],
                      rounding.data());
    // a logit error dz moves p_i by at most p_i (|dz_i| + sum_j p_j |dz_j|) <= 2 p_i max|dz|
    const double dz = *std::max_element(z_error.begin(), z_error.begin() + c.out_a);
    for (int64_t j = 0; j < c.out_a; ++j) {
      const double p = ref.a[r * c.out_a + j];
      ref.a_tolerance[r * c.out_a + j] = rounding[j] + 2 * p * dz + 4 * kFloatUnitRoundoff * p;
    }
    layer(h.data(), h_error.data(), c.hidden, in.w_b, in.b_b, c.out_b, z.data(), z_error.data());
    for (int64_t j = 0; j < c.out_b; ++j) {
      const double y = activation_reference(c.head_b_epilogue, z[j]);
      ref.b[r * c.out_b + j] = y;
      ref.b_tolerance[r * c.out_b + j] =
          slope(c.head_b_epilogue, y) * z_error[j] + activation_tolerance(y);
    }
  }
  return ref;
}

std::vector<MlpHeadsCase> mlp_heads_shapes() {
  const Epilogue relu{Activation::kRelu, 0}, sigmoid{Activation::kSigmoid, 0};
  std::vector<MlpHeadsCase> shapes;
  for (int64_t rows : {257, 1, 256, 4096, 65536}) {  // EmTrkMichelId: 128 -> 32 -> [3], [1]
    shapes.push_back({rows, 128, 32, 3, 1, relu, sigmoid, false});
  }
  shapes.push_back({33, 100, 64, 16, 5, {Activation::kLeakyRelu, 0.2f}, relu, true});
  return shapes;
}

namespace {

class MlpHeadsInstance : public Instance {
 public:
  MlpHeadsInstance(const Queue& queue, const MlpHeadsCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        in_(mlp_heads_inputs(c)),
        x_(queue, in_.x),
        w_hidden_(queue, stored_hidden()),
        b_hidden_(queue, in_.b_hidden),
        w_a_(queue, in_.w_a),
        b_a_(queue, in_.b_a),
        w_b_(queue, in_.w_b),
        b_b_(queue, in_.b_b),
        out_a_(queue, size_t(c.rows * c.out_a)),
        out_b_(queue, size_t(c.rows * c.out_b)) {}
  void run() override {
    View2<const float> w_hidden =
        make_view<2>(static_cast<const float*>(w_hidden_.data()), {c_.in, c_.hidden});
    if (c_.transposed_hidden) {  // [hidden, in] storage seen as [in, hidden]
      w_hidden.stride[0] = 1;
      w_hidden.stride[1] = c_.in;
    }
    const DenseLayer hidden{w_hidden, b_hidden_.const_view(), c_.hidden_epilogue};
    const DenseLayer head_a{
        make_view<2>(static_cast<const float*>(w_a_.data()), {c_.hidden, c_.out_a}),
        b_a_.const_view(),
        {}};
    const DenseLayer head_b{
        make_view<2>(static_cast<const float*>(w_b_.data()), {c_.hidden, c_.out_b}),
        b_b_.const_view(), c_.head_b_epilogue};
    mlp_two_heads(queue_, make_view<2>(static_cast<const float*>(x_.data()), {c_.rows, c_.in}),
                  hidden, head_a, head_b, make_view<2>(out_a_.data(), {c_.rows, c_.out_a}),
                  make_view<2>(out_b_.data(), {c_.rows, c_.out_b}), options_.config);
  }
  Check check() override {
    const MlpHeadsReference ref = mlp_heads_reference(c_, in_);
    Checker checker;
    int64_t guard_writes = 0;
    const auto a = out_a_.read(&guard_writes);
    const auto b = out_b_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    for (size_t i = 0; i < a.size(); ++i) {
      checker.near(a[i], ref.a[i], ref.a_tolerance[i], "out_a", int64_t(i));
    }
    for (size_t i = 0; i < b.size(); ++i) {
      checker.near(b[i], ref.b[i], ref.b_tolerance[i], "out_b", int64_t(i));
    }
    return checker.result();
  }

 private:
  std::vector<float> stored_hidden() const {
    if (!c_.transposed_hidden) return in_.w_hidden;
    std::vector<float> t(in_.w_hidden.size());
    for (int64_t k = 0; k < c_.in; ++k) {
      for (int64_t j = 0; j < c_.hidden; ++j) t[j * c_.in + k] = in_.w_hidden[k * c_.hidden + j];
    }
    return t;
  }

  const Queue& queue_;
  MlpHeadsCase c_;
  RunOptions options_;
  MlpHeadsInputs in_;
  Guarded<float> x_, w_hidden_, b_hidden_, w_a_, b_a_, w_b_, b_b_, out_a_, out_b_;
};

}  // namespace

std::vector<Case> mlp_heads_cases() {
  std::vector<Case> cases;
  for (const MlpHeadsCase& c : mlp_heads_shapes()) {
    const std::string shape = std::to_string(c.in) + "x" + std::to_string(c.hidden) + "x" +
                              std::to_string(c.out_a) + "x" + std::to_string(c.out_b);
    const double per_row = double(c.in * c.hidden + c.hidden * (c.out_a + c.out_b));
    Case k;
    k.kernel = "mlp_heads";
    k.name = "mlp_two_heads_" + shape + (c.transposed_hidden ? "_transposed" : "") + "/{backend}/" +
             std::to_string(c.rows);
    k.title = "mlp_two_heads " + shape;
    k.bytes = 4.0 * (double(c.rows) * double(c.in + c.out_a + c.out_b) + per_row);
    k.flops = 2.0 * double(c.rows) * per_row;
    k.reference_ops = 3 * k.flops;
    k.items = double(c.rows);
    k.items_name = "rows/s";
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<MlpHeadsInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
