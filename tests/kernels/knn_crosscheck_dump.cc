// Helper of tests/kernels/knn_crosscheck.py: runs kaas::knn on points read from files, on every
// available CPU backend (serial, openmp) and with both methods, and writes the results.
//
// Usage: knn_crosscheck_dump POINTS.f32 N D SPLITS.i64 E K OUT_PREFIX
// Writes OUT_PREFIX.<backend>.<method>.idx (int32, N x K) and .dist (float32, N x K).

#include <cstdio>
#include <cstdlib>
#include <span>
#include <string>
#include <vector>

#include "kaas/backends/backend_traits.h"
#include "kaas/backends/buffer.h"
#include "kaas/kernels/knn.h"

namespace {

template <class T>
std::vector<T> read_file(const char* path, size_t count) {
  std::vector<T> values(count);
  FILE* f = std::fopen(path, "rb");
  if (f == nullptr || std::fread(values.data(), sizeof(T), count, f) != count) {
    std::fprintf(stderr, "cannot read %zu values from %s\n", count, path);
    std::exit(2);
  }
  std::fclose(f);
  return values;
}

template <class T>
void write_file(const std::string& path, const std::vector<T>& values) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr || std::fwrite(values.data(), sizeof(T), values.size(), f) != values.size()) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    std::exit(2);
  }
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: %s POINTS.f32 N D SPLITS.i64 E K OUT_PREFIX\n", argv[0]);
    return 2;
  }
  const int64_t n = std::atoll(argv[2]), dims = std::atoll(argv[3]), events = std::atoll(argv[5]);
  const int k = std::atoi(argv[6]);
  const auto points = read_file<float>(argv[1], size_t(n * dims));
  const auto splits = read_file<int64_t>(argv[4], size_t(events + 1));
  int runs = 0;
  for (const kaas::Backend* backend : kaas::compiled_backends()) {
    if (!backend->available()) continue;
    if (!kaas::host_simd(backend->id())) continue;
    kaas::Queue queue(*backend);
    auto d_points = kaas::make_device_buffer<float>(queue, points.size());
    auto d_splits = kaas::make_device_buffer<int64_t>(queue, splits.size());
    auto d_indices = kaas::make_device_buffer<int32_t>(queue, size_t(n * k));
    auto d_distances = kaas::make_device_buffer<float>(queue, size_t(n * k));
    kaas::copy_to_device(queue, std::span<const float>(points), d_points);
    kaas::copy_to_device(queue, std::span<const int64_t>(splits), d_splits);
    for (auto [method, name] : {std::pair{kaas::KnnMethod::kBruteForce, "brute_force"},
                                std::pair{kaas::KnnMethod::kBinned, "binned"}}) {
      kaas::knn(queue, kaas::make_view<2>(static_cast<const float*>(d_points.data()), {n, dims}),
                kaas::View1<const int64_t>(d_splits.view()), k,
                kaas::make_view<2>(d_indices.data(), {n, int64_t(k)}),
                kaas::make_view<2>(d_distances.data(), {n, int64_t(k)}), method);
      std::vector<int32_t> indices(size_t(n * k));
      std::vector<float> distances(size_t(n * k));
      kaas::copy_to_host(queue, d_indices, std::span<int32_t>(indices));
      kaas::copy_to_host(queue, d_distances, std::span<float>(distances));
      queue.wait();
      const std::string prefix =
          std::string(argv[7]) + "." + std::string(backend->name()) + "." + name;
      write_file(prefix + ".idx", indices);
      write_file(prefix + ".dist", distances);
      std::printf("%s\n", prefix.c_str());
      ++runs;
    }
  }
  return runs > 0 ? 0 : 3;
}
