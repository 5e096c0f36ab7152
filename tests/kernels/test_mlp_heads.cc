#include "kaas/kernels/mlp_heads.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cases/case.h"
#include "cases/mlp_heads_cases.h"
#include "cases/registry.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class MlpHeadsTest : public ::testing::TestWithParam<const Backend*> {};

// Every case of cases/mlp_heads_cases.cc against its host reference.
TEST_P(MlpHeadsTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "mlp_heads");
}

// The first (EmTrkMichelId, 257 rows) and the transposed case with every standard group size.
TEST_P(MlpHeadsTest, GroupSizesGiveTheSameResult) {
  Queue queue(*GetParam());
  const auto list = cases::cases_of("mlp_heads");
  for (const cases::Case& c : {list.front(), list.back()}) {
    for (int group_size : standard_group_sizes()) {
      cases::RunOptions options;
      options.config = {group_size, 0};
      const cases::Check check = cases::run_and_check(queue, c, options);
      EXPECT_TRUE(check.passed()) << c.name << " group_size " << group_size << ": "
                                  << check.detail();
    }
  }
}

// Integer-valued inputs and ReLU heads without softmax saturation: h and the logits are exact,
// so the softmax of equal logits is exactly 1/3 and ReLU heads are bit-exact.
TEST_P(MlpHeadsTest, IntegerValuedInputsGiveExactHeads) {
  Queue queue(*GetParam());
  const int64_t rows = 33, in = 20, hidden = 8;
  const auto x = random_integers<float>(rows * in, 1, -3, 3);
  const auto w = random_integers<float>(in * hidden, 2, -2, 2);
  const auto wb = random_integers<float>(hidden * 2, 3, -2, 2);
  const std::vector<float> wa(hidden * 3, 0.0f), ba = {5, 5, 5}, bb = {1, -1};
  GuardedArray<float> dx(queue, x), dw(queue, w), dwa(queue, wa), dba(queue, ba), dwb(queue, wb),
      dbb(queue, bb), da(queue, rows * 3), db(queue, rows * 2);
  const auto cview = [](const GuardedArray<float>& a, int64_t r, int64_t c) {
    return make_view<2>(static_cast<const float*>(a.view().data), {r, c});
  };
  mlp_two_heads(queue, cview(dx, rows, in), {cview(dw, in, hidden), {}, {Activation::kRelu, 0}},
                {cview(dwa, hidden, 3), dba.const_view(), {}},
                {cview(dwb, hidden, 2), dbb.const_view(), {Activation::kRelu, 0}},
                make_view<2>(da.view().data, {rows, 3}), make_view<2>(db.view().data, {rows, 2}));
  const auto a = da.read(), b = db.read();
  for (int64_t r = 0; r < rows; ++r) {
    for (int j = 0; j < 3; ++j) EXPECT_FLOAT_EQ(a[r * 3 + j], 1.0f / 3.0f) << r;
    for (int j = 0; j < 2; ++j) {
      double sum = bb[j];
      for (int64_t k = 0; k < hidden; ++k) {
        double h = 0;
        for (int64_t p = 0; p < in; ++p) h += double(x[r * in + p]) * w[p * hidden + k];
        sum += std::max(h, 0.0) * wb[k * 2 + j];
      }
      ASSERT_EQ(b[r * 2 + j], float(std::max(sum, 0.0))) << r << "," << j;
    }
  }
}

TEST_P(MlpHeadsTest, RejectsBadArgumentsBeforeLaunching) {
  Queue queue(*GetParam());
  GuardedArray<float> buffer(queue, std::vector<float>(4096, 0.5f));
  GuardedArray<float> out(queue, std::vector<float>(64, 7.0f));
  const float* data = buffer.view().data;
  const auto view = [&](int64_t r, int64_t c) { return make_view<2>(data, {r, c}); };
  const auto call = [&](int64_t rows, int64_t in, int64_t hidden, int64_t out_a, int64_t out_b,
                        int64_t out_rows) {
    mlp_two_heads(queue, view(rows, in), {view(in, hidden), {}, {}}, {view(hidden, out_a), {}, {}},
                  {view(hidden, out_b), {}, {}}, make_view<2>(out.view().data, {out_rows, out_a}),
                  make_view<2>(out.view().data, {out_rows, out_b}));
  };
  auto expect_message = [&](auto f, const std::string& message) {
    try {
      f();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(e.what(), message);
    }
  };
  expect_message([&] { call(2, 10, 65, 3, 1, 2); },
                 "mlp_two_heads: hidden.w columns: expected 1..64, received 65");
  expect_message([&] { call(2, 10, 8, 17, 1, 2); },
                 "mlp_two_heads: head_a.w columns: expected 1..16, received 17");
  expect_message([&] { call(2, 10, 8, 3, 1, 3); },
                 "mlp_two_heads: out_a rows: expected 2, received 3");
  expect_message(
      [&] {
        mlp_two_heads(queue, view(2, 10), {view(10, 8), make_view(data, 7), {}},
                      {view(8, 3), {}, {}}, {view(8, 1), {}, {}},
                      make_view<2>(out.view().data, {2, 3}), make_view<2>(out.view().data, {2, 1}));
      },
      "mlp_two_heads: hidden.b extent: expected 0 or 8, received 7");
  expect_message(
      [&] {
        mlp_two_heads(queue, view(2, 10), {view(9, 8), {}, {}}, {view(8, 3), {}, {}},
                      {view(8, 1), {}, {}}, make_view<2>(out.view().data, {2, 3}),
                      make_view<2>(out.view().data, {2, 1}));
      },
      "mlp_two_heads: hidden.w rows: expected 10, received 9");
  call(0, 10, 8, 3, 1, 0);                              // no rows: nothing to do
  EXPECT_EQ(out.read(), std::vector<float>(64, 7.0f));  // untouched
}

KAAS_INSTANTIATE_FOR_BACKENDS(MlpHeadsTest);

}  // namespace
}  // namespace kaas::testing
