// michel_from_image (models/michel_from_image.h) on a synthetic ~52k-hit event: three
// ProtoDUNE-like planes of 960 wires x 1000 downsampled bins, hits spread over them; one
// iteration = every plane's image + hits in, per-hit scores out (patch extraction on the device
// feeding the fused EmTrkMichelId CNN). Reported as hits/s and seconds per event.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

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

void register_image_to_scores() {
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || backend->id() == BackendId::kGpuEmu) continue;
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
