#include "kaas/kernels/reduce.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "cases/reduce_cases.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

// Its own namespace: helper names (Case, Shape, ...) that other kernel tests use for the
// cases:: types stay apart in a unity build.
namespace kaas::testing::reduce_test {
namespace {

class ReduceTest : public ::testing::TestWithParam<const Backend*> {};

int64_t tree_steps(int group_size) {
  int64_t steps = 0;
  for (int w = 1; w < group_size; w *= 2) ++steps;
  return steps;
}

struct Shape {
  int64_t rows, cols;
};

TEST_P(ReduceTest, RowsMatchDoubleReference) {
  Queue queue(*GetParam());
  // The long row: a sum over a million values against the double reference; under
  // AddressSanitizer (the index arithmetic, scripts/test.sh step 2) 2^16 + 7 keep the odd tail
  // and every group's many passes at a sixteenth of the work (32 s on gpu_emu before).
  constexpr int64_t kLongRow = kAddressSanitizer ? (1 << 16) + 7 : (1 << 20) + 7;
  const Shape shapes[] = {{0, 5},  {1, 0},    {1, 1},        {3, 31},  {5, 32},
                          {7, 33}, {2, 1000}, {1, kLongRow}, {257, 33}};
  int64_t skipped = 0;
  for (const Shape s : shapes) {
    const auto x =
        random_floats(static_cast<size_t>(s.rows * s.cols), 11u + static_cast<uint32_t>(s.cols));
    for (int group_size : standard_group_sizes()) {
      const int64_t groups = std::min<int64_t>(s.rows, 4);
      if (!affordable(queue.backend(), s.rows * (tree_steps(group_size) + 2) * group_size)) {
        ++skipped;
        continue;
      }
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        SCOPED_TRACE("rows=" + std::to_string(s.rows) + " cols=" + std::to_string(s.cols) +
                     " group_size=" + std::to_string(group_size) +
                     " op=" + (op == ReduceOp::kSum ? "sum" : "max"));
        GuardedArray<float> dx(queue, x), dout(queue, static_cast<size_t>(s.rows));
        reduce_rows(queue, op,
                    make_view<2>(static_cast<const float*>(dx.view().data), {s.rows, s.cols}),
                    dout.view(), {group_size, groups});
        const auto out = dout.read();
        for (int64_t r = 0; r < s.rows; ++r) {
          const float* row = x.data() + r * s.cols;
          if (op == ReduceOp::kMax) {
            const float expected = s.cols == 0 ? -INFINITY : *std::max_element(row, row + s.cols);
            ASSERT_EQ(out[r], expected) << "row " << r;
          } else {
            const cases::Reduced want = cases::reduce_reference(op, row, s.cols);
            ASSERT_NEAR(out[r], want.value, want.tolerance) << "row " << r;
          }
        }
      }
    }
  }
  if (skipped > 0)
    std::printf("[ emulator ] %lld configurations over budget not run\n", (long long)skipped);
}

TEST_P(ReduceTest, AllMatchesDoubleReference) {
  Queue queue(*GetParam());
  for (int64_t n : standard_sizes()) {
    const auto x = random_floats(static_cast<size_t>(n), 21u + static_cast<uint32_t>(n));
    for (int group_size : standard_group_sizes()) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        SCOPED_TRACE("n=" + std::to_string(n) + " group_size=" + std::to_string(group_size));
        GuardedArray<float> dx(queue, x), dout(queue, 1);
        reduce_all(queue, op, dx.const_view(), dout.view(), {group_size, 0});
        const float got = dout.read()[0];
        if (op == ReduceOp::kMax) {
          ASSERT_EQ(got, n == 0 ? -INFINITY : *std::max_element(x.begin(), x.end()));
        } else {
          const cases::Reduced want = cases::reduce_reference(op, x.data(), n);
          ASSERT_NEAR(got, want.value, want.tolerance);
        }
      }
    }
  }
}

TEST_P(ReduceTest, IntegerValuedSumsAreBitExact) {
  Queue queue(*GetParam());
  const int64_t n = (1 << 20) + 7;
  const auto x = random_integers<float>(static_cast<size_t>(n), 5, -8, 8);  // |sum| < 2^24
  double sum = 0;
  for (float v : x) sum += v;
  for (int group_size : {1, 7, 256}) {
    GuardedArray<float> dx(queue, x), dout(queue, 1);
    reduce_all(queue, ReduceOp::kSum, dx.const_view(), dout.view(), {group_size, 0});
    EXPECT_EQ(dout.read()[0], static_cast<float>(sum)) << "group_size " << group_size;
  }
  GuardedArray<float> dx(queue, x), dout(queue, 1);
  reduce_rows(queue, ReduceOp::kSum,
              make_view<2>(static_cast<const float*>(dx.view().data), {1, n}), dout.view(),
              {64, 1});
  EXPECT_EQ(dout.read()[0], static_cast<float>(sum));
}

TEST_P(ReduceTest, ExplicitWorkspaceAndErrors) {
  Queue queue(*GetParam());
  const auto x = random_integers<float>(5000, 8, -3, 3);
  GuardedArray<float> dx(queue, x), dout(queue, 1);
  const LaunchConfig config{32, 5};
  ASSERT_EQ(reduce_all_workspace_size(queue, 5000, config), 5);
  GuardedArray<float> small(queue, 4), enough(queue, 5);
  try {
    reduce_all(queue, ReduceOp::kSum, dx.const_view(), dout.view(), small.view(), config);
    FAIL() << "small workspace accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "reduce_all: workspace extent: expected >= 5, received 4");
  }
  reduce_all(queue, ReduceOp::kSum, dx.const_view(), dout.view(), enough.view(), config);
  double sum = 0;
  for (float v : x) sum += v;
  EXPECT_EQ(dout.read()[0], static_cast<float>(sum));

  GuardedArray<float> rows_out(queue, 3);
  try {
    reduce_rows(queue, ReduceOp::kMax,
                make_view<2>(static_cast<const float*>(dx.view().data), {4, 10}), rows_out.view());
    FAIL() << "row count mismatch accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_STREQ(e.what(), "reduce_rows: out extent (rows of x): expected 4, received 3");
  }
  EXPECT_THROW(reduce_all(queue, static_cast<ReduceOp>(7), dx.const_view(), dout.view()), Error);
}

// Every case of cases/reduce_cases.cc, with every implementation, against its host reference.
TEST_P(ReduceTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "reduce");
}

KAAS_INSTANTIATE_FOR_BACKENDS(ReduceTest);

}  // namespace
}  // namespace kaas::testing::reduce_test
