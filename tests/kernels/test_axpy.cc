#include "kaas/kernels/axpy.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cases/axpy_cases.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class AxpyTest : public ::testing::TestWithParam<const Backend*> {};

// y is updated in place, so an element written twice (or skipped) cannot match a*x + y.
TEST_P(AxpyTest, MatchesDoubleReferenceOnEverySizeAndGroupSize) {
  Queue queue(*GetParam());
  const float a = -1.75f;
  for (int64_t n : standard_sizes()) {
    const auto x = random_floats(static_cast<size_t>(n), 1u + static_cast<uint32_t>(n));
    const auto y = random_floats(static_cast<size_t>(n), 7u + static_cast<uint32_t>(n));
    for (int group_size : standard_group_sizes()) {
      for (int64_t groups : {int64_t{0}, int64_t{1}, int64_t{3}}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " group_size=" + std::to_string(group_size) +
                     " groups=" + std::to_string(groups));
        GuardedArray<float> dx(queue, x), dy(queue, y);
        axpy(queue, a, dx.const_view(), dy.view(), {group_size, groups});
        const auto out = dy.read();
        int64_t wrong = 0;
        for (int64_t i = 0; i < n; ++i) {
          wrong += !(std::abs(out[i] - cases::axpy_expected(a, x[i], y[i])) <=
                     cases::axpy_tolerance(a, x[i], y[i]));
        }
        EXPECT_EQ(wrong, 0);
      }
    }
  }
}

TEST_P(AxpyTest, IntegerValuedInputsAreBitExact) {
  Queue queue(*GetParam());
  const auto x = random_integers<float>(100'003, 3, -1000, 1000);
  const auto y = random_integers<float>(100'003, 4, -1000, 1000);
  GuardedArray<float> dx(queue, x), dy(queue, y);
  axpy(queue, 3.0f, dx.const_view(), dy.view());
  const auto out = dy.read();
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(out[i], 3.0f * x[i] + y[i]) << "at " << i;
}

TEST_P(AxpyTest, StridedViews) {
  Queue queue(*GetParam());
  const auto x = random_integers<float>(300, 5, -50, 50);
  const auto y = random_integers<float>(200, 6, -50, 50);
  GuardedArray<float> dx(queue, x), dy(queue, y);
  View1<const float> xs = dx.const_view();
  View1<float> ys = dy.view();
  xs.extent[0] = 100, xs.stride[0] = 3;  // every third element of x
  ys.extent[0] = 100, ys.stride[0] = 2;  // into every second element of y
  axpy(queue, 2.0f, xs, ys);
  const auto out = dy.read();
  for (int i = 0; i < 200; ++i) {
    const float expected = i % 2 == 0 ? 2.0f * x[3 * (i / 2)] + y[i] : y[i];
    ASSERT_EQ(out[i], expected) << "at " << i;
  }
}

TEST_P(AxpyTest, RejectsBadArgumentsBeforeLaunching) {
  Queue queue(*GetParam());
  GuardedArray<float> dx(queue, std::vector<float>(10, 1.0f)),
      dy(queue, std::vector<float>(9, 1.0f));
  try {
    axpy(queue, 1.0f, dx.const_view(), dy.view());
    FAIL() << "extent mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "axpy: y extent (same as x): expected 10, received 9");
  }
  EXPECT_EQ(dy.read(), std::vector<float>(9, 1.0f));  // untouched

  View1<float> null_view;
  null_view.extent[0] = 5;
  EXPECT_THROW(axpy(queue, 1.0f, null_view, null_view), Error);
  GuardedArray<float> d10(queue, std::vector<float>(10, 1.0f));
  try {
    axpy(queue, 1.0f, dx.const_view(), d10.view(), {2048, 0});
    FAIL() << "group size 2048 accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("group_size: expected 1..1024, received 2048"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(axpy(queue, 1.0f, dx.const_view(), d10.view(), {-1, 0}), Error);
}

// Every case of cases/axpy_cases.cc, with every implementation, against its host reference.
TEST_P(AxpyTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "axpy");
}

KAAS_INSTANTIATE_FOR_BACKENDS(AxpyTest);

}  // namespace
}  // namespace kaas::testing
