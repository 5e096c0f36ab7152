#pragma once
// Cases of kernels/knn.h per method, and the point sets and references the kNN tests use.

#include <string>
#include <vector>

#include "cases/case.h"
#include "kaas/kernels/knn.h"

namespace kaas::cases {

// Points [N, D] row-major, one event after another as given by splits.
struct PointSet {
  int64_t dims = 0;
  std::vector<float> coords;
  std::vector<int64_t> splits = {0};
  int64_t size() const { return int64_t(coords.size()) / dims; }
};

enum class PointShape { kIntegerGrid, kDuplicates, kUniform, kClustered };

PointSet make_points(PointShape shape, int64_t dims, const std::vector<int64_t>& event_sizes,
                     uint32_t seed);
// n points uniform in [0, 1)^D as `events` equal events (the benchmark shapes; the sklearn peer
// reads the same points).
PointSet uniform_points(int64_t n, int64_t dims, int64_t events);

struct KnnResult {
  std::vector<int32_t> indices;
  std::vector<float> distances;
};

// The contract of knn.h on the host, distances summed in float in the same order: self first,
// then (distance, index), then -1 / +inf. Exact for integer-valued coordinates.
KnnResult reference_knn(const PointSet& set, int k);
// For float points: every slot holds a point of the query's event other than itself whose
// distance is within 8 D u of the s-th smallest double-precision distance (padding -1 / inf).
void check_knn_float(const PointSet& set, int k, const KnnResult& got, Checker& checker);

const char* knn_method_name(KnnMethod method);  // "auto", "brute_force", "binned"

// The benchmark shapes: one event of 10k and 100k points, and 100k points as 10 events, uniform
// in [0, 1)^D (uniform_points).
struct KnnShape {
  int64_t n, dims, k, events;
};
std::vector<KnnShape> knn_bench_shapes();

std::vector<Case> knn_cases();

}  // namespace kaas::cases
