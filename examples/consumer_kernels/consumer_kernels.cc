// A reconstruction step written against the kernels component only: the 8 nearest neighbours
// of a few hits on a straight track with kaas::knn on the default backend, checked against what
// a track with hits every 0.5 cm must give. Exit status 1 when the neighbours are wrong.

#include <kaas/backends/backend.h>
#include <kaas/backends/buffer.h>
#include <kaas/backends/queue.h>
#include <kaas/kernels/knn.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main() {
  constexpr int64_t kHits = 100;
  constexpr int kNeighbours = 3;
  std::vector<float> xy;  // hits every 0.5 cm along x
  for (int64_t i = 0; i < kHits; ++i) xy.insert(xy.end(), {0.5f * float(i), 2.0f});
  const std::vector<int64_t> splits = {0, kHits};
  const kaas::Backend& backend = kaas::default_backend();
  kaas::Queue queue(backend);
  const auto points = kaas::to_device(queue, xy);
  const auto row_splits = kaas::to_device(queue, splits);
  auto indices = kaas::make_device_buffer<int32_t>(queue, kHits * kNeighbours);
  auto distances = kaas::make_device_buffer<float>(queue, kHits * kNeighbours);
  kaas::knn(queue, kaas::make_view<2>(static_cast<const float*>(points.data()), {kHits, 2}),
            kaas::View1<const int64_t>(row_splits.view()), kNeighbours,
            kaas::make_view<2>(indices.data(), {kHits, kNeighbours}),
            kaas::make_view<2>(distances.data(), {kHits, kNeighbours}));
  const std::vector<int32_t> got = kaas::to_host(queue, indices);
  // Hit 50: itself, then 49 and 51 at 0.5 cm (ties by the lower index first).
  const bool ok = got[50 * kNeighbours] == 50 && got[50 * kNeighbours + 1] == 49 &&
                  got[50 * kNeighbours + 2] == 51;
  std::printf("kaas-consumer-kernels: backend %s, hit 50's neighbours %d %d %d: %s\n",
              std::string(backend.name()).c_str(), got[150], got[151], got[152],
              ok ? "ok" : "WRONG");
  return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}
