// backends/half.h: the portable bf16 / fp16 conversions against values computed from the bit
// fields in double precision, the double-precision rounding of cases::reference_*, and, where
// the CPU has them, its own conversion instructions (F16C, AVX512-BF16).

#include "kaas/backends/half.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>

#include "cases/convert_cases.h"
#include "kaas/backends/cpu/cpu_features.h"

namespace kaas {
namespace {

bool is_nan_bits(uint16_t bits, uint16_t exponent_mask) {
  return (bits & exponent_mask) == exponent_mask && (bits & ~exponent_mask & 0x7fffu) != 0;
}

TEST(Half, Fp16ToFloatIsExactForEveryPattern) {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const float got = math::portable::fp16_to_float(fp16{uint16_t(bits)});
    const int field = (bits >> 10) & 31, mantissa = bits & 1023;
    const double sign = (bits & 0x8000u) ? -1.0 : 1.0;
    if (field == 31) {
      ASSERT_EQ(std::isnan(got), mantissa != 0) << bits;
      if (mantissa == 0) {
        ASSERT_EQ(double(got), sign * HUGE_VAL) << bits;
      }
      continue;
    }
    const double expected = field == 0 ? sign * std::ldexp(mantissa, -24)
                                       : sign * std::ldexp(mantissa + 1024, field - 25);
    ASSERT_EQ(double(got), expected) << bits;
    ASSERT_EQ(std::signbit(got), (bits & 0x8000u) != 0) << bits;
  }
}

TEST(Half, EveryPatternRoundTrips) {
  for (uint32_t bits = 0; bits <= 0xffffu; ++bits) {
    const uint16_t b = uint16_t(bits);
    if (!is_nan_bits(b, 0x7c00u)) {
      ASSERT_EQ(math::portable::float_to_fp16(math::portable::fp16_to_float(fp16{b})).bits, b);
    }
    if (!is_nan_bits(b, 0x7f80u)) {
      ASSERT_EQ(math::portable::float_to_bf16(math::portable::bf16_to_float(bf16{b})).bits, b);
    }
  }
}

// Random floats, ties, subnormals, overflow thresholds, infinities and NaN.
TEST(Half, NarrowingMatchesDoublePrecisionRounding) {
  const std::vector<float> x = cases::convert_inputs(2'000'000, 11u);
  for (float v : x) {
    const uint16_t f = math::portable::float_to_fp16(v).bits;
    const uint16_t b = math::portable::float_to_bf16(v).bits;
    if (std::isnan(v)) {
      ASSERT_TRUE(is_nan_bits(f, 0x7c00u) && is_nan_bits(b, 0x7f80u)) << v;
      continue;
    }
    ASSERT_EQ(f, cases::reference_fp16(v).bits) << v;
    ASSERT_EQ(b, cases::reference_bf16(v).bits) << v;
  }
}

TEST(Half, EdgeValues) {
  using math::portable::float_to_bf16;
  using math::portable::float_to_fp16;
  EXPECT_EQ(float_to_fp16(65504.0f).bits, 0x7bffu);
  EXPECT_EQ(float_to_fp16(65519.996f).bits, 0x7bffu);  // just below the tie: the largest finite
  EXPECT_EQ(float_to_fp16(65520.0f).bits, 0x7c00u);    // the tie goes to even: infinity
  EXPECT_EQ(float_to_fp16(-std::numeric_limits<float>::infinity()).bits, 0xfc00u);
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -24)).bits, 0x0001u);  // smallest subnormal
  EXPECT_EQ(float_to_fp16(std::ldexp(1.0f, -25)).bits, 0x0000u);  // its half: ties to even 0
  EXPECT_EQ(float_to_fp16(std::ldexp(1.5f, -25)).bits, 0x0001u);
  EXPECT_EQ(float_to_fp16(std::ldexp(3.0f, -25)).bits, 0x0002u);  // 1.5 ulp: ties to even 2
  EXPECT_EQ(float_to_fp16(-0.0f).bits, 0x8000u);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()).bits, 0x7f80u);  // overflows
  EXPECT_EQ(float_to_bf16(1.00390625f).bits, 0x3f80u);  // 1 + 2^-8: tie, to even (1.0)
  EXPECT_EQ(float_to_bf16(1.01171875f).bits, 0x3f82u);  // 1 + 3 * 2^-8: tie, to even
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::denorm_min()).bits, 0x0000u);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::quiet_NaN()).bits & 0x7fc0u, 0x7fc0u);
  // A signalling NaN whose payload lies only in the dropped bits stays a NaN (quiet).
  EXPECT_EQ(float_to_bf16(math::bits_float(0x7f800001u)).bits, 0x7fc0u);
  EXPECT_EQ(float_to_fp16(math::bits_float(0x7f800001u)).bits, 0x7e00u);
}

__attribute__((target("f16c"))) uint16_t f16c_convert(float v) {
  return uint16_t(_cvtss_sh(v, _MM_FROUND_TO_NEAREST_INT));
}

__attribute__((target("avx512f,avx512bf16,avx512vl"))) uint16_t avx512_bf16_convert(float v) {
  // (GCC 12's scalar _mm_cvtness_sbh reads an undefined register; the vector form does not.)
  const auto h = _mm256_cvtneps_pbh(_mm256_set1_ps(v));
  uint16_t bits;
  std::memcpy(&bits, &h, sizeof bits);
  return bits;
}

// The CPU's own instructions as a second, independent reference.
TEST(Half, AgreesWithTheCpusConversionInstructions) {
  const std::vector<float> x = cases::convert_inputs(1'000'000, 12u);
  if (!cpu_features().f16c) GTEST_SKIP() << "no F16C on this CPU";
  for (float v : x) {
    if (std::isnan(v)) continue;
    ASSERT_EQ(math::portable::float_to_fp16(v).bits, f16c_convert(v)) << v;
  }
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  for (float v : x) {
    // vcvtneps2bf16 treats subnormal inputs as zero (it ignores MXCSR); kaas rounds them.
    if (std::isnan(v) || std::fpclassify(v) == FP_SUBNORMAL) continue;
    ASSERT_EQ(math::portable::float_to_bf16(v).bits, avx512_bf16_convert(v)) << v;
  }
}

}  // namespace
}  // namespace kaas
