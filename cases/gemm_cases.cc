#include "cases/gemm_cases.h"
#include "kaas/backends/backend_traits.h"

#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "cases/softmax_cases.h"
#include "kaas/common/error.h"

namespace kaas::cases {

GemmInputs gemm_inputs(const GemmCase& c) {
  const uint32_t seed = static_cast<uint32_t>(c.m * 131 + c.k * 17 + c.n);
  GemmInputs in;
  in.c_rows = c.c_kind == CKind::kFull || c.c_kind == CKind::kColumn ? c.m : 1;
  in.c_cols = c.c_kind == CKind::kFull || c.c_kind == CKind::kRow ? c.n : 1;
  const size_t c_size = c.c_kind == CKind::kNone ? 0 : size_t(in.c_rows * in.c_cols);
  if (c.c_kind == CKind::kNone) in.c_rows = in.c_cols = 0;
  if (c.integers) {
    in.a = random_integers<float>(size_t(c.m * c.k), seed, -4, 4);
    in.b = random_integers<float>(size_t(c.k * c.n), seed + 1, -4, 4);
    in.c = random_integers<float>(c_size, seed + 2, -8, 8);
  } else {
    in.a = random_floats(size_t(c.m * c.k), seed);
    in.b = random_floats(size_t(c.k * c.n), seed + 1);
    in.c = random_floats(c_size, seed + 2);
  }
  return in;
}

namespace {

KAAS_REFERENCE_LOOP void gemm_reference_loops(const GemmCase& c, const float* a_values,
                                              const float* b_values, double* product,
                                              double* magnitude) {
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t p = 0; p < c.k; ++p) {
      const double a = c.trans_a ? a_values[p * c.m + i] : a_values[i * c.k + p];
      for (int64_t j = 0; j < c.n; ++j) {
        const double b = c.trans_b ? b_values[j * c.k + p] : b_values[p * c.n + j];
        product[i * c.n + j] += a * b;
        magnitude[i * c.n + j] += __builtin_fabs(a * b);  // std::abs would not inline here
      }
    }
  }
}

}  // namespace

void gemm_reference(const GemmCase& c, const GemmInputs& in, std::vector<double>& expected,
                    std::vector<double>& tolerance) {
  std::vector<double> product(size_t(c.m * c.n), 0.0), magnitude(product.size(), 0.0);
  gemm_reference_loops(c, in.a.data(), in.b.data(), product.data(), magnitude.data());
  expected.resize(product.size());
  tolerance.resize(product.size());
  const bool exact = c.integers && c.epilogue.activation != Activation::kSigmoid;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double value = c.alpha * product[i * c.n + j];
      double scale = std::abs(c.alpha) * magnitude[i * c.n + j];
      if (!in.c.empty()) {
        const double cij = in.c[(in.c_rows == 1 ? 0 : i) * in.c_cols + (in.c_cols == 1 ? 0 : j)];
        value += c.beta * cij;
        scale += std::abs(c.beta * cij);
      }
      const double want = activation_reference(c.epilogue, value);
      expected[i * c.n + j] = want;
      tolerance[i * c.n + j] =
          exact ? 0.0
                : reduction_tolerance(c.k + 2, scale) + 4 * kFloatUnitRoundoff * std::abs(want);
    }
  }
}

std::vector<GemmImpl> gemm_case_impls(const Queue& queue, const GemmCase& c) {
  const float* none = nullptr;
  const auto a = c.trans_a ? make_view<2>(none, {c.k, c.m}) : make_view<2>(none, {c.m, c.k});
  const auto b = c.trans_b ? make_view<2>(none, {c.n, c.k}) : make_view<2>(none, {c.k, c.n});
  GemmParams params;
  params.trans_a = c.trans_a, params.trans_b = c.trans_b;
  std::vector<GemmImpl> impls;
  for (const std::string& name :
       gemm_impls_for(queue, a, b, make_view<2>(static_cast<float*>(nullptr), {c.m, c.n}), params))
    impls.push_back(gemm_impl_from_name(name));
  return impls;
}

std::vector<GemmCase> gemm_shapes() {
  const Epilogue relu{Activation::kRelu, 0};
  std::vector<GemmCase> shapes = {
      {33, 1452, 128, false, false, CKind::kRow, relu, 1, 1, true, true}};
  for (int64_t out : {int64_t{128}, int64_t{32}}) {
    const int64_t in = out == 128 ? 92'928 : 128;  // 44 x 44 x 48 conv outputs; then 128 -> 32
    for (int64_t batch : {1, 16, 64, 256, 1024}) {
      shapes.push_back({batch, in, out, false, false, CKind::kRow, relu, 1, 1, false, true});
    }
  }
  shapes.push_back({257,
                    33,
                    129,
                    true,
                    true,
                    CKind::kFull,
                    {Activation::kSigmoid, 0},
                    -0.5f,
                    2.0f,
                    false,
                    false});
  shapes.push_back({70,
                    300,
                    48,
                    false,
                    false,
                    CKind::kColumn,
                    {Activation::kLeakyRelu, 0.1f},
                    1.0f,
                    -1.0f,
                    true,
                    false});
  return shapes;
}

namespace {

class GemmInstance : public Instance {
 public:
  GemmInstance(const Queue& queue, const GemmCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        impl_(gemm_impl_from_name(options.impl)),
        in_(gemm_inputs(c)),
        a_(queue, in_.a),
        b_(queue, in_.b),
        bias_(queue, in_.c),
        y_(queue, size_t(c.m * c.n)) {}
  void run() override {
    if (c_.dense) {
      dense(queue_, a_view(), b_view(), bias_.const_view(), y_view(), c_.epilogue, impl_);
      return;
    }
    View2<const float> c_view;
    if (!in_.c.empty()) {
      c_view = make_view<2>(static_cast<const float*>(bias_.data()), {in_.c_rows, in_.c_cols});
    }
    const GemmParams params{c_.trans_a, c_.trans_b, c_.alpha, c_.beta, c_.epilogue, impl_};
    gemm(queue_, a_view(), b_view(), c_view, y_view(), params, options_.config);
  }
  Check check() override {
    std::vector<double> expected, tolerance;
    gemm_reference(c_, in_, expected, tolerance);
    Checker checker;
    int64_t guard_writes = 0;
    const auto y = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    for (size_t i = 0; i < y.size(); ++i) {
      if (tolerance[i] == 0) {
        checker.exact(y[i], float(expected[i]), "y", int64_t(i));
      } else {
        checker.near(y[i], expected[i], tolerance[i], "y", int64_t(i));
      }
    }
    return checker.result();
  }
  std::string label() const override {
    const GemmImpl chosen =
        gemm_chosen_impl(queue_, a_view(), b_view(), y_view(),
                         GemmParams{c_.trans_a, c_.trans_b, c_.alpha, c_.beta, c_.epilogue, impl_});
    return chosen == GemmImpl::kVendor ? gemm_vendor_name(queue_)
                                       : std::string(gemm_impl_name(chosen));
  }

 private:
  View2<const float> a_view() const {
    const float* a = a_.data();
    return c_.trans_a ? make_view<2>(a, {c_.k, c_.m}) : make_view<2>(a, {c_.m, c_.k});
  }
  View2<const float> b_view() const {
    const float* b = b_.data();
    return c_.trans_b ? make_view<2>(b, {c_.n, c_.k}) : make_view<2>(b, {c_.k, c_.n});
  }
  View2<float> y_view() const { return make_view<2>(y_.data(), {c_.m, c_.n}); }

  const Queue& queue_;
  GemmCase c_;
  RunOptions options_;
  GemmImpl impl_;
  GemmInputs in_;
  Guarded<float> a_, b_, bias_, y_;
};

std::string case_name(const GemmCase& c) {
  const std::string shape =
      std::to_string(c.m) + "x" + std::to_string(c.k) + "x" + std::to_string(c.n);
  if (c.dense && !c.integers) {  // the EmTrkMichelId layers, by batch
    return "dense_" + std::to_string(c.k) + "x" + std::to_string(c.n) + "/{backend}/{impl}/" +
           std::to_string(c.m);
  }
  return std::string(c.dense ? "dense_" : "gemm_") + shape + (c.trans_a ? "_ta" : "") +
         (c.trans_b ? "_tb" : "") + (c.integers ? "_int" : "") + "/{backend}/{impl}";
}

}  // namespace

std::vector<Case> gemm_cases() {
  std::vector<Case> cases;
  for (const GemmCase& c : gemm_shapes()) {
    Case k;
    k.kernel = "gemm";
    k.impl_tables = {"gemm fp32"};
    k.name = case_name(c);
    k.title = std::string(c.dense ? "dense " : "gemm ") + std::to_string(c.m) + "x" +
              std::to_string(c.k) + "x" + std::to_string(c.n);
    k.bytes = 4.0 * double(c.m * c.k + c.k * c.n + 2 * c.m * c.n);
    k.flops = 2.0 * double(c.m) * double(c.k) * double(c.n);
    k.reference_ops = 2 * k.flops;
    k.impls = [c](const Backend& backend) {
      const Queue queue(backend);
      std::vector<std::string> names = {"auto"};
      for (GemmImpl impl : gemm_case_impls(queue, c)) names.emplace_back(gemm_impl_name(impl));
      return names;
    };
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<GemmInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  for (Case& k : gemm_reduced_cases()) cases.push_back(std::move(k));
  return cases;
}

}  // namespace kaas::cases
