#include "kaas/kernels/convert.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cases/case.h"
#include "cases/convert_cases.h"
#include "cases/registry.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class ConvertTest : public ::testing::TestWithParam<const Backend*> {};

// Every case of cases/convert_cases.cc: narrowing against the double-precision rounding of
// cases::reference_bf16/fp16, widening against each bit pattern's value from its fields.
TEST_P(ConvertTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "convert");
}

TEST_P(ConvertTest, GroupSizesAndGridsGiveTheSameResult) {
  Queue queue(*GetParam());
  const std::vector<cases::Case> all = cases::cases_of("convert");
  for (size_t i = 0; i < 4; ++i) {  // the first size of each direction
    for (int group_size : standard_group_sizes()) {
      cases::RunOptions options;
      options.config = {group_size, 3};
      const cases::Check check = cases::run_and_check(queue, all[i], options);
      EXPECT_TRUE(check.passed()) << all[i].name << " group_size " << group_size << ": "
                                  << check.detail();
    }
  }
}

TEST_P(ConvertTest, StandardSizesRoundTripThroughBothFormats) {
  Queue queue(*GetParam());
  for (int64_t n : standard_sizes()) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const std::vector<float> x = cases::convert_inputs(n, uint32_t(n) + 3u);
    GuardedArray<float> dx(queue, x), back(queue, size_t(n));
    GuardedArray<bf16> b(queue, size_t(n));
    convert(queue, dx.const_view(), b.view());
    convert(queue, b.const_view(), back.view());
    const auto y = back.read();
    for (int64_t i = 0; i < n; ++i) {
      const float expected = math::portable::bf16_to_float(cases::reference_bf16(x[i]));
      ASSERT_TRUE(same_bits(y[i], expected) || (y[i] != y[i] && expected != expected))
          << "at " << i << ": " << x[i] << " -> " << y[i] << ", expected " << expected;
    }
  }
}

TEST_P(ConvertTest, RejectsMismatchedExtents) {
  Queue queue(*GetParam());
  GuardedArray<float> x(queue, size_t(8));
  GuardedArray<fp16> y(queue, size_t(7));
  try {
    convert(queue, x.const_view(), y.view());
    FAIL() << "extents 8 and 7";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "convert: y extent (same as x): expected 8, received 7");
  }
}

KAAS_INSTANTIATE_FOR_BACKENDS(ConvertTest);

}  // namespace
}  // namespace kaas::testing
