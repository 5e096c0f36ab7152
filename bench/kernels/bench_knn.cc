// Exact kNN (kernels/knn.h). Two parts:
//  - knn/...: the cases of cases/knn_cases.cc per backend and method (kaas alone);
//  - knn_peers/<impl>/points:<uniform|toy>/...: kaas (openmp backend, kAuto) beside its peers
//    on the same points in the same run: nanoflann (Debian libnanoflann-dev, KD-tree built
//    here, queries over the OpenMP threads), scikit-learn's KD-tree and ball tree (n_jobs =
//    threads), FAISS IndexFlatL2 (PyPI faiss-cpu), pykdtree (OpenMP, OMP_NUM_THREADS) and scipy's
//    cKDTree (workers = threads), the Python ones through
//    bench/peers/knn_peers.py run once per shape with KAAS_BENCH_PYTHON (default
//    /usr/bin/python3); a missing package skips the row.
// Every point is a query, K includes the point itself. Counters build_ms and query_ms split the
// time: the peers time their index build and queries; kaas's build_ms is the same call with
// K = 1 (validation, grid, scatter; the search returns at once).
// Points: uniform in [0, 1)^D in equal events, hits of kaas-toy-event events (each plane an
// event; coordinates wire and drift position in cm, then the hit's peak ADC / 10 for D = 3), or
// the clustered tracks + showers + noise of knn_track_points.h.

#include <benchmark/benchmark.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nanoflann.hpp>
#include <span>
#include <string>
#include <vector>

#include "bench/kernels/case_bench.h"
#include "bench/kernels/knn_track_points.h"
#include "bench/registry.h"
#include "cases/knn_cases.h"
#include "examples/lartpc/toy_event.h"
#include "kaas/backends/buffer.h"
#include "kaas/kernels/knn.h"

#ifndef KAAS_BENCH_PEERS_DIR
#define KAAS_BENCH_PEERS_DIR "bench/peers"
#endif

namespace kaas::bench {
namespace {

// kTracks / kTracksSparse: bench/kernels/knn_track_points.h with a hit every 0.5 / 2 units.
enum class Points { kUniform = 0, kToy = 1, kTracks = 2, kTracksSparse = 3 };

const char* points_name(Points p) {
  switch (p) {
    case Points::kUniform:
      return "uniform";
    case Points::kToy:
      return "toy";
    case Points::kTracks:
      return "tracks";
    case Points::kTracksSparse:
      return "tracks_sparse";
  }
  return "unknown";
}

struct Shape {
  Points points;
  int64_t n, dims;  // toy: n is the number of toy events (3 planes = 3 kNN events each)
  int k;
  int64_t events;
};

Shape shape_of(const benchmark::State& state, Points points) {
  return {points, state.range(0), state.range(1), int(state.range(2)), state.range(3)};
}

// About 50k hits per toy event (examples/lartpc/toy_event.h).
int64_t expected_points(const Shape& s) {
  return s.points == Points::kToy ? 50'000 * s.n : s.n;
}

// Toy-event hits: every plane of toy events 1..count is one kNN event.
cases::PointSet toy_points(int64_t count, int64_t dims) {
  constexpr float kWirePitchCm = 0.5f, kDriftCmPerTick = 0.08f;
  cases::PointSet set;
  set.dims = dims;
  set.splits = {0};
  for (int64_t e = 1; e <= count; ++e) {
    const examples::ToyEvent event = examples::make_toy_event({}, uint64_t(e));
    for (int plane = 0; plane < int(event.planes.size()); ++plane) {
      for (const examples::Hit& hit : event.hits) {
        if (hit.plane != plane) continue;
        set.coords.push_back(float(hit.wire) * kWirePitchCm);
        set.coords.push_back(hit.peak_tick * kDriftCmPerTick);
        if (dims >= 3) set.coords.push_back(hit.peak_adc / 10.0f);
      }
      set.splits.push_back(int64_t(set.coords.size()) / dims);
    }
  }
  return set;
}

// The points of a shape, made once per process (toy events take a while).
const cases::PointSet& points_of(const Shape& s) {
  static std::map<std::vector<int64_t>, cases::PointSet> made;
  const std::vector<int64_t> key = {int64_t(s.points), s.n, s.dims, s.events};
  auto it = made.find(key);
  if (it == made.end()) {
    cases::PointSet set;
    if (s.points == Points::kToy) {
      set = toy_points(s.n, s.dims);
    } else if (s.points == Points::kUniform) {
      set = cases::uniform_points(s.n, s.dims, s.events);
    } else {
      TrackPointsConfig config;
      config.spacing = s.points == Points::kTracks ? 0.5f : 2.0f;
      set = track_points(s.n, s.dims, config);
    }
    it = made.emplace(key, std::move(set)).first;
  }
  return it->second;
}

int64_t point_count(const cases::PointSet& set) {
  return int64_t(set.coords.size()) / set.dims;
}

void set_common_counters(benchmark::State& state, const cases::PointSet& set, double build_ms,
                         double query_ms) {
  state.counters["queries/s"] =
      benchmark::Counter(double(point_count(set)), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["points"] = double(point_count(set));
  state.counters["events"] = double(set.splits.size() - 1);
  state.counters["build_ms"] = build_ms;
  state.counters["query_ms"] = query_ms;
  state.counters["threads"] = omp_get_max_threads();
  double averages[1] = {0};
  if (getloadavg(averages, 1) == 1) state.counters["load_avg"] = averages[0];
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// kaas, openmp backend, with `method` (kAuto in the peer rows; both methods in the crossover
// rows that set kAuto's thresholds).
void knn_kaas(benchmark::State& state, Points kind, KnnMethod method) {
  const Shape s = shape_of(state, kind);
  const cases::PointSet& set = points_of(s);
  const int64_t n = point_count(set);
  Queue queue(find_backend("openmp"));
  auto points = make_device_buffer<float>(queue, set.coords.size());
  auto splits = make_device_buffer<int64_t>(queue, set.splits.size());
  copy_to_device(queue, std::span<const float>(set.coords), points);
  copy_to_device(queue, std::span<const int64_t>(set.splits), splits);
  auto indices = make_device_buffer<int32_t>(queue, size_t(n * s.k));
  auto distances = make_device_buffer<float>(queue, size_t(n * s.k));
  const auto call = [&](int k) {
    knn(queue, make_view<2>(static_cast<const float*>(points.data()), {n, set.dims}),
        make_view(static_cast<const int64_t*>(splits.data()), int64_t(set.splits.size())), k,
        make_view<2>(static_cast<int32_t*>(indices.data()), {n, int64_t(k)}),
        make_view<2>(static_cast<float*>(distances.data()), {n, int64_t(k)}), method);
  };
  std::vector<double> build_seconds;
  for (int i = 0; i < 3; ++i) {
    const auto start = std::chrono::steady_clock::now();
    call(1);
    build_seconds.push_back(seconds_since(start));
  }
  std::sort(build_seconds.begin(), build_seconds.end());
  // One untimed call at K: the K = 1 calls wrote a K-th of the output rows, and the first
  // touch of the rest (fresh pages, 110 MB for 20 toy events) is not the search's time; the
  // peers' output vectors are zero-filled when they are made.
  call(s.k);
  double total = 0;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    call(s.k);
    total += seconds_since(start);
  }
  const double per_call_ms = 1e3 * total / double(state.iterations());
  set_common_counters(state, set, 1e3 * build_seconds[1], per_call_ms - 1e3 * build_seconds[1]);
  int64_t largest = 0;
  for (size_t e = 0; e + 1 < set.splits.size(); ++e) {
    largest = std::max(largest, set.splits[e + 1] - set.splits[e]);
  }
  // 1 brute force, 2 binned (KnnMethod).
  state.counters["method"] =
      double(int(method == KnnMethod::kAuto ? knn_auto_method(set.dims, largest) : method));
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

void knn_nanoflann(benchmark::State& state, Points kind) {
  const Shape s = shape_of(state, kind);
  const cases::PointSet& set = points_of(s);
  const int64_t n = point_count(set);
  std::vector<uint32_t> indices(size_t(n * s.k));
  std::vector<float> distances(size_t(n * s.k));
  double build = 0, query = 0;
  for (auto _ : state) {
    for (size_t e = 0; e + 1 < set.splits.size(); ++e) {
      const int64_t first = set.splits[e], count = set.splits[e + 1] - first;
      if (count == 0) continue;
      const auto start = std::chrono::steady_clock::now();
      const EventCloud cloud{set.coords.data() + first * set.dims, size_t(count), size_t(set.dims)};
      KdTree tree(int(set.dims), cloud, nanoflann::KDTreeSingleIndexAdaptorParams(10));
      const auto built = std::chrono::steady_clock::now();
      const size_t k = size_t(std::min<int64_t>(s.k, count));
#pragma omp parallel for schedule(dynamic, 256)
      for (int64_t q = 0; q < count; ++q) {
        const size_t out = size_t((first + q) * s.k);
        tree.knnSearch(&cloud.points[q * set.dims], k, &indices[out], &distances[out]);
      }
      build += std::chrono::duration<double>(built - start).count();
      query += seconds_since(built);
    }
    benchmark::DoNotOptimize(indices.data());
  }
  const double iterations = double(state.iterations());
  set_common_counters(state, set, 1e3 * build / iterations, 1e3 * query / iterations);
}

// Writes `values` to a fresh temporary file; returns its path ("" on failure).
template <class T>
std::string write_temporary(const std::vector<T>& values) {
  char path[] = "/tmp/kaas_knn_bench_XXXXXX";  // mkstemp fills in the XXXXXX
  const int fd = mkstemp(path);
  if (fd < 0) return "";
  const auto bytes = ssize_t(values.size() * sizeof(T));
  const bool written = write(fd, values.data(), size_t(bytes)) == bytes;
  close(fd);
  if (!written) unlink(path);
  return written ? path : "";
}

// Runs bench/peers/knn_peers.py once (its repeats become the iterations, as manual times).
void knn_python_peer(benchmark::State& state, Points kind, const std::string& method) {
  const Shape s = shape_of(state, kind);
  const cases::PointSet& set = points_of(s);
  const std::string points_path = write_temporary(set.coords);
  const std::string splits_path = write_temporary(set.splits);
  const char* python = std::getenv("KAAS_BENCH_PYTHON");
  const int repeats = expected_points(s) >= 500'000 ? 1 : 3;
  const std::string command = std::string(python ? python : "/usr/bin/python3") + " " +
                              KAAS_BENCH_PEERS_DIR + "/knn_peers.py " + method + " " + points_path +
                              " " + splits_path + " " + std::to_string(set.dims) + " " +
                              std::to_string(s.k) + " " + std::to_string(repeats) + " " +
                              std::to_string(omp_get_max_threads());
  std::vector<std::pair<double, double>> times;  // (build, query) seconds per repeat
  int status = -1;
  if (!points_path.empty() && !splits_path.empty()) {
    if (FILE* pipe = popen(command.c_str(), "r")) {
      double build = 0, query = 0;
      while (std::fscanf(pipe, "%lf %lf", &build, &query) == 2) times.emplace_back(build, query);
      status = pclose(pipe);
    }
  }
  unlink(points_path.c_str());
  unlink(splits_path.c_str());
  if (times.empty()) {
    const bool missing = WIFEXITED(status) && WEXITSTATUS(status) == 3;
    const std::string why = (missing ? "package missing: " : "peer failed: ") + command;
    state.SkipWithError(why.c_str());
    return;
  }
  double build = 0, query = 0;
  size_t i = 0;
  for (auto _ : state) {
    const auto& [b, q] = times[i++ % times.size()];
    state.SetIterationTime(b + q);
    build += b;
    query += q;
  }
  const double iterations = double(state.iterations());
  set_common_counters(state, set, 1e3 * build / iterations, 1e3 * query / iterations);
}

// The peer matrix of issue 17: (points, N or toy events, D, K, events).
std::vector<Shape> peer_shapes() {
  std::vector<Shape> shapes;
  for (int64_t dims : {2, 3, 4, 6, 8, 16})
    shapes.push_back({Points::kUniform, 100'000, dims, 16, 1});
  for (int64_t dims : {3, 4}) {
    for (int k : {4, 64}) shapes.push_back({Points::kUniform, 100'000, dims, k, 1});
  }
  for (int64_t n : {10'000, 1'000'000}) {
    for (int64_t dims : {3, 4}) shapes.push_back({Points::kUniform, n, dims, 16, 1});
  }
  shapes.push_back({Points::kUniform, 1'000'000, 3, 16, 100});  // 100 events of 10k
  shapes.push_back({Points::kUniform, 100'000, 16, 4, 1});
  for (int64_t dims : {2, 3}) {
    shapes.push_back({Points::kToy, 1, dims, 16, 3});    // one toy event: 3 planes
    shapes.push_back({Points::kToy, 20, dims, 16, 60});  // 20 toy events
    shapes.push_back({Points::kToy, 1, dims, 64, 3});
  }
  // Clustered hits of the track generator (issue 31): N, D, K.
  for (int64_t n : {100'000, 1'000'000}) {
    for (int64_t dims : {2, 3}) {
      for (int k : {16, 64}) shapes.push_back({Points::kTracks, n, dims, k, 1});
    }
  }
  shapes.push_back({Points::kTracksSparse, 100'000, 2, 16, 1});
  return shapes;
}

// Which peers run on a shape: the Python ones where they finish in seconds.
bool runs(const std::string& impl, const Shape& s) {
  const int64_t n = expected_points(s);
  if (impl == "faiss_flat")
    return n <= 100'000 && (s.dims >= 8 || s.n == 10'000 || (s.dims == 4 && s.k == 16));
  // scikit-learn's trees take minutes at D = 16 (KD-tree 7.5 s, ball tree 23 s at D = 8).
  if (impl.rfind("sklearn", 0) == 0 && s.dims > 8) return false;
  if (impl == "sklearn_ball_tree") return n <= 100'000;
  // pykdtree and cKDTree take minutes at D = 16 (cKDTree over 10 minutes for 3 repeats).
  if (impl == "pykdtree" || impl == "scipy_ckdtree") return s.dims <= 8;
  return true;
}

void register_knn() {
  register_kernel_cases("knn");
  using Runner = void (*)(benchmark::State&, Points);
  const std::vector<std::pair<std::string, Runner>> impls = {
      {"kaas_openmp_auto",
       [](benchmark::State& st, Points p) { knn_kaas(st, p, KnnMethod::kAuto); }},
      {"kaas_openmp_binned",
       [](benchmark::State& st, Points p) { knn_kaas(st, p, KnnMethod::kBinned); }},
      {"nanoflann_kdtree", knn_nanoflann},
      {"sklearn_kd_tree",
       [](benchmark::State& st, Points p) { knn_python_peer(st, p, "kd_tree"); }},
      {"sklearn_ball_tree",
       [](benchmark::State& st, Points p) { knn_python_peer(st, p, "ball_tree"); }},
      {"faiss_flat", [](benchmark::State& st, Points p) { knn_python_peer(st, p, "faiss_flat"); }},
      {"pykdtree", [](benchmark::State& st, Points p) { knn_python_peer(st, p, "pykdtree"); }},
      {"scipy_ckdtree", [](benchmark::State& st, Points p) { knn_python_peer(st, p, "ckdtree"); }},
  };
  for (const Shape& s : peer_shapes()) {
    for (const auto& [impl, runner] : impls) {
      if (!runs(impl, s)) continue;
      const std::string name = "knn_peers/" + impl + "/points:" + points_name(s.points);
      // toy: n counts toy events (three planes, three kNN events each).
      auto* b = benchmark::RegisterBenchmark(name.c_str(), runner, s.points)
                    ->Args({s.n, s.dims, s.k, s.events})
                    ->ArgNames({"n", "d", "k", "events"})
                    ->Unit(benchmark::kMillisecond);
      if (impl.rfind("sklearn", 0) == 0 || impl == "faiss_flat" || impl == "pykdtree" ||
          impl == "scipy_ckdtree") {
        b->UseManualTime()->Iterations(expected_points(s) >= 500'000 ? 1 : 3);
      } else {
        b->UseRealTime();
      }
    }
  }
}

// kAuto's thresholds: both kaas methods on small events and on many dimensions.
void register_knn_crossover() {
  std::vector<Shape> shapes;
  for (int64_t size : {8, 16, 32, 64, 128, 256, 512, 1024}) {
    shapes.push_back({Points::kUniform, 100 * size, 3, 16, 100});
  }
  for (int64_t dims : {8, 12, 16}) {
    for (int64_t n : {2'000, 20'000, 100'000}) shapes.push_back({Points::kUniform, n, dims, 16, 1});
  }
  const std::vector<std::pair<std::string, KnnMethod>> methods = {
      {"binned", KnnMethod::kBinned}, {"brute_force", KnnMethod::kBruteForce}};
  for (const Shape& s : shapes) {
    for (const auto& [name, method] : methods) {
      benchmark::RegisterBenchmark(
          ("knn_crossover/kaas_openmp_" + name + "/points:uniform").c_str(), knn_kaas, s.points,
          method)
          ->Args({s.n, s.dims, s.k, s.events})
          ->ArgNames({"n", "d", "k", "events"})
          ->Unit(benchmark::kMillisecond)
          ->UseRealTime();
    }
  }
}

KAAS_BENCHMARKS(register_knn);
KAAS_BENCHMARKS(register_knn_crossover);

}  // namespace
}  // namespace kaas::bench
