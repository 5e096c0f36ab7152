#include "cases/convert_cases.h"

#include <cmath>
#include <limits>
#include <random>
#include <string>

#include "cases/guarded.h"
#include "cases/uniform.h"
#include "kaas/kernels/convert.h"

namespace kaas::cases {

namespace {

// A binary format with `precision` significand bits (implicit bit included), smallest normal
// exponent `min_exponent` and largest finite value `max_finite`.
struct Format {
  int precision;
  int min_exponent;
  double max_finite;
};
constexpr Format kBf16{8, -126, 3.3895313892515355e38};
constexpr Format kFp16{11, -14, 65504.0};

// x rounded to the format, in double (exact: x and the result are representable).
double round_to_format(float x, const Format& f) {
  const double v = x;
  if (std::isnan(v) || std::isinf(v) || v == 0) return v;
  const int exponent = std::max(std::ilogb(v), f.min_exponent);
  const double quantum = std::ldexp(1.0, exponent - (f.precision - 1));
  const double rounded = std::nearbyint(v / quantum) * quantum;  // ties to even
  if (std::abs(rounded) > f.max_finite) return std::copysign(HUGE_VAL, v);
  return rounded;
}

}  // namespace

// The rounded value is representable in the 16-bit format, so the (exact) conversion of it
// chooses no rounding of its own; NaN is compared as "a NaN" by the checks.
bf16 reference_bf16(float x) {
  return math::portable::float_to_bf16(float(round_to_format(x, kBf16)));
}
fp16 reference_fp16(float x) {
  return math::portable::float_to_fp16(float(round_to_format(x, kFp16)));
}

std::vector<float> convert_inputs(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> exponent(-30, 20);  // fp16 subnormals .. beyond its max
  std::uniform_int_distribution<int> pick(0, 15);
  std::uniform_int_distribution<uint32_t> bits16(0, 0xffff);
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::denorm_min(),
                            65504.0f,
                            65519.99f,
                            65520.0f,
                            std::numeric_limits<float>::max(),
                            5.9604645e-8f,
                            2.9802322e-8f};
  std::vector<float> x(size_t(std::max<int64_t>(n, 0)));
  for (size_t i = 0; i < x.size(); ++i) {
    const int kind = pick(rng);
    if (kind == 0) {
      x[i] = specials[i % std::size(specials)];
    } else if (kind <= 3) {
      // Halfway between two neighbouring bf16 (or fp16) values: a tie.
      const uint32_t upper = bits16(rng) << 16;
      x[i] = math::bits_float(upper | (kind == 1 ? 0x8000u : 0x7fffu));
    } else if (kind <= 5) {
      const float h = math::portable::fp16_to_float(fp16{uint16_t(bits16(rng))});
      x[i] = math::bits_float(math::float_bits(h) | (kind == 4 ? 0x1000u : 0x0fffu));
    } else {
      const float sign = (kind & 1) ? -1.0f : 1.0f;
      x[i] = sign * std::ldexp(uniform_float(rng, 1.0f, 2.0f), exponent(rng));
    }
  }
  return x;
}

namespace {

bool same_value(uint16_t got, uint16_t expected, uint16_t exponent_mask) {
  const bool expected_nan =
      (expected & exponent_mask) == exponent_mask && (expected & ~exponent_mask & 0x7fffu) != 0;
  const bool got_nan =
      (got & exponent_mask) == exponent_mask && (got & ~exponent_mask & 0x7fffu) != 0;
  return expected_nan ? got_nan : got == expected;  // any NaN payload is a NaN
}

// float -> T (T = bf16 or fp16).
template <class T>
class NarrowInstance : public Instance {
 public:
  NarrowInstance(const Queue& queue, int64_t n, const RunOptions& options)
      : queue_(queue),
        options_(options),
        x_host_(convert_inputs(n, 29u)),
        x_(queue, x_host_),
        y_(queue, x_host_.size()) {}
  void run() override { convert(queue_, x_.const_view(), y_.view(), options_.config); }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto out = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const uint16_t exponent_mask = std::is_same_v<T, bf16> ? 0x7f80u : 0x7c00u;
    for (size_t i = 0; i < out.size(); ++i) {
      const T expected = std::is_same_v<T, bf16> ? T{reference_bf16(x_host_[i]).bits}
                                                 : T{reference_fp16(x_host_[i]).bits};
      checker.require(same_value(out[i].bits, expected.bits, exponent_mask), "y", int64_t(i), [&] {
        return "0x" + std::to_string(out[i].bits) + ", expected 0x" +
               std::to_string(expected.bits) + " for " + std::to_string(x_host_[i]);
      });
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  RunOptions options_;
  std::vector<float> x_host_;
  Guarded<float> x_;
  Guarded<T> y_;
};

// T -> float, every one of the 65536 bit patterns (n / 65536 times).
template <class T>
class WidenInstance : public Instance {
 public:
  WidenInstance(const Queue& queue, int64_t n, const RunOptions& options)
      : queue_(queue),
        options_(options),
        x_host_(all_patterns(n)),
        x_(queue, x_host_),
        y_(queue, x_host_.size()) {}
  void run() override { convert(queue_, x_.const_view(), y_.view(), options_.config); }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto out = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    for (size_t i = 0; i < out.size(); ++i) {
      const double e = expected(x_host_[i].bits);
      if (std::isnan(e)) {
        checker.require(std::isnan(out[i]), "y", int64_t(i), [&] { return "not a NaN"; });
      } else {
        checker.bits(out[i], float(e), "y", int64_t(i));  // exact: e is a float value
      }
    }
    return checker.result();
  }

 private:
  static std::vector<T> all_patterns(int64_t n) {
    std::vector<T> x(static_cast<size_t>(n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = T{uint16_t(i & 0xffffu)};
    return x;
  }
  // The value of the bit pattern from its fields, in double.
  static double expected(uint16_t bits) {
    const bool bf = std::is_same_v<T, bf16>;
    const int mantissa_bits = bf ? 7 : 10, bias = bf ? 127 : 15, max_field = bf ? 255 : 31;
    const int field = (bits >> mantissa_bits) & max_field;
    const int mantissa = bits & ((1 << mantissa_bits) - 1);
    const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
    if (field == max_field) return mantissa ? std::nan("") : sign * HUGE_VAL;
    if (field == 0) return sign * std::ldexp(mantissa, 1 - bias - mantissa_bits);
    return sign * std::ldexp(mantissa + (1 << mantissa_bits), field - bias - mantissa_bits);
  }

  const Queue& queue_;
  RunOptions options_;
  std::vector<T> x_host_;
  Guarded<T> x_;
  Guarded<float> y_;
};

template <template <class> class Instance, class T>
Case make_case(const std::string& direction, int64_t n, double bytes_per_element) {
  Case k;
  k.kernel = "convert";
  k.name = "convert_" + direction + "/{backend}/" + std::to_string(n);
  k.title = "convert " + direction + " n=" + std::to_string(n);
  k.bytes = bytes_per_element * double(n);
  k.reference_ops = 20.0 * double(n);
  k.impls = default_impl;
  k.prepare = [n](const Queue& queue, const RunOptions& options) {
    return std::make_unique<Instance<T>>(queue, n, options);
  };
  return k;
}

}  // namespace

std::vector<Case> convert_cases() {
  std::vector<Case> cases;
  for (int64_t n : {int64_t{65536}, int64_t{1} << 20, int64_t{1} << 24}) {
    cases.push_back(make_case<NarrowInstance, bf16>("f32_bf16", n, 6.0));
    cases.push_back(make_case<NarrowInstance, fp16>("f32_f16", n, 6.0));
    cases.push_back(make_case<WidenInstance, bf16>("bf16_f32", n, 6.0));
    cases.push_back(make_case<WidenInstance, fp16>("f16_f32", n, 6.0));
  }
  return cases;
}

}  // namespace kaas::cases
