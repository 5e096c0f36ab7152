#include "kaas/kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>

#include "cases/gemm_cases.h"
#include "cases/softmax_cases.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/omp_threads.h"
#include "tests/support/reference.h"

#if KAAS_TEST_HAVE_EIGEN
#include <Eigen/Dense>
#endif

// Its own namespace: helper names (Case, Shape, ...) that other kernel tests use for the
// cases:: types stay apart in a unity build.
namespace kaas::testing::gemm_test {
namespace {

class GemmTest : public ::testing::TestWithParam<const Backend*> {};

using cases::CKind;

struct Case {
  int64_t m, k, n;
  bool trans_a, trans_b;
  CKind c_kind;
  Epilogue epilogue;
  float alpha, beta;
};

std::string describe(const Case& c, GemmImpl impl, int group_size) {
  return "M=" + std::to_string(c.m) + " K=" + std::to_string(c.k) + " N=" + std::to_string(c.n) +
         " transA=" + std::to_string(c.trans_a) + " transB=" + std::to_string(c.trans_b) +
         " C=" + std::to_string(static_cast<int>(c.c_kind)) +
         " act=" + std::string(to_string(c.epilogue.activation)) +
         " impl=" + std::to_string(static_cast<int>(impl)) +
         " group_size=" + std::to_string(group_size);
}

#if KAAS_TEST_HAVE_EIGEN
// The case reference against an independent one: Eigen's double-precision product.
void expect_eigen_agrees(const cases::GemmCase& c, const cases::GemmInputs& in,
                         const std::vector<double>& expected) {
  using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  MatrixD op_a(c.m, c.k), op_b(c.k, c.n);
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.k; ++j)
      op_a(i, j) = c.trans_a ? in.a[j * c.m + i] : in.a[i * c.k + j];
  for (int64_t i = 0; i < c.k; ++i)
    for (int64_t j = 0; j < c.n; ++j)
      op_b(i, j) = c.trans_b ? in.b[j * c.k + i] : in.b[i * c.n + j];
  const MatrixD product = op_a * op_b;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      double value = c.alpha * product(i, j);
      if (!in.c.empty()) {
        value += c.beta * in.c[(in.c_rows == 1 ? 0 : i) * in.c_cols + (in.c_cols == 1 ? 0 : j)];
      }
      const double want = cases::activation_reference(c.epilogue, value);
      ASSERT_NEAR(expected[i * c.n + j], want, 1e-9 * (1 + std::abs(want)))
          << "references disagree at (" << i << "," << j << ")";
    }
  }
}
#endif

// Runs one case against the double-precision reference of cases/gemm_cases.cc; integer inputs
// demand exact results.
void check_case(const Queue& queue, const Case& c, GemmImpl impl, int group_size, bool integers) {
  SCOPED_TRACE(describe(c, impl, group_size) + (integers ? " integers" : ""));
  const cases::GemmCase g{c.m,        c.k,     c.n,    c.trans_a, c.trans_b, c.c_kind,
                          c.epilogue, c.alpha, c.beta, integers,  false};
  const cases::GemmInputs in = cases::gemm_inputs(g);
  std::vector<double> expected, tolerance;
  cases::gemm_reference(g, in, expected, tolerance);
#if KAAS_TEST_HAVE_EIGEN
  // Once per case: every case runs the portable row here.
  if (impl == GemmImpl::kPortable && cross_check_references(queue.backend())) {
    expect_eigen_agrees(g, in, expected);
  }
#endif

  GuardedArray<float> da(queue, in.a), db(queue, in.b), dc(queue, in.c), dy(queue, c.m * c.n);
  auto a_view = c.trans_a ? make_view<2>(static_cast<const float*>(da.view().data), {c.k, c.m})
                          : make_view<2>(static_cast<const float*>(da.view().data), {c.m, c.k});
  auto b_view = c.trans_b ? make_view<2>(static_cast<const float*>(db.view().data), {c.n, c.k})
                          : make_view<2>(static_cast<const float*>(db.view().data), {c.k, c.n});
  View2<const float> c_view;
  if (!in.c.empty())
    c_view = make_view<2>(static_cast<const float*>(dc.view().data), {in.c_rows, in.c_cols});
  GemmParams params{c.trans_a, c.trans_b, c.alpha, c.beta, c.epilogue, impl};
  gemm(queue, a_view, b_view, c_view, make_view<2>(dy.view().data, {c.m, c.n}), params,
       {group_size, 0});
  const auto y = dy.read();
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      const double want = expected[i * c.n + j], tol = tolerance[i * c.n + j];
      if (!(std::abs(y[i * c.n + j] - want) <= tol) && wrong++ < 3) {
        ADD_FAILURE() << "y(" << i << "," << j << ") = " << y[i * c.n + j] << ", expected " << want
                      << " +- " << tol;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

// The rows of the fp32 gemm table that can run `c` here (kernels/gemm.cc decides, not the test).
std::vector<GemmImpl> impls_for(const Queue& queue, const Case& c) {
  return cases::gemm_case_impls(queue, {c.m, c.k, c.n, c.trans_a, c.trans_b, c.c_kind, c.epilogue,
                                        c.alpha, c.beta, false, false});
}

bool is_simd(GemmImpl impl) {
  return impl == GemmImpl::kAvx512 || impl == GemmImpl::kAvx2;
}

TEST_P(GemmTest, MatchesEigenOverShapesTransposesBroadcastsAndEpilogues) {
  Queue queue(*GetParam());
  // N = 16, 48, 128 and 32 also take the AVX-512 path (row-major operands only).
  const int64_t shapes[][3] = {{0, 5, 3},    {1, 1, 1},      {3, 31, 5},    {32, 32, 32},
                               {33, 65, 17}, {257, 33, 129}, {1, 1000, 7},  {5, 0, 4},
                               {13, 5, 16},  {37, 300, 48},  {25, 600, 128}};
  const Epilogue epilogues[] = {{Activation::kNone, 0},
                                {Activation::kRelu, 0},
                                {Activation::kLeakyRelu, 0.1f},
                                {Activation::kSigmoid, 0}};
  const int group_sizes[] = {8, 32, 128};
  int counter = 0;
  for (const auto& s : shapes) {
    for (int t = 0; t < 4; ++t) {
      for (CKind ck : {CKind::kNone, CKind::kFull, CKind::kRow, CKind::kColumn, CKind::kScalar}) {
        ++counter;
        const Case c{s[0],
                     s[1],
                     s[2],
                     (t & 1) != 0,
                     (t & 2) != 0,
                     ck,
                     epilogues[counter % 4],
                     counter % 3 == 0 ? -0.5f : 1.0f,
                     counter % 2 == 0 ? 2.0f : 1.0f};
        for (GemmImpl impl : impls_for(queue, c)) {
          check_case(queue, c, impl, impl == GemmImpl::kPortable ? group_sizes[counter % 3] : 0,
                     false);
        }
      }
    }
  }
}

TEST_P(GemmTest, IntegerValuedInputsAreBitExact) {
  Queue queue(*GetParam());
  const Case row_major{70, 300, 48, false, false, CKind::kRow, {Activation::kRelu, 0}, 1.0f, 1.0f};
  for (GemmImpl impl : impls_for(queue, row_major)) {
    check_case(queue, row_major, impl, impl == GemmImpl::kPortable ? 128 : 0, true);
    if (is_simd(impl)) {
      // Transposed operands do not fit the CPU fast paths: a clear error, never a wrong result.
      const std::string name = "impl " + std::string(gemm_impl_name(impl)) +
                               " cannot run here: op(A), op(B) and Y need unit column strides";
      try {
        check_case(queue, {257, 40, 3, true, true, CKind::kFull, {}, 2.0f, -1.0f}, impl, 0, true);
        ADD_FAILURE() << name << " accepted transposed operands";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
      }
      continue;
    }
    check_case(queue, {257, 40, 3, true, true, CKind::kFull, {}, 2.0f, -1.0f}, impl,
               impl == GemmImpl::kPortable ? 32 : 0, true);
  }
}

TEST_P(GemmTest, RowsIndependentGivesEachRowTheSameBitsWhateverM) {
  // What the fused model plans rely on: a row's result does not depend on M or on its position
  // (1 and 2 rows of a long K: every thread takes columns, none splits K).
  Queue queue(*GetParam());
  for (const auto& [k, n] : {std::pair<int64_t, int64_t>{700, 128}, {4100, 128}, {4100, 48}}) {
    SCOPED_TRACE("k " + std::to_string(k) + " n " + std::to_string(n));
    const int64_t m = 37;
    const auto a = random_floats(m * k, 11), b = random_floats(k * n, 12);
    GuardedArray<float> da(queue, a), db(queue, b), dy(queue, m * n), dfew(queue, 2 * n);
    GemmParams params;
    params.rows_independent = true;
    params.epilogue = {Activation::kRelu, 0};
    const auto* a_data = static_cast<const float*>(da.view().data);
    const auto bv = make_view<2>(static_cast<const float*>(db.view().data), {k, n});
    const auto all = make_view<2>(dy.view().data, {m, n});
    EXPECT_NE(gemm_chosen_impl(queue, make_view<2>(a_data, {m, k}), bv, all, params),
              GemmImpl::kVendor);
    gemm(queue, make_view<2>(a_data, {m, k}), bv, {}, all, params);
    const auto together = dy.read();
    for (int64_t rows : {1, 2}) {
      for (int64_t row : {int64_t(0), int64_t(5), m - rows}) {
        gemm(queue, make_view<2>(a_data + row * k, {rows, k}), bv, {},
             make_view<2>(dfew.view().data, {rows, n}), params);
        const auto alone = dfew.read();
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t j = 0; j < n; ++j)
            ASSERT_EQ(alone[r * n + j], together[(row + r) * n + j])
                << rows << " rows from row " << row << ": row " << row + r << " column " << j;
      }
    }
  }
}

// The reproducibility contract's GEMM (docs/reproducibility.md): with alpha 1 each element is one
// chain of fused multiply-adds over K from its value on entry -- or, with a K chunk, one chain
// from zero per chunk, the chunk sums added in order -- so K cut into several calls that
// accumulate into y (at chunk boundaries; the fused plan's slab passes) gives the bits of one
// call, whatever the thread count and M (1 row: K split over the threads by whole chunks).
TEST_P(GemmTest, KCutIntoCallsAndThreadCountsGiveTheBitsOfOneCall) {
  Queue queue(*GetParam());
  const int64_t max_m = 7, k = 1300, n = 128;
  const auto a = random_floats(max_m * k, 21), b = random_floats(k * n, 22),
             bias = random_floats(n, 23);
  GuardedArray<float> da(queue, a), db(queue, b), dbias(queue, bias), dy(queue, max_m * n);
  const auto* a_data = static_cast<const float*>(da.view().data);
  const auto* b_data = static_cast<const float*>(db.view().data);
  const auto c = make_view<2>(static_cast<const float*>(dbias.view().data), {1, n});
  GemmParams first;
  first.rows_independent = true;
  first.beta = 1.0f;
  // The host SIMD paths keep this promise; the portable kernel (GPU backends, gpu_emu) chains
  // all of K and is not one of the CPU tiers' (docs/reproducibility.md).
  if (!is_simd(gemm_chosen_impl(queue, make_view<2>(a_data, {max_m, k}),
                                make_view<2>(b_data, {k, n}),
                                make_view<2>(dy.view().data, {max_m, n}), first)))
    GTEST_SKIP() << "no host SIMD GEMM on " << queue.backend().name();
  for (const int64_t m : {int64_t(1), max_m}) {
    const auto y = make_view<2>(dy.view().data, {m, n});
    auto run = [&](int64_t k_chunk, const std::vector<int64_t>& cuts) {
      // y = bias + a . b, K in pieces: the first call brings the bias, the others accumulate
      // (beta 1 with c = y), the last applies the activation.
      int64_t k0 = 0;
      for (size_t piece = 0; piece <= cuts.size(); ++piece) {
        const int64_t k1 = piece < cuts.size() ? cuts[piece] : k;
        GemmParams params = first;
        params.k_chunk = k_chunk;
        params.epilogue = piece == cuts.size() ? Epilogue{Activation::kRelu, 0} : Epilogue{};
        auto a_piece = make_view<2>(a_data + k0, {m, k1 - k0});
        a_piece.stride[0] = k;
        gemm(queue, a_piece, make_view<2>(b_data + k0 * n, {k1 - k0, n}),
             piece == 0 ? c : View2<const float>(y), y, params);
        k0 = k1;
      }
      std::vector<float> out = dy.read();
      out.resize(size_t(m * n));
      return out;
    };
    // One chain: any cut. Chunks of 100 (not a multiple of the 256-deep cache blocks): cuts at
    // chunk boundaries; 13 chunks split over 1 to 3 threads.
    for (const auto& [k_chunk, cut_lists] :
         {std::pair<int64_t, std::vector<std::vector<int64_t>>>{
              0, {{}, {100}, {256, 512}, {1, 700, 1299}, {333, 666, 999}}},
          {100, {{}, {100}, {300, 1200}, {100, 200, 1000}}}}) {
      const auto whole = run(k_chunk, {});
      for (int threads : {1, 2, 3}) {
        const OmpThreadsForTest omp(threads);
        for (const auto& cuts : cut_lists) {
          const auto pieces = run(k_chunk, cuts);
          ASSERT_EQ(0, std::memcmp(pieces.data(), whole.data(), whole.size() * sizeof(float)))
              << m << " rows, K chunk " << k_chunk << ", " << threads << " threads, "
              << cuts.size() + 1 << " pieces";
        }
      }
    }
  }
}

// op(B) packed in column panels (the fused plan's first dense layer) is read instead of b by
// both SIMD tiers: 64-column panels, or AVX2's 16-column tile width (which AVX-512's 64-wide
// tiles cannot read in place and so read b). Every combination gives the bits of b as stored:
// a few and many row blocks (the strip-copy path), K chunks, N not a multiple of the width, a
// K slice of the packed rows.
TEST_P(GemmTest, PackedPanelsOfEitherWidthGiveTheBitsOfBAsStored) {
  Queue queue(*GetParam());
  const int64_t max_m = 30, k = 600, max_n = 128;
  const auto a = random_floats(max_m * k, 31), b = random_floats(k * max_n, 32);
  GuardedArray<float> da(queue, a), dy(queue, max_m * max_n);
  const auto* a_data = static_cast<const float*>(da.view().data);
  GemmParams rows_independent;
  rows_independent.rows_independent = true;
  std::vector<GemmImpl> impls;
  if (gemm_avx2_available()) impls.push_back(GemmImpl::kAvx2);
  if (gemm_avx512_available()) impls.push_back(GemmImpl::kAvx512);
  if (impls.empty() ||
      !is_simd(gemm_chosen_impl(queue, make_view<2>(a_data, {max_m, k}),
                                make_view<2>(b.data(), {k, max_n}),
                                make_view<2>(dy.view().data, {max_m, max_n}), rows_independent)))
    GTEST_SKIP() << "no host SIMD GEMM on " << queue.backend().name();
  for (const int64_t n : {max_n, int64_t(80)}) {
    std::vector<float> b_n(size_t(k * n));  // b's first n columns, row-major [k, n]
    for (int64_t r = 0; r < k; ++r)
      for (int64_t j = 0; j < n; ++j) b_n[size_t(r * n + j)] = b[size_t(r * max_n + j)];
    const auto b_view = make_view<2>(static_cast<const float*>(b_n.data()), {k, n});
    for (const int64_t width : {kGemmPanelColumns, kGemmAvx2PanelColumns}) {
      std::vector<float> packed_values(size_t(gemm_packed_panels_elements(k, n, width)));
      const GemmPackedPanels packed = gemm_pack_panels(b_view, packed_values.data(), width);
      for (const GemmImpl impl : impls) {
        for (const int64_t m : {int64_t(7), max_m}) {
          for (const int64_t k_chunk : {int64_t(0), int64_t(100)}) {
            // K rows [k0, k0 + kc): all of K, and a slice from row 200.
            for (const auto& [k0, kc] : {std::pair<int64_t, int64_t>{0, k}, {200, 300}}) {
              auto a_slice = make_view<2>(a_data + k0, {m, kc});
              a_slice.stride[0] = k;
              const auto b_slice = make_view<2>(b_n.data() + k0 * n, {kc, n});
              const auto y = make_view<2>(dy.view().data, {m, n});
              GemmParams params;
              params.impl = impl;
              params.k_chunk = k_chunk;
              gemm(queue, a_slice, b_slice, {}, y, params);
              const std::vector<float> as_stored = dy.read();
              const GemmPackedPanels rows = gemm_packed_rows(packed, k0, kc);
              params.packed_panels = &rows;
              gemm(queue, a_slice, b_slice, {}, y, params);
              const std::vector<float> from_panels = dy.read();
              ASSERT_EQ(0, std::memcmp(as_stored.data(), from_panels.data(),
                                       size_t(m * n) * sizeof(float)))
                  << gemm_impl_name(impl) << " " << m << "x" << kc << "x" << n << ", panels of "
                  << width << ", K chunk " << k_chunk << ", rows from " << k0;
            }
          }
        }
      }
    }
  }
}

TEST_P(GemmTest, DenseIsXTimesWPlusBiasThenActivation) {
  Queue queue(*GetParam());
  const int64_t m = 17, k = 300, n = 128;
  const auto x = random_integers<float>(m * k, 3, -3, 3),
             w = random_integers<float>(k * n, 4, -3, 3);
  const auto bias = random_integers<float>(n, 5, -50, 50);
  GuardedArray<float> dx(queue, x), dw(queue, w), db(queue, bias), dy(queue, m * n);
  for (GemmImpl impl : impls_for(queue, {m, k, n, false, false, CKind::kRow, {}, 1.0f, 1.0f})) {
    dense(queue, make_view<2>(static_cast<const float*>(dx.view().data), {m, k}),
          make_view<2>(static_cast<const float*>(dw.view().data), {k, n}), db.const_view(),
          make_view<2>(dy.view().data, {m, n}), {Activation::kRelu, 0}, impl);
    const auto y = dy.read();
    for (int64_t i = 0; i < m; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double sum = bias[j];
        for (int64_t p = 0; p < k; ++p) sum += double(x[i * k + p]) * w[p * n + j];
        ASSERT_EQ(y[i * n + j], static_cast<float>(std::max(sum, 0.0))) << i << "," << j;
      }
    }
  }
}

TEST_P(GemmTest, MatMulBroadcastsBatchDimensions) {
  Queue queue(*GetParam());
  const std::vector<int64_t> a_shape = {2, 1, 3, 4}, b_shape = {5, 4, 6};
  const auto a = random_integers<float>(2 * 3 * 4, 6, -5, 5),
             b = random_integers<float>(5 * 4 * 6, 7, -5, 5);
  GuardedArray<float> da(queue, a), db(queue, b), dy(queue, 2 * 5 * 3 * 6);
  matmul(queue, da.view().data, a_shape, db.view().data, b_shape, dy.view().data);
  const auto y = dy.read();
  for (int p = 0; p < 2; ++p)
    for (int q = 0; q < 5; ++q)
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 6; ++j) {
          float sum = 0;
          for (int t = 0; t < 4; ++t) sum += a[(p * 3 + i) * 4 + t] * b[(q * 4 + t) * 6 + j];
          ASSERT_EQ(y[((p * 5 + q) * 3 + i) * 6 + j], sum);
        }
}

TEST_P(GemmTest, RejectsBadShapesWithClearMessages) {
  Queue queue(*GetParam());
  GuardedArray<float> a(queue, 12), b(queue, 12), y(queue, 12);
  auto expect_message = [&](auto call, const std::string& message) {
    try {
      call();
      ADD_FAILURE() << "accepted: " << message;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
      EXPECT_EQ(e.what(), message);
    }
  };
  const auto a34 = make_view<2>(static_cast<const float*>(a.view().data), {3, 4});
  const auto b34 = make_view<2>(static_cast<const float*>(b.view().data), {3, 4});
  const auto y33 = make_view<2>(y.view().data, {3, 3});
  expect_message([&] { gemm(queue, a34, b34, {}, y33); },
                 "gemm: B rows (K): expected 4 (columns of op(A) [3, 4]), received 3");
  GemmParams tb;
  tb.trans_b = true;
  expect_message(
      [&] {
        gemm(queue, a34, b34, {}, make_view<2>(y.view().data, {3, 4}), tb);
      },
      "gemm: Y shape: expected [3, 3], received [3, 4]");
  expect_message(
      [&] {
        gemm(queue, a34, b34, make_view<2>(static_cast<const float*>(b.view().data), {2, 3}), y33,
             tb);
      },
      "gemm: C shape: expected broadcastable to [3, 3] ([M,N], [1,N], [M,1] or [1,1]), received "
      "[2, 3]");
  expect_message(
      [&] {
        gemm(queue, a34, b34, {}, y33, tb, {64, 0});
      },
      "gemm: LaunchConfig.group_size: expected 0 (default), 8, 32 or 128, received 64");
  const std::vector<int64_t> s1 = {2, 3, 4}, s2 = {3, 4, 5};
  expect_message([&] { matmul(queue, a.view().data, s1, b.view().data, s2, y.view().data); },
                 "matmul: batch dimension 0: expected equal or 1 (A has 2), received 3");
}

TEST_P(GemmTest, Bf16PackedPathKeepsRowsIndependentAndNamesWhatItNeeds) {
  Queue queue(*GetParam());
  const int64_t m = 13, k = 301, n = 32;  // odd K: the packed B ends with a zero-padded pair
  std::vector<bf16> a(size_t(m * k)), b(size_t(k * n));
  const auto af = random_floats(m * k, 21), bf = random_floats(k * n, 22);
  for (size_t i = 0; i < a.size(); ++i) a[i] = math::to_bf16(af[i]);
  for (size_t i = 0; i < b.size(); ++i) b[i] = math::to_bf16(bf[i]);
  GuardedArray<bf16> da(queue, a), db(queue, b);
  GuardedArray<float> dy(queue, m * n), d1(queue, n);
  std::vector<bf16> pairs(size_t(gemm_packed_bf16_elements(k, n)));
  const GemmPackedBf16 packed = gemm_pack_bf16(make_view<2>(b.data(), {k, n}), pairs.data());
  const auto av = make_view<2>(static_cast<const bf16*>(da.view().data), {m, k});
  const auto bv = make_view<2>(static_cast<const bf16*>(db.view().data), {k, n});
  GemmParams explicit_fast;
  explicit_fast.impl = GemmImpl::kAvx512Bf16;
  const bool cpu = host_simd(queue.backend_id());
  if (!cpu || !gemm_avx512_bf16_available()) {
    explicit_fast.packed_b = &packed;
    EXPECT_THROW(gemm(queue, av, bv, {}, make_view<2>(dy.view().data, {m, n}), explicit_fast),
                 Error);
    GTEST_SKIP() << "kAvx512Bf16 needs a host CPU backend on an AVX512-BF16 CPU";
  }
  try {  // without the packed B
    gemm(queue, av, bv, {}, make_view<2>(dy.view().data, {m, n}), explicit_fast);
    ADD_FAILURE() << "kAvx512Bf16 ran without params.packed_b";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("params.packed_b"), std::string::npos) << e.what();
  }
  explicit_fast.packed_b = &packed;
  explicit_fast.epilogue = {Activation::kRelu, 0};
  gemm(queue, av, bv, {}, make_view<2>(dy.view().data, {m, n}), explicit_fast);
  const auto together = dy.read();
  for (int64_t row : {int64_t(0), int64_t(7), m - 1}) {
    gemm(queue, make_view<2>(static_cast<const bf16*>(da.view().data) + row * k, {1, k}), bv, {},
         make_view<2>(d1.view().data, {1, n}), explicit_fast);
    const auto alone = d1.read();
    for (int64_t j = 0; j < n; ++j)
      ASSERT_EQ(alone[j], together[row * n + j]) << "row " << row << " column " << j;
  }
  // A packed slice of rows [k0, k0 + kc) is the packing of those rows.
  const GemmPackedBf16 slice = gemm_packed_rows(packed, 100, 201);
  std::vector<bf16> repacked(size_t(gemm_packed_bf16_elements(201, n)));
  gemm_pack_bf16(make_view<2>(b.data() + 100 * n, {201, n}), repacked.data());
  for (size_t i = 0; i < repacked.size(); ++i)
    ASSERT_EQ(slice.pairs[i].bits, repacked[i].bits) << i;
  EXPECT_THROW(gemm_packed_rows(packed, 101, 10), Error);
  EXPECT_THROW(gemm_packed_rows(packed, 100, 11), Error) << "odd kc ending before K";
}

TEST_P(GemmTest, Fp32OperandsRefuseTheBf16Kernel) {
  Queue queue(*GetParam());
  GuardedArray<float> a(queue, 12), b(queue, 12), y(queue, 9);
  GemmParams params;
  params.impl = GemmImpl::kAvx512Bf16;
  try {
    gemm(queue, make_view<2>(static_cast<const float*>(a.view().data), {3, 4}),
         make_view<2>(static_cast<const float*>(b.view().data), {4, 3}), {},
         make_view<2>(y.view().data, {3, 3}), params);
    ADD_FAILURE() << "fp32 gemm accepted kAvx512Bf16";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "gemm: impl kAvx512Bf16: expected bf16 operands (this call has fp32 ones), received "
              "fp32 A and B");
  }
}

// Every case of cases/gemm_cases.cc, with every implementation, against its host reference.
TEST_P(GemmTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "gemm");
}

KAAS_INSTANTIATE_FOR_BACKENDS(GemmTest);

}  // namespace
}  // namespace kaas::testing::gemm_test
