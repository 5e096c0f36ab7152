// A reconstruction step written against the installed kaas package only (find_package(kaas)):
// the kNN graph of a toy event's hits with the kaas::knn kernel on a chosen backend, then the
// EmTrkMichelId scores of patches around the hits through kaas::client, in process and, when a
// server address is given, on kaas-server — and the two compared.
//
//   kaas-consumer REPOSITORY [--backend NAME] [--server HOST:PORT]

#include <kaas/backends/backend.h>
#include <kaas/backends/buffer.h>
#include <kaas/backends/queue.h>
#include <kaas/kernels/knn.h>
#include <kaas/client/direct_client.h>
#include <kaas/client/remote_client.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

namespace {

constexpr int kNeighbours = 8;
constexpr int kPatchSide = 48;  // EmTrkMichelId input: 48 x 48 x 1 per patch

struct Hits {
  std::vector<float> xyz;  // [hits, 3]: wire, tick, plane-scaled coordinate
  std::vector<int64_t> row_splits;
};

// Events of hits along straight tracks with a little scatter.
Hits toy_hits(int events, int hits_per_event, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> scatter(0.0f, 0.4f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  Hits hits;
  hits.row_splits.push_back(0);
  for (int e = 0; e < events; ++e) {
    for (int h = 0; h < hits_per_event; ++h) {
      const int track = h % 4;
      const float t = uniform(rng) * 100.0f;
      hits.xyz.insert(hits.xyz.end(), {10.0f * track + 0.3f * t + scatter(rng), t + scatter(rng),
                                       float(track) + scatter(rng)});
    }
    hits.row_splits.push_back(hits.row_splits.back() + hits_per_event);
  }
  return hits;
}

// kNN of every hit within its event, on `backend` (device buffers, so it runs on a GPU too).
std::vector<int32_t> neighbours(const kaas::Backend& backend, const Hits& hits) {
  kaas::Queue queue(backend);
  const int64_t n = int64_t(hits.xyz.size() / 3);
  auto points = kaas::make_device_buffer<float>(queue, hits.xyz.size());
  auto splits = kaas::make_device_buffer<int64_t>(queue, hits.row_splits.size());
  auto indices = kaas::make_device_buffer<int32_t>(queue, size_t(n) * kNeighbours);
  auto distances = kaas::make_device_buffer<float>(queue, size_t(n) * kNeighbours);
  kaas::copy_to_device<float>(queue, hits.xyz, points);
  kaas::copy_to_device<int64_t>(queue, hits.row_splits, splits);
  kaas::knn(queue, kaas::make_view<2, const float>(points.data(), {n, 3}),
            kaas::make_view<const int64_t>(splits.data(), int64_t(hits.row_splits.size())),
            kNeighbours, kaas::make_view<2>(indices.data(), {n, int64_t(kNeighbours)}),
            kaas::make_view<2>(distances.data(), {n, int64_t(kNeighbours)}));
  std::vector<int32_t> host(size_t(n) * kNeighbours);
  kaas::copy_to_host<int32_t>(queue, indices, host);
  queue.wait();
  return host;
}

// One 48x48 patch per hit: charge deposited by its neighbours around it (a stand-in for the
// wire x tick image patch a real reconstruction would cut).
std::vector<float> patches(const Hits& hits, const std::vector<int32_t>& knn, int64_t count) {
  std::vector<float> out(size_t(count) * kPatchSide * kPatchSide, 0.0f);
  for (int64_t h = 0; h < count; ++h) {
    float* patch = out.data() + h * kPatchSide * kPatchSide;
    for (int j = 0; j < kNeighbours; ++j) {
      const int32_t other = knn[size_t(h) * kNeighbours + j];
      if (other < 0) continue;
      const int x = std::clamp(int(kPatchSide / 2 + hits.xyz[3 * other] - hits.xyz[3 * h]), 0,
                               kPatchSide - 1);
      const int y = std::clamp(int(kPatchSide / 2 + hits.xyz[3 * other + 1] - hits.xyz[3 * h + 1]),
                               0, kPatchSide - 1);
      patch[y * kPatchSide + x] += 1.0f;
    }
  }
  return out;
}

std::vector<float> scores(kaas::client::InferenceClient& client, const std::vector<float>& input,
                          int64_t count) {
  client.set_input<float>("main_input", input, {count, kPatchSide, kPatchSide, 1});
  const auto result = client.run();
  const auto values = result.output<float>("em_trk_none_netout/Softmax");
  std::printf("  %-22s %s: %lld patches, %d attempt(s), %.3f s\n", client.describe().c_str(),
              client.model_name().c_str(), (long long)count, result.info().attempts,
              result.info().seconds);
  return {values.begin(), values.end()};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s REPOSITORY [--backend NAME] [--server HOST:PORT]\n", argv[0]);
    return 2;
  }
  const std::string repository = argv[1];
  std::string backend_name = "auto", server;
  for (int i = 2; i < argc; i += 2) {
    const std::string flag = argv[i];
    if (i + 1 == argc) {
      std::fprintf(stderr, "%s needs a value\n", flag.c_str());
      return 2;
    }
    if (flag == "--backend") {
      backend_name = argv[i + 1];
    } else if (flag == "--server") {
      server = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  try {
    const kaas::Backend& backend =
        backend_name == "auto" ? kaas::default_backend() : kaas::find_backend(backend_name);
    const Hits hits = toy_hits(2, 400, 7);
    const auto knn = neighbours(backend, hits);
    const int64_t total = int64_t(hits.xyz.size() / 3);
    int64_t missing = int64_t(std::count(knn.begin(), knn.end(), -1));
    std::printf("kNN on %s: %lld hits in %zu events, k=%d, %lld padded slots\n",
                std::string(backend.name()).c_str(), (long long)total, hits.row_splits.size() - 1,
                kNeighbours, (long long)missing);

    const int64_t count = 64;  // patches scored
    const auto input = patches(hits, knn, count);
    auto direct = kaas::client::DirectClient::from_repository(repository, "emtrkmichelid", backend);
    const auto local = scores(*direct, input, count);
    int64_t track_like = 0;
    for (int64_t p = 0; p < count; ++p) track_like += local[3 * p] >= local[3 * p + 1];
    std::printf("EmTrkMichelId: %lld of %lld patches score track >= shower\n",
                (long long)track_like, (long long)count);
    if (!server.empty()) {
      kaas::client::RemoteOptions options;
      options.model = "emtrkmichelid";
      auto remote = kaas::client::RemoteClient::create(server, options);
      const auto served = scores(*remote, input, count);
      float worst = 0.0f;
      for (size_t i = 0; i < local.size(); ++i)
        worst = std::max(worst, std::abs(local[i] - served[i]));
      std::printf("direct vs remote: max |score difference| %g\n", worst);
      if (worst != 0.0f) return 1;  // the same model and backend: bit-identical
    }
  } catch (const kaas::Error& e) {
    std::fprintf(stderr, "kaas-consumer: %s (%s)\n", e.what(),
                 std::string(kaas::to_string(e.code())).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kaas-consumer: %s\n", e.what());
    return 1;
  }
  return 0;
}
