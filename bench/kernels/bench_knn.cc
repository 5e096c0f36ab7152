// Exact kNN (kernels/knn.h): the cases of cases/knn_cases.cc per backend and method, against two
// KD-tree peers in the same run: nanoflann (built and queried here, queries spread over the OpenMP
// threads) and scikit-learn (bench/peers/sklearn_knn.py, run once per shape through popen, its own
// repeats reported as manual times). Points are uniform in [0, 1)^D, all points are queries, each
// iteration is the whole call (validation, grid build, search). Peer arguments: N, D, K, events.

#include <benchmark/benchmark.h>
#include <omp.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nanoflann.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "bench/kernels/case_bench.h"
#include "bench/registry.h"
#include "cases/knn_cases.h"

#ifndef KAAS_BENCH_PEERS_DIR
#define KAAS_BENCH_PEERS_DIR "bench/peers"
#endif

namespace kaas::bench {
namespace {

struct Shape {
  int64_t n, dims;
  int k;
  int64_t events;
};

Shape shape_of(const benchmark::State& state) {
  return {state.range(0), state.range(1), int(state.range(2)), state.range(3)};
}

cases::PointSet points_of(const Shape& s) {
  return cases::uniform_points(s.n, s.dims, s.events);
}

void set_queries_per_second(benchmark::State& state, int64_t n) {
  state.counters["queries/s"] =
      benchmark::Counter(double(n), benchmark::Counter::kIsIterationInvariantRate);
}

// nanoflann's dataset adaptor over one event of the row-major points.
struct EventCloud {
  const float* points;
  size_t count, dims;
  size_t kdtree_get_point_count() const { return count; }
  float kdtree_get_pt(size_t i, size_t d) const { return points[i * dims + d]; }
  template <class Box>
  bool kdtree_get_bbox(Box&) const {
    return false;
  }
};
using KdTree = nanoflann::KDTreeSingleIndexAdaptor<nanoflann::L2_Simple_Adaptor<float, EventCloud>,
                                                   EventCloud, -1, uint32_t>;

void knn_nanoflann(benchmark::State& state) {
  const Shape s = shape_of(state);
  const cases::PointSet set = points_of(s);
  const auto& points = set.coords;
  const auto& splits = set.splits;
  std::vector<uint32_t> indices(size_t(s.n * s.k));
  std::vector<float> distances(size_t(s.n * s.k));
  for (auto _ : state) {
    for (int64_t e = 0; e < s.events; ++e) {
      const int64_t first = splits[size_t(e)], count = splits[size_t(e) + 1] - first;
      const EventCloud cloud{points.data() + first * s.dims, size_t(count), size_t(s.dims)};
      KdTree tree(int(s.dims), cloud, nanoflann::KDTreeSingleIndexAdaptorParams(10));
#pragma omp parallel for schedule(dynamic, 256)
      for (int64_t q = 0; q < count; ++q) {
        const size_t out = size_t((first + q) * s.k);
        tree.knnSearch(&cloud.points[q * s.dims], size_t(s.k), &indices[out], &distances[out]);
      }
    }
    benchmark::DoNotOptimize(indices.data());
  }
  set_queries_per_second(state, s.n);
  state.counters["threads"] = omp_get_max_threads();
}

// Runs the sklearn peer once (REPEATS timings inside one python process) and replays its
// timings as manual iteration times; skips when python or sklearn is missing.
void knn_sklearn(benchmark::State& state) {
  const Shape s = shape_of(state);
  const auto points = points_of(s).coords;
  // mkstemp fills in the XXXXXX of the template with a unique name.
  char path[] = "/tmp/kaas_knn_bench_XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) {
    state.SkipWithError("cannot create the points file");
    return;
  }
  const auto bytes = ssize_t(points.size() * sizeof(float));
  const bool written = write(fd, points.data(), size_t(bytes)) == bytes;
  close(fd);
  std::vector<double> seconds;
  const int repeats = 3;
  const std::string command = std::string("/usr/bin/python3 ") + KAAS_BENCH_PEERS_DIR +
                              "/sklearn_knn.py " + path + " " + std::to_string(s.n) + " " +
                              std::to_string(s.dims) + " " + std::to_string(s.k) + " " +
                              std::to_string(s.events) + " " + std::to_string(repeats) + " " +
                              std::to_string(omp_get_max_threads());
  if (written) {
    if (FILE* pipe = popen(command.c_str(), "r")) {  // one line: the repeat times in seconds
      double t = 0;
      while (std::fscanf(pipe, "%lf", &t) == 1) seconds.push_back(t);
      pclose(pipe);
    }
  }
  unlink(path);
  if (seconds.empty()) {
    state.SkipWithError(("sklearn peer failed: " + command).c_str());
    return;
  }
  size_t i = 0;
  for (auto _ : state) state.SetIterationTime(seconds[i++ % seconds.size()]);
  set_queries_per_second(state, s.n);
  state.counters["threads"] = omp_get_max_threads();
}

void register_knn() {
  register_kernel_cases("knn");
  auto with_shapes = [](benchmark::internal::Benchmark* b) {
    for (const cases::KnnShape& s : cases::knn_bench_shapes())
      b->Args({s.n, s.dims, s.k, s.events});
    b->ArgNames({"n", "d", "k", "events"})->Unit(benchmark::kMillisecond);
  };
  with_shapes(
      benchmark::RegisterBenchmark("knn/peer_nanoflann_kdtree_omp", knn_nanoflann)->UseRealTime());
  // One python process per shape: its repeats are the iterations.
  with_shapes(benchmark::RegisterBenchmark("knn/peer_sklearn_kdtree", knn_sklearn)
                  ->UseManualTime()
                  ->Iterations(3));
}

KAAS_BENCHMARKS(register_knn);

}  // namespace
}  // namespace kaas::bench
