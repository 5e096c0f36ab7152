#include "cases/knn_cases.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "cases/uniform.h"
#include "kaas/common/error.h"

namespace kaas::cases {

PointSet make_points(PointShape shape, int64_t dims, const std::vector<int64_t>& event_sizes,
                     uint32_t seed) {
  std::mt19937 rng(seed);
  PointSet set;
  set.dims = dims;
  for (int64_t n : event_sizes) {
    std::vector<float> centre(static_cast<size_t>(dims));
    for (auto& c : centre) c = uniform_float(rng, -5.0f, 5.0f);
    for (int64_t p = 0; p < n; ++p) {
      const int64_t copy_of = int64_t(rng() % 4);  // duplicates: mostly copies of earlier points
      const bool duplicate = shape == PointShape::kDuplicates && p > 0 && copy_of != 0;
      const size_t source =
          duplicate ? set.coords.size() - size_t(dims) * size_t(1 + rng() % uint64_t(p)) : 0;
      for (int64_t d = 0; d < dims; ++d) {
        float x = 0;
        switch (shape) {
          case PointShape::kIntegerGrid:  // a coarse grid: many exactly equal distances
            x = float(std::uniform_int_distribution<int>(0, 5)(rng));
            break;
          case PointShape::kDuplicates:
            x = duplicate ? set.coords[source + size_t(d)]
                          : float(std::uniform_int_distribution<int>(-50, 50)(rng));
            break;
          case PointShape::kUniform:
            x = uniform_float(rng, -1.0f, 1.0f);
            break;
          case PointShape::kClustered:
            x = centre[size_t(d)] +
                std::normal_distribution<float>(0, 0.05f)(rng) * float(1 + (p % 3) * 10);
            break;
        }
        set.coords.push_back(x);
      }
    }
    set.splits.push_back(set.splits.back() + n);
  }
  return set;
}

PointSet uniform_points(int64_t n, int64_t dims, int64_t events) {
  std::mt19937 rng(12345u + uint32_t(n + dims));
  PointSet set;
  set.dims = dims;
  set.coords.resize(size_t(n * dims));
  for (auto& x : set.coords) x = uniform_float(rng, 0.0f, 1.0f);
  set.splits.clear();
  for (int64_t e = 0; e <= events; ++e) set.splits.push_back(n * e / events);
  return set;
}

KnnResult reference_knn(const PointSet& set, int k) {
  const int64_t n = set.size(), dims = set.dims;
  KnnResult ref{std::vector<int32_t>(size_t(n * k), -1),
                std::vector<float>(size_t(n * k), std::numeric_limits<float>::infinity())};
  for (size_t e = 0; e + 1 < set.splits.size(); ++e) {
    for (int64_t q = set.splits[e]; q < set.splits[e + 1]; ++q) {
      std::vector<std::pair<float, int32_t>> others;
      for (int64_t j = set.splits[e]; j < set.splits[e + 1]; ++j) {
        if (j == q) continue;
        float sum = 0;
        for (int64_t d = 0; d < dims; ++d) {
          const float t = set.coords[size_t(j * dims + d)] - set.coords[size_t(q * dims + d)];
          sum += t * t;
        }
        others.emplace_back(sum, int32_t(j));
      }
      // Only the k - 1 nearest are kept: selecting them, then ordering them (by distance, then
      // index) gives the order of a full sort.
      const auto kept =
          others.begin() + std::ptrdiff_t(std::min(others.size(), size_t(std::max(k - 1, 0))));
      std::nth_element(others.begin(), kept, others.end());
      std::sort(others.begin(), kept);
      ref.indices[size_t(q * k)] = int32_t(q);
      ref.distances[size_t(q * k)] = 0;
      for (size_t s = 0; s + 1 < size_t(k) && s < others.size(); ++s) {
        ref.distances[size_t(q * k) + 1 + s] = others[s].first;
        ref.indices[size_t(q * k) + 1 + s] = others[s].second;
      }
    }
  }
  return ref;
}

void check_knn_float(const PointSet& set, int k, const KnnResult& got, Checker& checker) {
  const int64_t dims = set.dims;
  for (size_t e = 0; e + 1 < set.splits.size(); ++e) {
    for (int64_t q = set.splits[e]; q < set.splits[e + 1]; ++q) {
      std::vector<double> all;
      for (int64_t j = set.splits[e]; j < set.splits[e + 1]; ++j) {
        double sum = 0;
        for (int64_t d = 0; d < dims; ++d) {
          const double t =
              double(set.coords[size_t(j * dims + d)]) - double(set.coords[size_t(q * dims + d)]);
          sum += t * t;
        }
        if (j != q) all.push_back(sum);
      }
      const auto kept =
          all.begin() + std::ptrdiff_t(std::min(all.size(), size_t(std::max(k - 1, 0))));
      std::nth_element(all.begin(), kept, all.end());
      std::sort(all.begin(), kept);
      for (int s = 1; s < k; ++s) {
        const size_t slot = size_t(q * k + s);
        const int32_t j = got.indices[slot];
        if (size_t(s - 1) >= all.size()) {
          checker.require(j == -1 && std::isinf(got.distances[slot]), "slot", int64_t(slot),
                          [] { return std::string("expected padding"); });
          continue;
        }
        const double want = all[size_t(s - 1)];
        const bool valid = j >= set.splits[e] && j < set.splits[e + 1] && j != q;
        checker.require(valid, "slot", int64_t(slot), [j] {
          return "index " + std::to_string(j) + " not another point of its event";
        });
        checker.near(got.distances[slot], want,
                     8 * double(dims) * kFloatUnitRoundoff * (want + 1e-30), "distance",
                     int64_t(slot));
      }
    }
  }
}

const char* knn_method_name(KnnMethod method) {
  return to_string(method).data();  // the table's names are literals
}

namespace {

KnnMethod method_from_name(std::string_view name) {
  return knn_method_from_name(name);
}

class KnnInstance : public Instance {
 public:
  KnnInstance(const Queue& queue, PointSet set, int k, bool exact, const RunOptions& options)
      : queue_(queue),
        set_(std::move(set)),
        k_(k),
        exact_(exact),
        options_(options),
        method_(method_from_name(options.impl)),
        points_(queue, set_.coords),
        splits_(queue, set_.splits),
        indices_(queue, size_t(set_.size() * k)),
        distances_(queue, size_t(set_.size() * k)) {}
  void run() override {
    const int64_t n = set_.size();
    knn(queue_, make_view<2>(static_cast<const float*>(points_.data()), {n, set_.dims}),
        splits_.const_view(), k_, make_view<2>(indices_.data(), {n, int64_t(k_)}),
        make_view<2>(distances_.data(), {n, int64_t(k_)}), method_, options_.config);
  }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const KnnResult got{indices_.read(&guard_writes), distances_.read(&guard_writes)};
    checker.add_guard_writes(guard_writes);
    if (!exact_) {
      check_knn_float(set_, k_, got, checker);
      return checker.result();
    }
    const KnnResult want = reference_knn(set_, k_);
    for (size_t i = 0; i < want.indices.size(); ++i) {
      checker.exact(got.indices[i], want.indices[i], "index", int64_t(i));
      checker.bits(got.distances[i], want.distances[i], "distance", int64_t(i));
    }
    return checker.result();
  }
  std::string label() const override {
    if (method_ != KnnMethod::kAuto) return {};
    int64_t largest = 0;
    for (size_t e = 0; e + 1 < set_.splits.size(); ++e) {
      largest = std::max(largest, set_.splits[e + 1] - set_.splits[e]);
    }
    return knn_method_name(knn_auto_method(set_.dims, largest));
  }

 private:
  const Queue& queue_;
  PointSet set_;
  int k_;
  bool exact_;
  RunOptions options_;
  KnnMethod method_;
  Guarded<float> points_;
  Guarded<int64_t> splits_;
  Guarded<int32_t> indices_;
  Guarded<float> distances_;
};

Case make_case(std::function<PointSet()> points, int64_t n, int64_t dims, int64_t largest_event,
               int k, bool exact, std::string name, std::vector<std::string> impls) {
  Case c;
  c.kernel = "knn";
  c.name = std::move(name);
  c.title = "knn n=" + std::to_string(n) + " D=" + std::to_string(dims) + " k=" + std::to_string(k);
  c.bytes = 4.0 * double(n * dims) + 8.0 * double(n * k);
  c.items = double(n);
  c.items_name = "queries/s";
  c.reference_ops = double(n) * double(largest_event) * (3.0 * double(dims) + 60.0);
  c.impl_tables = {"knn method"};
  c.impls = [impls](const Backend&) { return impls; };
  c.prepare = [points, k, exact](const Queue& queue, const RunOptions& options) {
    return std::make_unique<KnnInstance>(queue, points(), k, exact, options);
  };
  return c;
}

}  // namespace

std::vector<KnnShape> knn_bench_shapes() {
  std::vector<KnnShape> shapes;
  for (int64_t n : {10'000, 100'000}) {
    for (int64_t dims : {3, 4, 6}) {
      for (int64_t k : {16, 64}) shapes.push_back({n, dims, k, 1});
    }
  }
  shapes.push_back({100'000, 4, 16, 10});
  return shapes;
}

std::vector<Case> knn_cases() {
  // Every method of the table (auto first) on the small shapes.
  std::vector<std::string> all = {"auto"};
  for (KnnMethod method : {KnnMethod::kBinned, KnnMethod::kBruteForce})
    all.emplace_back(to_string(method));
  const std::vector<int64_t> grid_events = {0, 1, 15, 16, 17, 0, 2, 37, 300};
  std::vector<Case> cases = {make_case(
      [grid_events] { return make_points(PointShape::kIntegerGrid, 3, grid_events, 3016u); }, 388,
      3, 300, 16, true, "knn_grid/{impl}/{backend}/n:388/d:3/k:16", all)};
  cases.push_back(make_case(
      [] {
        return make_points(PointShape::kClustered, 4, {900, 0, 1, 2500, 65}, 97u);
      },
      3466, 4, 2500, 16, false, "knn_clustered/{impl}/{backend}/n:3466/d:4/k:16", all));
  // Brute force is O(N^2) per event: only the 10k shapes.
  for (const auto& shape : knn_bench_shapes()) {
    // Named copies: clang 14 cannot capture structured bindings.
    const auto [n, dims, k, events] = shape;
    const auto points = [n = n, dims = dims, events = events] {
      return uniform_points(n, dims, events);
    };
    std::vector<std::string> impls = {"binned"};
    if (n <= 10'000) impls.push_back("brute_force");
    cases.push_back(make_case(points, n, dims, n / events, int(k), false,
                              "knn/{impl}/{backend}/n:" + std::to_string(n) +
                                  "/d:" + std::to_string(dims) + "/k:" + std::to_string(k) +
                                  "/events:" + std::to_string(events),
                              impls));
  }
  return cases;
}

}  // namespace kaas::cases
