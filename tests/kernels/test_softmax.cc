#include "kaas/kernels/softmax.h"

#include <gtest/gtest.h>

#include <cmath>

#include "cases/softmax_cases.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class SoftmaxTest : public ::testing::TestWithParam<const Backend*> {};

struct Shape3 {
  int64_t outer, length, inner;
};

TEST_P(SoftmaxTest, MatchesDoubleReferenceAlongAnyAxis) {
  Queue queue(*GetParam());
  const Shape3 shapes[] = {{1, 1, 1},    {4, 3, 1},   {2, 31, 3}, {3, 256, 1},
                           {1, 1000, 2}, {257, 3, 1}, {0, 5, 2}};
  for (const Shape3 s : shapes) {
    for (SoftmaxKind kind : {SoftmaxKind::kSoftmax, SoftmaxKind::kLogSoftmax}) {
      for (float offset : {0.0f, 10000.0f, -10000.0f}) {  // large_number: no overflow, no NaN
        SCOPED_TRACE("shape " + std::to_string(s.outer) + "x" + std::to_string(s.length) + "x" +
                     std::to_string(s.inner) + " offset " + std::to_string(offset));
        const int64_t n = s.outer * s.length * s.inner;
        auto x = random_floats(n, static_cast<uint32_t>(n + s.length), -5.0f, 5.0f);
        for (auto& v : x) v += offset;
        GuardedArray<float> dx(queue, x), dy(queue, n);
        softmax(
            queue, kind,
            make_view<3>(static_cast<const float*>(dx.view().data), {s.outer, s.length, s.inner}),
            make_view<3>(dy.view().data, {s.outer, s.length, s.inner}));
        const auto y = dy.read();
        std::vector<double> expected(s.length), tolerance(s.length);
        for (int64_t o = 0; o < s.outer; ++o) {
          for (int64_t i = 0; i < s.inner; ++i) {
            auto at = [&](int64_t l) { return (o * s.length + l) * s.inner + i; };
            cases::softmax_reference(kind, x.data() + at(0), s.length, s.inner, expected.data(),
                                     tolerance.data());
            for (int64_t l = 0; l < s.length; ++l) {
              ASSERT_NEAR(y[at(l)], expected[l], tolerance[l]) << "l=" << l;
            }
          }
        }
      }
    }
  }
}

TEST_P(SoftmaxTest, AxisConvenienceAndErrors) {
  Queue queue(*GetParam());
  const std::vector<float> x = {1, 2, 3, 4, 5, 6};
  GuardedArray<float> dx(queue, x), dy(queue, 6);
  const int64_t extents[2] = {2, 3};
  softmax(queue, SoftmaxKind::kSoftmax, dx.view().data, dy.view().data, extents, 2, -2);  // axis 0
  const auto y = dy.read();
  for (int j = 0; j < 3; ++j) {
    EXPECT_NEAR(y[j], 1.0 / (1.0 + std::exp(3.0)), 1e-7);
    EXPECT_NEAR(y[3 + j], 1.0 / (1.0 + std::exp(-3.0)), 1e-7);
  }
  try {
    softmax(queue, SoftmaxKind::kSoftmax, dx.view().data, dy.view().data, extents, 2, 2);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "softmax: axis: expected in [-2, 1], received 2");
  }
}

TEST_P(SoftmaxTest, ActivationsMatchDoubleReference) {
  Queue queue(*GetParam());
  auto x = random_floats(10'007, 9, -20.0f, 20.0f);
  x[0] = 100.0f, x[1] = -100.0f, x[2] = 0.0f, x[3] = -0.0f;  // sigmoid saturation, no NaN
  const Epilogue cases[] = {{Activation::kRelu, 0},
                            {Activation::kLeakyRelu, 0.1f},
                            {Activation::kSigmoid, 0},
                            {Activation::kNone, 0}};
  for (const Epilogue& e : cases) {
    GuardedArray<float> dx(queue, x), dy(queue, x.size());
    activate(queue, e, dx.const_view(), dy.view());
    const auto y = dy.read();
    for (size_t i = 0; i < x.size(); ++i) {
      const double expected = cases::activation_reference(e, x[i]);
      ASSERT_NEAR(y[i], expected, cases::activation_tolerance(expected))
          << to_string(e.activation) << " at x=" << x[i];
    }
  }
}

// Every case of cases/softmax_cases.cc, with every implementation, against its host reference.
TEST_P(SoftmaxTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "softmax");
}

KAAS_INSTANTIATE_FOR_BACKENDS(SoftmaxTest);

}  // namespace
}  // namespace kaas::testing
