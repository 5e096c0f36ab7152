// kernels/cpu/avx512_bf16_store.h: both roundings of fp32 lanes to bf16 (the integer form and the
// vcvtneps2bf16 form with its subnormal fallback) against the portable conversion, bit for bit,
// on CPUs with AVX512-BF16: random floats, ties, subnormals, infinities and NaNs.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "cases/convert_cases.h"
#include "kaas/backends/cpu/cpu_features.h"
#include "kaas/backends/half.h"
#include "tests/kernels/cpu/avx512_bf16_store_probe.h"

namespace kaas {
namespace {

constexpr int kLanes = 16;

struct Rounded {
  uint16_t integer[kLanes], converting[kLanes];
};

Rounded round_both(const float* lanes) {
  Rounded out;
  testing::avx512_bf16_store_probe(lanes, out.integer, out.converting);
  return out;
}

// Rounds x in vectors of 16 and compares every lane; returns how many vectors held a subnormal.
int expect_both_match_portable(const std::vector<float>& x) {
  int with_subnormal = 0;
  for (size_t i = 0; i + kLanes <= x.size(); i += kLanes) {
    const Rounded got = round_both(x.data() + i);
    bool subnormal = false;
    for (int lane = 0; lane < kLanes; ++lane) {
      const float v = x[i + lane];
      subnormal = subnormal || std::fpclassify(v) == FP_SUBNORMAL;
      const uint16_t want = math::portable::float_to_bf16(v).bits;
      EXPECT_EQ(got.integer[lane], want) << "integer rounding of " << v;
      EXPECT_EQ(got.converting[lane], want) << "converting rounding of " << v;
      if (got.integer[lane] != want || got.converting[lane] != want) return -1;
    }
    with_subnormal += subnormal ? 1 : 0;
  }
  return with_subnormal;
}

TEST(Avx512Bf16Store, BothRoundingsMatchThePortableConversion) {
  if (!testing::avx512_bf16_store_probe_compiled()) GTEST_SKIP() << "built without AVX512-BF16";
  if (!cpu_features().avx512bf16) GTEST_SKIP() << "no AVX512-BF16 on this CPU";
  const std::vector<float> x = cases::convert_inputs(200'000, 14u);
  // In order: vectors with and without subnormals (the fallback and the instruction).
  const int mixed = expect_both_match_portable(x);
  ASSERT_GT(mixed, 0) << "the inputs reach the subnormal fallback";
  ASSERT_LT(mixed, int(x.size() / kLanes)) << "the inputs reach the instruction";
  // Without subnormals every vector takes the instruction, NaNs and infinities included.
  std::vector<float> normal;
  for (float v : x)
    if (std::fpclassify(v) != FP_SUBNORMAL) normal.push_back(v);
  ASSERT_EQ(expect_both_match_portable(normal), 0);
  // One subnormal among ordinary values sends its vector to the integer form.
  std::vector<float> one(kLanes, 1.5f);
  one[7] = std::ldexp(1.75f, -130);
  ASSERT_EQ(expect_both_match_portable(one), 1);
}

}  // namespace
}  // namespace kaas
