// Hit -> patch extraction (kernels/patches.h) for one wire plane: downsampling of the whole
// wire x tick image and 48 x 48 patches around every hit, reported as hits/s and GB/s written.

#include <benchmark/benchmark.h>

#include <random>
#include <string>
#include <vector>

#include "bench/counters.h"
#include "bench/registry.h"
#include "kaas/backends/buffer.h"
#include "kaas/kernels/patches.h"

namespace kaas::bench {
namespace {

// A ProtoDUNE-like plane: 960 wires x 6000 ticks (-> 1000 bins), `hits` hits spread uniformly.
void patches_kaas(benchmark::State& state, const Backend* backend) {
  const int64_t wires = 960, ticks = 6000, hits = state.range(0);
  const PatchParams params;
  const int64_t bins = downsampled_bins(ticks, params);
  Queue queue(*backend);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> adc(-20.0f, 200.0f);
  std::vector<float> image(wires * ticks);
  for (auto& v : image) v = adc(rng);
  std::vector<int32_t> wire(hits);
  std::vector<float> time(hits);
  for (int64_t h = 0; h < hits; ++h) {
    wire[h] = int32_t(rng() % wires);
    time[h] = float(rng() % ticks);
  }
  auto dimage = to_device(queue, image);
  auto dwire = to_device(queue, wire);
  auto dtime = to_device(queue, time);
  auto down = make_device_buffer<float>(queue, wires * bins);
  auto patches = make_device_buffer<float>(queue, hits * 48 * 48);
  auto fiducial = make_device_buffer<uint8_t>(queue, hits);
  for (auto _ : state) {
    downsample_image(queue, make_view<2>(static_cast<const float*>(dimage.data()), {wires, ticks}),
                     make_view<2>(down.data(), {wires, bins}), params);
    extract_patches(queue, make_view<2>(static_cast<const float*>(down.data()), {wires, bins}),
                    ticks, dwire.view(), dtime.view(), make_view<3>(patches.data(), {hits, 48, 48}),
                    fiducial.view(), params);
    queue.wait();
  }
  state.counters["hits/s"] =
      benchmark::Counter(double(hits), benchmark::Counter::kIsIterationInvariantRate);
  // image read once, patches written once
  set_bandwidth(state, 4.0 * (double(wires * ticks) + double(hits) * 48 * 48));
}

void register_patches() {
  for (const Backend* backend : compiled_backends()) {
    if (!backend->available() || backend->id() == BackendId::kGpuEmu) continue;
    benchmark::RegisterBenchmark(("patches_plane960x6000/" + std::string(backend->name())).c_str(),
                                 patches_kaas, backend)
        ->Arg(1'500)
        ->Arg(15'000)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond);
  }
}

KAAS_BENCHMARKS(register_patches);

}  // namespace
}  // namespace kaas::bench
