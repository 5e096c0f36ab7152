#include "kaas/kernels/knn.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "cases/knn_cases.h"
#include "kaas/backends/backend.h"
#include "tests/support/backends_under_test.h"
#include "tests/support/device_array.h"
#include "tests/support/kernel_cases.h"
#include "tests/support/reference.h"

namespace kaas::testing {
namespace {

class KnnTest : public ::testing::TestWithParam<const Backend*> {};

const char* method_name(KnnMethod method) {
  return method == KnnMethod::kBinned       ? "binned"
         : method == KnnMethod::kBruteForce ? "brute"
                                            : "auto";
}

using cases::KnnResult;
using cases::make_points;
using cases::PointSet;
using cases::reference_knn;
using Shape = cases::PointShape;

KnnResult run_knn(const Queue& queue, const PointSet& set, int k, KnnMethod method,
                  LaunchConfig config = {}) {
  const int64_t n = set.size();
  GuardedArray<float> points(queue, set.coords);
  GuardedArray<int64_t> splits(queue, set.splits);
  GuardedArray<int32_t> indices(queue, size_t(n * k));
  GuardedArray<float> distances(queue, size_t(n * k));
  knn(queue, make_view<2>(points.const_view().data, {n, set.dims}), splits.const_view(), k,
      make_view<2>(indices.view().data, {n, int64_t(k)}),
      make_view<2>(distances.view().data, {n, int64_t(k)}), method, config);
  return {indices.read(), distances.read()};
}

// Emulated-GPU hand-overs of one call: about three per query on the brute-force path (two
// syncs per tile, one return) plus the fixed launches (check, fill, count, scatter at up to
// 4 x 256 threads each, and the scan).
int64_t knn_handoffs(int64_t n, int k) {
  return 3 * n * (1 + n / 700) + 6 * 1024 + 8 * 1024 + int64_t(k);
}

void expect_same(const KnnResult& got, const KnnResult& want, const std::string& what) {
  int64_t wrong = 0, first = -1;
  for (size_t i = 0; i < want.indices.size(); ++i) {
    const bool ok =
        got.indices[i] == want.indices[i] && same_bits(got.distances[i], want.distances[i]);
    if (!ok && wrong++ == 0) first = int64_t(i);
  }
  EXPECT_EQ(wrong, 0) << what << ": first difference at flat slot " << first << " (index "
                      << (first >= 0 ? got.indices[size_t(first)] : 0) << " vs "
                      << (first >= 0 ? want.indices[size_t(first)] : 0) << ", distance "
                      << (first >= 0 ? got.distances[size_t(first)] : 0) << " vs "
                      << (first >= 0 ? want.distances[size_t(first)] : 0) << ")";
}

// Event sizes around K: empty, single, K-1, K, K+1, and a few larger ones.
std::vector<int64_t> event_sizes_around(int k, bool big) {
  std::vector<int64_t> sizes = {0, 1, k - 1, k, k + 1, 0, 2, 37};
  if (big) sizes.push_back(600);
  return sizes;
}

TEST_P(KnnTest, IntegerPointsMatchReferenceExactly) {
  Queue queue(*GetParam());
  const bool emu = queue.backend().id() == BackendId::kGpuEmu;
  int64_t skipped = 0;
  for (KnnMethod method : {KnnMethod::kBruteForce, KnnMethod::kBinned}) {
    for (int64_t dims : {1, 2, 3, 4, 6, 16}) {
      for (int k : {1, 16, 64, 256}) {
        for (Shape shape : {Shape::kIntegerGrid, Shape::kDuplicates}) {
          const PointSet set =
              make_points(shape, dims, event_sizes_around(k, !emu && !kAddressSanitizer),
                          uint32_t(dims * 1000 + k + int(shape)));
          if (!affordable(queue.backend(), knn_handoffs(set.size(), k))) {
            ++skipped;
            continue;
          }
          const std::string what = std::string(method_name(method)) + " D=" + std::to_string(dims) +
                                   " k=" + std::to_string(k) +
                                   (shape == Shape::kDuplicates ? " duplicates" : " grid");
          expect_same(run_knn(queue, set, k, method, {emu ? 32 : 0, 0}), reference_knn(set, k),
                      what);
        }
      }
    }
  }
  if (skipped > 0)
    std::printf("[ emulator ] %lld configurations over budget not run\n", (long long)skipped);
}

TEST_P(KnnTest, DuplicatesOfTheQueryComeAfterItByIndex) {
  Queue queue(*GetParam());
  // One event: point 3 is the query; 0, 3, 5, 6 coincide, 1 is at distance 1.
  PointSet set;
  set.dims = 2;
  set.coords = {1, 1, 2, 1, 9, 9, 1, 1, 7, 7, 1, 1, 1, 1};
  set.splits = {0, 7};
  for (KnnMethod method : {KnnMethod::kBruteForce, KnnMethod::kBinned}) {
    const KnnResult got = run_knn(queue, set, 6, method);
    const std::vector<int32_t> row3(got.indices.begin() + 18, got.indices.begin() + 24);
    EXPECT_EQ(row3, (std::vector<int32_t>{3, 0, 5, 6, 1, 4})) << method_name(method);
    const std::vector<float> dist3(got.distances.begin() + 18, got.distances.begin() + 24);
    EXPECT_EQ(dist3, (std::vector<float>{0, 0, 0, 0, 1, 72})) << method_name(method);
  }
}

TEST_P(KnnTest, SmallEventsArePaddedWithMinusOneAndInfinity) {
  Queue queue(*GetParam());
  PointSet set;
  set.dims = 3;
  set.coords = {0, 0, 0, 1, 0, 0, 5, 5, 5};
  set.splits = {0, 0, 2, 2, 3};
  for (KnnMethod method : {KnnMethod::kBruteForce, KnnMethod::kBinned}) {
    const KnnResult got = run_knn(queue, set, 4, method);
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(got.indices, (std::vector<int32_t>{0, 1, -1, -1, 1, 0, -1, -1, 2, -1, -1, -1}));
    EXPECT_EQ(got.distances,
              (std::vector<float>{0, 1, inf, inf, 0, 1, inf, inf, 0, inf, inf, inf}));
  }
}

// Random and clustered float points: against a double-precision reference with a tolerance,
// and the two methods against each other bit for bit (same distance expression, total order).
TEST_P(KnnTest, FloatPointsMatchDoubleReference) {
  Queue queue(*GetParam());
  const bool emu = queue.backend().id() == BackendId::kGpuEmu;
  for (Shape shape : {Shape::kUniform, Shape::kClustered}) {
    for (int64_t dims : {3, 6}) {
      for (int k : {16, 64}) {
        const std::vector<int64_t> sizes = emu ? std::vector<int64_t>{70, 0, 130}
                                           : kAddressSanitizer
                                               ? std::vector<int64_t>{300, 0, 1, 600, 65}
                                               : std::vector<int64_t>{900, 0, 1, 2500, 65};
        const PointSet set = make_points(shape, dims, sizes, uint32_t(77 + dims + k));
        if (!affordable(queue.backend(), knn_handoffs(set.size(), k))) continue;
        SCOPED_TRACE("D=" + std::to_string(dims) + " k=" + std::to_string(k) +
                     (shape == Shape::kUniform ? " uniform" : " clustered"));
        const LaunchConfig config{emu ? 32 : 0, 0};
        const KnnResult brute = run_knn(queue, set, k, KnnMethod::kBruteForce, config);
        const KnnResult binned = run_knn(queue, set, k, KnnMethod::kBinned, config);
        expect_same(binned, brute, "binned vs brute force");
        cases::Checker checker;
        cases::check_knn_float(set, k, brute, checker);
        EXPECT_EQ(checker.result().wrong, 0) << checker.result().first_wrong;
      }
    }
  }
}

// Under AddressSanitizer a quarter of the size: still over a hundred cells and groups.
constexpr int64_t kLargeEvent = kAddressSanitizer ? 3000 : 12000;

TEST_P(KnnTest, LargeEventBinnedMatchesBruteForce) {
  Queue queue(*GetParam());
  for (int64_t dims : {2, 4}) {
    const PointSet set = make_points(Shape::kClustered, dims, {kLargeEvent, kLargeEvent / 4}, 5u);
    expect_same(run_knn(queue, set, 32, KnnMethod::kBinned),
                run_knn(queue, set, 32, KnnMethod::kBruteForce), "D=" + std::to_string(dims));
  }
}

TEST_P(KnnTest, GroupSizesAndAutoGiveTheSameRows) {
  Queue queue(*GetParam());
  const PointSet set = make_points(Shape::kIntegerGrid, 3, {300, 5, 0, 40}, 9u);
  const KnnResult want = reference_knn(set, 16);
  for (int group_size : {1, 7, 32, 256}) {
    if (!affordable(queue.backend(), knn_handoffs(set.size(), 16) * (group_size > 64 ? 4 : 1)))
      continue;
    for (KnnMethod method : {KnnMethod::kAuto, KnnMethod::kBruteForce, KnnMethod::kBinned}) {
      expect_same(run_knn(queue, set, 16, method, {group_size, 0}), want,
                  std::string(method_name(method)) + " group_size " + std::to_string(group_size));
    }
  }
}

// The binned grid bins up to kKnnMaxBinnedDims coordinates, those of largest spread: every D
// (the compile-time and the run-time instantiations), constant coordinates, and clusters much
// denser than a cell (more queries per cell than a group) give the brute-force rows.
TEST_P(KnnTest, BinnedMatchesBruteForceInEveryDimension) {
  Queue queue(*GetParam());
  const bool emu = queue.backend().id() == BackendId::kGpuEmu;
  const std::vector<int64_t> sizes =
      emu ? std::vector<int64_t>{150, 0, 90} : std::vector<int64_t>{1500, 0, 7, 700};
  for (int64_t dims : {1, 2, 5, 8, 12, 16}) {
    for (Shape shape : {Shape::kUniform, Shape::kClustered}) {
      PointSet set = make_points(shape, dims, sizes, uint32_t(300 + dims));
      // Coordinate 0 constant: the grid must bin the others.
      if (dims > 1) {
        for (int64_t p = 0; p < set.size(); ++p) set.coords[size_t(p * dims)] = 0.25f;
      }
      if (!affordable(queue.backend(), knn_handoffs(set.size(), 8) * 2)) continue;
      const LaunchConfig config{emu ? 32 : 0, 0};
      expect_same(
          run_knn(queue, set, 8, KnnMethod::kBinned, config),
          run_knn(queue, set, 8, KnnMethod::kBruteForce, config),
          "D=" + std::to_string(dims) + (shape == Shape::kUniform ? " uniform" : " clustered"));
    }
  }
}

// A long thin event (a track: thousands of cells along x, a few across) with one hit far off
// the track: the outlier's group walks hundreds of shells, each clipped to the few rows that
// exist (a walk over every offset would take (2r + 1)^2 rows per shell).
TEST_P(KnnTest, LongThinEventWithAnOutlier) {
  Queue queue(*GetParam());
  const bool emu = queue.backend().id() == BackendId::kGpuEmu;
  const int64_t n = emu ? 400 : 2000;
  PointSet set;
  set.dims = 3;
  set.splits = {0, n + 1};
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> along(0.0f, 1000.0f), across(0.0f, 0.5f);
  for (int64_t p = 0; p < n; ++p) {
    set.coords.insert(set.coords.end(), {along(rng), across(rng), across(rng)});
  }
  set.coords.insert(set.coords.end(), {500.0f, 400.0f, 0.25f});  // the outlier
  const LaunchConfig config{emu ? 32 : 0, 0};
  const KnnResult binned = run_knn(queue, set, 8, KnnMethod::kBinned, config);
  expect_same(binned, run_knn(queue, set, 8, KnnMethod::kBruteForce, config), "track + outlier");
  cases::Checker checker;
  cases::check_knn_float(set, 8, binned, checker);
  EXPECT_EQ(checker.result().wrong, 0) << checker.result().first_wrong;
}

// Hits on straight tracks with a charge-like third coordinate (a long tail, as a Landau's):
// most of the 3-D box is empty, a 3-D grid within the cell limit (one cell per point) cannot
// shrink its cells to the target, so the grid bins two coordinates; uniform points keep all
// three. Either way the binned rows equal brute force's bit for bit.
TEST_P(KnnTest, PointsOnCurvesAreBinnedOnTwoCoordinates) {
  Queue queue(*GetParam());
  const bool emu = queue.backend().id() == BackendId::kGpuEmu;
  const int64_t n = emu || kAddressSanitizer ? 1500 : 8000;
  PointSet tracks;
  tracks.dims = 3;
  tracks.splits = {0, n};
  std::mt19937 rng(31);
  std::uniform_real_distribution<float> start(0.0f, 400.0f), angle(0.0f, 6.2831853f),
      tail(0.02f, 1.0f);
  for (int64_t p = 0; p < n;) {
    const float x = start(rng), y = start(rng), a = angle(rng);
    for (int hit = 0; hit < 500 && p < n; ++hit, ++p) {
      const float along = 0.5f * float(hit);
      tracks.coords.insert(tracks.coords.end(),
                           {x + along * std::cos(a), y + along * std::sin(a), 10.0f / tail(rng)});
    }
  }
  const PointSet uniform = make_points(Shape::kUniform, 3, {n}, 8u);
  const int k = 16;
  for (const PointSet* set : {static_cast<const PointSet*>(&tracks), &uniform}) {
    GuardedArray<float> points(queue, set->coords);
    GuardedArray<int64_t> splits(queue, set->splits);
    const int binned = knn_binned_grid_dims(
        queue, make_view<2>(points.const_view().data, {set->size(), int64_t(3)}),
        splits.const_view(), k);
    EXPECT_EQ(binned, set == &tracks ? 2 : 3) << (set == &tracks ? "tracks" : "uniform");
    const LaunchConfig config{emu ? 32 : 0, 0};
    expect_same(run_knn(queue, *set, k, KnnMethod::kBinned, config),
                run_knn(queue, *set, k, KnnMethod::kBruteForce, config),
                set == &tracks ? "tracks" : "uniform");
  }
}

// Output rows inside wider buffers (row strides K + 3): the heaps live in the output rows, so
// strided rows must give the contiguous result in their first K slots.
TEST_P(KnnTest, StridedOutputRowsGiveTheContiguousRows) {
  Queue queue(*GetParam());
  // 32-thread groups on the emulated GPU, as the other emulator runs here (its default group
  // of 256 fibers made this the suite's longest test there, 16 s under AddressSanitizer).
  const LaunchConfig config{queue.backend().id() == BackendId::kGpuEmu ? 32 : 0, 0};
  const PointSet set = make_points(Shape::kClustered, 3, {200, 0, 30}, 21u);
  const int k = 12, pitch = k + 3;
  const int64_t n = set.size();
  for (KnnMethod method : {KnnMethod::kBinned, KnnMethod::kBruteForce}) {
    const KnnResult want = run_knn(queue, set, k, method, config);
    GuardedArray<float> points(queue, set.coords);
    GuardedArray<int64_t> splits(queue, set.splits);
    GuardedArray<int32_t> indices(queue, size_t(n * pitch));
    GuardedArray<float> distances(queue, size_t(n * pitch));
    View2<int32_t> index_rows = make_view<2>(indices.view().data, {n, int64_t(k)});
    View2<float> distance_rows = make_view<2>(distances.view().data, {n, int64_t(k)});
    index_rows.stride[0] = distance_rows.stride[0] = pitch;
    knn(queue, make_view<2>(points.const_view().data, {n, set.dims}), splits.const_view(), k,
        index_rows, distance_rows, method, config);
    const std::vector<int32_t> got_indices = indices.read();
    const std::vector<float> got_distances = distances.read();
    KnnResult got;
    for (int64_t q = 0; q < n; ++q) {
      for (int s = 0; s < k; ++s) {
        got.indices.push_back(got_indices[size_t(q * pitch + s)]);
        got.distances.push_back(got_distances[size_t(q * pitch + s)]);
      }
      // The slots past K are not ours: still the poison the array was filled with.
      for (int s = k; s < pitch; ++s) {
        EXPECT_TRUE(same_bits(got_indices[size_t(q * pitch + s)], poison_value<int32_t>()));
      }
    }
    expect_same(got, want, method_name(method));
  }
}

// The emulated GPU runs the group-per-cell search with real barriers and shared memory: its
// rows equal the serial backend's bit for bit.
TEST(KnnGpuEmu, BinnedRowsEqualSerialBitForBit) {
  const Backend *emu = nullptr, *serial = nullptr;
  for (const Backend* b : compiled_backends()) {
    if (b->name() == std::string_view("gpu_emu")) emu = b;
    if (b->name() == std::string_view("serial")) serial = b;
  }
  if (!emu || !serial) GTEST_SKIP() << "gpu_emu or serial not compiled in";
  Queue emu_queue(*emu), serial_queue(*serial);
  for (int64_t dims : {3, 6, 9}) {
    const PointSet set = make_points(Shape::kClustered, dims, {160, 3, 0, 120}, uint32_t(dims));
    for (KnnMethod method : {KnnMethod::kBinned, KnnMethod::kBruteForce}) {
      expect_same(run_knn(emu_queue, set, 16, method, {32, 0}),
                  run_knn(serial_queue, set, 16, method),
                  "D=" + std::to_string(dims) + " " + method_name(method));
    }
  }
}

TEST_P(KnnTest, EmptyInput) {
  Queue queue(*GetParam());
  PointSet set;
  set.dims = 4;
  for (const std::vector<int64_t>& splits : {std::vector<int64_t>{0}, {0, 0, 0}}) {
    set.splits = splits;
    EXPECT_TRUE(run_knn(queue, set, 8, KnnMethod::kBinned).indices.empty());
  }
}

// The measured thresholds of knn.cc: binned above 48 points per event, in every dimension.
TEST(KnnAuto, PicksBinnedAboveFortyEightPointsPerEvent) {
  EXPECT_EQ(knn_auto_method(3, 10000), KnnMethod::kBinned);
  EXPECT_EQ(knn_auto_method(3, 49), KnnMethod::kBinned);
  EXPECT_EQ(knn_auto_method(3, 48), KnnMethod::kBruteForce);
  EXPECT_EQ(knn_auto_method(2, 1), KnnMethod::kBruteForce);
  EXPECT_EQ(knn_auto_method(16, 10000), KnnMethod::kBinned);
}

// Calls knn on n points of dims coordinates with the given splits and k (outputs sized to the
// points unless told otherwise) and returns the error message ("" when accepted).
std::string knn_error(const Queue& queue, std::vector<float> coords, int64_t dims,
                      std::vector<int64_t> splits, int k, KnnMethod method = KnnMethod::kAuto,
                      int64_t out_rows = -1, int64_t out_cols = -1) {
  const int64_t n = dims > 0 ? int64_t(coords.size()) / dims : 0;
  if (out_rows < 0) out_rows = n;
  if (out_cols < 0) out_cols = k;
  GuardedArray<float> points(queue, coords);
  GuardedArray<int64_t> row_splits(queue, splits);
  GuardedArray<int32_t> indices(queue, size_t(std::max<int64_t>(0, out_rows * out_cols)));
  GuardedArray<float> distances(queue, size_t(std::max<int64_t>(0, out_rows * out_cols)));
  try {
    knn(queue, make_view<2>(points.const_view().data, {n, dims}), row_splits.const_view(), k,
        make_view<2>(indices.view().data, {out_rows, out_cols}),
        make_view<2>(distances.view().data, {out_rows, out_cols}), method);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    // Nothing was written: rejected before any launch.
    for (int32_t v : indices.read()) EXPECT_TRUE(same_bits(v, poison_value<int32_t>()));
    return e.what();
  }
  return "";
}

TEST_P(KnnTest, RejectsBadArguments) {
  Queue queue(*GetParam());
  const std::vector<float> four(12, 1.0f);  // 4 points x 3 coordinates
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(knn_error(queue, four, 3, {0, 4}, 0), "knn: k: expected 1..256, received 0");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 4}, 257), "knn: k: expected 1..256, received 257");
  EXPECT_EQ(knn_error(queue, std::vector<float>(17 * 2, 0.0f), 17, {0, 2}, 2),
            "knn: points extent[1] (D): expected 1..16, received 17");
  EXPECT_EQ(knn_error(queue, {}, 0, {0}, 2),
            "knn: points extent[1] (D): expected 1..16, received 0");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 4}, 2, KnnMethod::kAuto, 3),
            "knn: indices extent[0] (N of points): expected 4, received 3");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 4}, 2, KnnMethod::kAuto, 4, 3),
            "knn: indices extent[1] (k): expected 2, received 3");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 4}, 2, static_cast<KnnMethod>(7)),
            "knn: method: expected kAuto, kBruteForce or kBinned, received 7");
  EXPECT_EQ(knn_error(queue, four, 3, {}, 2),
            "knn: row_splits extent[0] (E + 1): expected >= 1, received 0");
  EXPECT_EQ(knn_error(queue, four, 3, {1, 4}, 2), "knn: row_splits[0]: expected 0, received 1");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 3, 2, 4}, 2),
            "knn: row_splits[2]: expected >= row_splits[1] = 3, received 2");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 2, 3}, 2),
            "knn: row_splits[2] (last): expected 4 (N), received 3");
  std::vector<float> bad = four;
  bad[7] = nan;
  EXPECT_EQ(knn_error(queue, bad, 3, {0, 4}, 2),
            "knn: points(2, 1): expected a finite coordinate, received nan");
  bad[7] = 1;
  bad[11] = -inf;
  bad[3] = inf;
  EXPECT_EQ(knn_error(queue, bad, 3, {0, 4}, 2, KnnMethod::kBinned),
            "knn: points(1, 0): expected a finite coordinate, received inf");
  EXPECT_EQ(knn_error(queue, four, 3, {0, 4}, 2), "");
}

// Every case of cases/knn_cases.cc, with every method, against its host reference.
TEST_P(KnnTest, EveryCaseMatchesItsReference) {
  expect_cases_pass(*GetParam(), "knn");
}

KAAS_INSTANTIATE_FOR_BACKENDS(KnnTest);

}  // namespace
}  // namespace kaas::testing
