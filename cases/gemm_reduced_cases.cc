// Reduced-precision cases of kernels/gemm.h: op(a) and op(b) stored as bf16 or fp16, fp32
// accumulation, y in fp32 or rounded once to the operands' type. The reference is the fp32
// case's double-precision reference computed on the rounded operands (what the kernel is given),
// so the tolerance is the fp32 one plus, for a 16-bit y, half a unit in the last place of y.

#include <cmath>
#include <string>
#include <type_traits>
#include <utility>

#include "cases/gemm_cases.h"
#include "cases/guarded.h"
#include "cases/reduced.h"
#include "cases/reference.h"
#include "kaas/backends/backend_traits.h"

namespace kaas::cases {

namespace {

template <class T, class TY>
class ReducedGemmInstance : public Instance {
 public:
  ReducedGemmInstance(const Queue& queue, const GemmCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        in_(gemm_inputs(c)),
        a_(queue, rounded<T>(in_.a)),
        b_(queue, rounded<T>(in_.b)),
        c_values_(queue, in_.c),
        y_(queue, size_t(c.m * c.n)) {
    if constexpr (std::is_same_v<T, bf16>) {  // op(B) packed in K-pairs for kAvx512Bf16
      const std::vector<bf16> b = rounded<bf16>(in_.b);
      const auto b_view =
          c.trans_b ? make_view<2>(b.data(), {c.n, c.k}) : make_view<2>(b.data(), {c.k, c.n});
      View2<const bf16> op_b = b_view;
      if (c.trans_b) {
        std::swap(op_b.extent[0], op_b.extent[1]);
        std::swap(op_b.stride[0], op_b.stride[1]);
      }
      packed_storage_.resize(size_t(gemm_packed_bf16_elements(c.k, c.n)));
      packed_ = gemm_pack_bf16(op_b, packed_storage_.data());
    }
  }
  void run() override {
    View2<const float> c_view;
    if (!in_.c.empty()) {
      c_view = make_view<2>(static_cast<const float*>(c_values_.data()), {in_.c_rows, in_.c_cols});
    }
    GemmParams params{c_.trans_a, c_.trans_b,  c_.alpha,
                      c_.beta,    c_.epilogue, gemm_impl_from_name(options_.impl)};
    if (packed_.pairs != nullptr) params.packed_b = &packed_;
    const T* a = a_.data();
    const T* b = b_.data();
    const auto a_view = c_.trans_a ? make_view<2>(a, {c_.k, c_.m}) : make_view<2>(a, {c_.m, c_.k});
    const auto b_view = c_.trans_b ? make_view<2>(b, {c_.n, c_.k}) : make_view<2>(b, {c_.k, c_.n});
    gemm(queue_, a_view, b_view, c_view, make_view<2>(y_.data(), {c_.m, c_.n}), params,
         options_.config);
  }
  Check check() override {
    GemmInputs as_given = in_;  // the operands as the kernel received them
    as_given.a = widened(rounded<T>(in_.a));
    as_given.b = widened(rounded<T>(in_.b));
    std::vector<double> expected, tolerance;
    gemm_reference(c_, as_given, expected, tolerance);
    Checker checker;
    int64_t guard_writes = 0;
    const auto y = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const double output_roundoff = std::is_same_v<TY, float> ? 0.0 : unit_roundoff<T>();
    for (size_t i = 0; i < y.size(); ++i) {
      const double allowed =
          tolerance[i] * (1 + output_roundoff) + output_roundoff * std::abs(expected[i]);
      checker.near(math::to_float(y[i]), expected[i], allowed, "y", int64_t(i));
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  GemmCase c_;
  RunOptions options_;
  GemmInputs in_;
  Guarded<T> a_, b_;
  Guarded<float> c_values_;
  Guarded<TY> y_;
  std::vector<bf16> packed_storage_;
  GemmPackedBf16 packed_;
};

template <class T, class TY>
Case reduced_case(const GemmCase& c, const std::string& types) {
  Case k;
  k.kernel = "gemm";
  k.name = "gemm_" + types + "_" + std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
           std::to_string(c.n) + "/{backend}/{impl}";
  k.title = "gemm " + types + " " + std::to_string(c.m) + "x" + std::to_string(c.k) + "x" +
            std::to_string(c.n);
  k.bytes = 2.0 * double(c.m * c.k + c.k * c.n) + double(sizeof(TY)) * 2.0 * double(c.m * c.n);
  k.flops = 2.0 * double(c.m) * double(c.k) * double(c.n);
  k.reference_ops = 2 * k.flops;
  k.reduced_precision = true;
  k.impl_tables = {std::is_same_v<T, bf16> ? "gemm bf16" : "gemm fp16"};
  k.impls = [c](const Backend& backend) {
    const Queue queue(backend);
    const T* none = nullptr;
    const auto a = c.trans_a ? make_view<2>(none, {c.k, c.m}) : make_view<2>(none, {c.m, c.k});
    const auto b = c.trans_b ? make_view<2>(none, {c.n, c.k}) : make_view<2>(none, {c.k, c.n});
    // The packed B the instance makes for bf16 (the table reads its K x N, never its data).
    static const bf16 no_data{};
    const GemmPackedBf16 packed{&no_data, c.k, c.n};
    GemmParams params;
    params.trans_a = c.trans_a, params.trans_b = c.trans_b;
    if (std::is_same_v<T, bf16>) params.packed_b = &packed;
    std::vector<std::string> names = {"auto"};
    for (std::string& name :
         gemm_impls_for(queue, a, b, make_view<2>(static_cast<TY*>(nullptr), {c.m, c.n}), params))
      names.push_back(std::move(name));
    return names;
  };
  k.prepare = [c](const Queue& queue, const RunOptions& options) {
    return std::make_unique<ReducedGemmInstance<T, TY>>(queue, c, options);
  };
  return k;
}

}  // namespace

std::vector<Case> gemm_reduced_cases() {
  const Epilogue relu{Activation::kRelu, 0.0f};
  const GemmCase shapes[] = {
      {17, 61, 33, false, true, CKind::kRow, relu, 1.0f, 1.0f, false, false},
      {33, 1452, 128, false, false, CKind::kRow, relu, 1.0f, 1.0f, false, false},
      {16, 92928, 128, false, false, CKind::kRow, relu, 1.0f, 1.0f, false, false},
      // odd K (a zero-padded last pair), B^T, alpha and beta, a row tail of 1 and 3 vectors
      {19, 77, 48, false, true, CKind::kRow, Epilogue{}, 0.5f, 2.0f, false, false},
      {256, 92928, 128, false, false, CKind::kRow, relu, 1.0f, 1.0f, false, false},
  };
  std::vector<Case> cases;
  for (const GemmCase& c : shapes) {
    cases.push_back(reduced_case<bf16, float>(c, "bf16_f32"));
    cases.push_back(reduced_case<bf16, bf16>(c, "bf16"));
    cases.push_back(reduced_case<fp16, float>(c, "f16_f32"));
    cases.push_back(reduced_case<fp16, fp16>(c, "f16"));
  }
  return cases;
}

}  // namespace kaas::cases
