// michel_from_image (models/michel_from_image.h) on a toy LArTPC event (examples/lartpc: production
// physics, zero-suppressed by the signal processing) with the dense plan, the image-level sparse
// plan and the planner's choice (michel_from_image_toy/<backend>/<plan>), and on a synthetic
// ~52k-hit event: three
// ProtoDUNE-like planes of 960 wires x 1000 downsampled bins, hits spread over them; one
// iteration = every plane's image + hits in, per-hit scores out (patch extraction on the device
// feeding the fused EmTrkMichelId CNN). Reported as hits/s and seconds per event.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "examples/lartpc/toy_event.h"
#include "kaas/backends/backend_traits.h"
#include "kaas/backends/buffer.h"
#include "kaas/kernels/patches.h"
#include "kaas/models/onnx_model.h"

#include "bench/registry.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/michel_from_image.h"

namespace kaas::bench {
namespace {

using models::DataType;
using models::HostTensor;

constexpr int64_t kPlanes = 3, kWires = 960, kBins = 1000, kEventHits = 52'000;

std::vector<std::vector<HostTensor>> synthetic_event() {
  std::mt19937 rng(52);
  std::uniform_real_distribution<float> adc(-5.0f, 15.0f);
  std::vector<std::vector<HostTensor>> planes;
  for (int64_t p = 0; p < kPlanes; ++p) {
    std::vector<float> image(size_t(kWires * kBins));
    for (auto& v : image) v = rng() % 10 < 7 ? 0.0f : adc(rng);
    const int64_t hits = kEventHits / kPlanes + (p < kEventHits % kPlanes ? 1 : 0);
    std::vector<int32_t> wire(static_cast<size_t>(hits));
    std::vector<float> tick(static_cast<size_t>(hits));
    for (int64_t h = 0; h < hits; ++h) {
      wire[size_t(h)] = int32_t(rng() % kWires);
      tick[size_t(h)] = float(rng() % (kBins * 6));
    }
    planes.push_back({HostTensor::make<float>("image", DataType::kFloat32, {kWires, kBins}, image),
                      HostTensor::make<int32_t>("hit_wire", DataType::kInt32, {hits}, wire),
                      HostTensor::make<float>("hit_tick", DataType::kFloat32, {hits}, tick)});
  }
  return planes;
}

void image_to_scores(benchmark::State& state, const Backend* backend) {
  const auto event = synthetic_event();
  models::MichelFromImageOptions options;
  options.hits_per_chunk = state.range(0);
  const auto model =
      models::make_michel_from_image(models::generate_emtrk_onnx(), *backend, options);
  int64_t hits = 0;
  for (auto _ : state) {
    hits = 0;
    for (const auto& plane : event) hits += model->run(plane)[0].shape[0];
  }
  state.counters["hits/s"] =
      benchmark::Counter(double(hits), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["hits/event"] = double(hits);
  state.SetLabel(model->describe().back());
}

// Event 0 of seed 77 (a seed no training or test uses), each plane downsampled as kaas-reco
// sends it.
const std::vector<std::vector<HostTensor>>& toy_event_planes() {
  static const std::vector<std::vector<HostTensor>> planes = [] {
    examples::ToyEventConfig config;
    config.seed = 77;
    const examples::ToyEvent event = examples::make_toy_event(config, 0);
    const Queue queue(find_backend("serial"));
    const PatchParams params;
    std::vector<std::vector<HostTensor>> out;
    for (size_t p = 0; p < event.planes.size(); ++p) {
      const auto& raw = event.planes[p];
      const int64_t bins = downsampled_bins(raw.ticks, params);
      const auto image = to_device(queue, raw.adc);
      auto down = make_device_buffer<float>(queue, size_t(raw.wires * bins));
      downsample_image(queue,
                       make_view<2>(static_cast<const float*>(image.data()),
                                    {int64_t(raw.wires), int64_t(raw.ticks)}),
                       make_view<2>(down.data(), {int64_t(raw.wires), bins}), params);
      std::vector<int32_t> wire;
      std::vector<float> tick;
      for (const auto& h : event.hits)
        if (h.plane == int(p)) wire.push_back(h.wire), tick.push_back(h.peak_tick);
      const int64_t hits = int64_t(wire.size());
      out.push_back({HostTensor::make<float>("image", DataType::kFloat32, {raw.wires, bins},
                                             to_host(queue, down)),
                     HostTensor::make<int32_t>("hit_wire", DataType::kInt32, {hits}, wire),
                     HostTensor::make<float>("hit_tick", DataType::kFloat32, {hits}, tick)});
    }
    return out;
  }();
  return planes;
}

// The CNN: $KAAS_BENCH_EMTRK_MODEL (e.g. the trained model.onnx) or the generated weights (the
// work per hit is the same).
onnx::ModelProto bench_cnn() {
  const char* path = std::getenv("KAAS_BENCH_EMTRK_MODEL");
  return path != nullptr && *path != '\0' ? models::read_onnx_file(path)
                                          : models::generate_emtrk_onnx();
}

void toy_image_to_scores(benchmark::State& state, const Backend* backend, models::SparsePlan plan) {
  try {
    const auto& event = toy_event_planes();
    models::MichelFromImageOptions options;
    options.sparse = plan;
    const auto model = models::make_michel_from_image(bench_cnn(), *backend, options);
    int64_t hits = 0, sparse_planes = 0;
    double active = 0;
    for (auto _ : state) {
      hits = sparse_planes = 0;
      active = 0;
      for (const auto& plane : event) {
        hits += model->run(plane)[0].shape[0];
        const auto ran = models::michel_from_image_last_run(*model);
        sparse_planes += ran->sparse;
        active += ran->active * double(plane[1].shape[0]);
      }
    }
    state.counters["hits/event"] = double(hits);
    state.counters["positions_active"] = hits > 0 ? active / double(hits) : 0;
    if (plan != models::SparsePlan::kDense) {
      // Against the dense plan on the same event (untimed): the largest score difference and
      // the hits whose top class differs.
      options.sparse = models::SparsePlan::kDense;
      const auto dense = models::make_michel_from_image(bench_cnn(), *backend, options);
      double max_diff = 0;
      int64_t other_class = 0;
      for (const auto& plane : event) {
        const auto sparse_out = model->run(plane), dense_out = dense->run(plane);
        const auto a = sparse_out[0].values<float>(), b = dense_out[0].values<float>();
        for (size_t h = 0; h < a.size() / 4; ++h) {
          for (size_t k = 0; k < 4; ++k)
            max_diff = std::max(max_diff, double(std::abs(a[h * 4 + k] - b[h * 4 + k])));
          const auto top = [h](std::span<const float> s) {
            return std::max_element(s.begin() + h * 4, s.begin() + h * 4 + 3) - s.begin();
          };
          other_class += top(a) != top(b);
        }
      }
      state.counters["max_abs_diff_vs_dense"] = max_diff;
      state.counters["other_class_vs_dense"] = double(other_class);
    }
    state.counters["sparse_planes"] = double(sparse_planes);
    std::string label;
    for (const auto& line : model->describe())
      if (line.rfind("image-level sparse planner:", 0) == 0) label = line;
    state.SetLabel(label);
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
  }
}

void register_image_to_scores() {
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || test_only(backend->id())) continue;
    for (const auto plan :
         {models::SparsePlan::kDense, models::SparsePlan::kSparse, models::SparsePlan::kAuto}) {
      benchmark::RegisterBenchmark(("michel_from_image_toy/" + std::string(backend->name()) + "/" +
                                    std::string(to_string(plan)))
                                       .c_str(),
                                   toy_image_to_scores, backend, plan)
          ->Iterations(2)
          ->UseRealTime()
          ->Unit(benchmark::kSecond);
    }
  }
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || test_only(backend->id())) continue;
    benchmark::RegisterBenchmark(
        ("michel_from_image_event52k/" + std::string(backend->name())).c_str(), image_to_scores,
        backend)
        ->Arg(256)
        ->Iterations(1)
        ->UseRealTime()
        ->Unit(benchmark::kSecond);
  }
}

KAAS_BENCHMARKS(register_image_to_scores);

}  // namespace
}  // namespace kaas::bench
