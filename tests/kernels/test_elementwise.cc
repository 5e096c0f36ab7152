#include "kaas/kernels/elementwise.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cases/case.h"
#include "cases/elementwise_cases.h"
#include "cases/registry.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class ElementwiseTest : public ::testing::TestWithParam<const Backend*> {};

// Every case of cases/elementwise_cases.cc against its host reference.
TEST_P(ElementwiseTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "elementwise");
}

// The cases again with every standard group size and a fixed small grid (grid-stride loops).
TEST_P(ElementwiseTest, GroupSizesAndGridsGiveTheSameResult) {
  Queue queue(*GetParam());
  for (const cases::Case& c : cases::cases_of("elementwise")) {
    if (c.reference_ops > 1e7 * kSanitizerBudgetScale) continue;
    for (int group_size : standard_group_sizes()) {
      for (int64_t groups : {int64_t{0}, int64_t{3}}) {
        cases::RunOptions options;
        options.config = {group_size, groups};
        const cases::Check check = cases::run_and_check(queue, c, options);
        EXPECT_TRUE(check.passed()) << c.name << " group_size " << group_size << " groups "
                                    << groups << ": " << check.detail();
      }
    }
  }
}

// A 1-D copy from every third element on the standard sizes (the empty one included).
TEST_P(ElementwiseTest, StridedCopyOnStandardSizes) {
  Queue queue(*GetParam());
  for (int64_t n : standard_sizes()) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto x = random_floats(size_t(3 * n), uint32_t(n));
    GuardedArray<float> dx(queue, x), dy(queue, size_t(n));
    const std::vector<int64_t> shape = {n}, stride = {3};
    copy_strided(queue, to_rank6(static_cast<const float*>(dx.view().data), shape, stride),
                 to_rank6(dy.view().data, shape));
    const auto y = dy.read();
    for (int64_t i = 0; i < n; ++i) ASSERT_TRUE(same_bits(y[i], x[3 * i])) << "at " << i;
  }
}

TEST(ElementwiseViews, BroadcastViewFollowsNumpyRules) {
  const std::vector<int64_t> shape = {3, 1}, target = {2, 3, 4};
  const View<const float, 6> v = broadcast_view(static_cast<const float*>(nullptr), shape, target);
  const int64_t extents[6] = {1, 1, 1, 2, 3, 4}, strides[6] = {0, 0, 0, 0, 1, 0};
  for (int d = 0; d < 6; ++d) {
    EXPECT_EQ(v.extent[d], extents[d]) << d;
    if (v.extent[d] > 1) {
      EXPECT_EQ(v.stride[d], strides[d]) << d;
    }
  }
  const std::vector<int64_t> bad = {3, 2};
  try {
    broadcast_view(static_cast<const float*>(nullptr), bad, target);
    FAIL() << "[3, 2] broadcast to [2, 3, 4]";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(),
                 "broadcast: operand shape [3,2]: expected broadcastable to [2,3,4], received "
                 "incompatible dimension");
  }
  const std::vector<int64_t> rank7 = {1, 1, 1, 1, 1, 1, 1};
  EXPECT_THROW(to_rank6(static_cast<float*>(nullptr), rank7), Error);
}

TEST_P(ElementwiseTest, RejectsBadArgumentsBeforeLaunching) {
  Queue queue(*GetParam());
  GuardedArray<float> a(queue, std::vector<float>(12, 1.0f)),
      y(queue, std::vector<float>(12, 2.0f));
  const std::vector<int64_t> s34 = {3, 4}, s43 = {4, 3}, s26 = {2, 6};
  const auto av = to_rank6(static_cast<const float*>(a.view().data), s34);
  try {
    binary(queue, BinaryOp::kAdd, av, av, to_rank6(y.view().data, s43));
    FAIL() << "extent mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "binary: a extent[4]: expected 4, received 3");
  }
  try {
    copy_strided(queue, av, to_rank6(y.view().data, s26));
    FAIL() << "extent mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "copy_strided: src extent[4]: expected 2, received 3");
  }
  EXPECT_THROW(copy_strided(queue, av, to_rank6(y.view().data, s34), {2048, 0}), Error);
  EXPECT_EQ(y.read(), std::vector<float>(12, 2.0f));  // untouched
}

KAAS_INSTANTIATE_FOR_BACKENDS(ElementwiseTest);

}  // namespace
}  // namespace kaas::testing
