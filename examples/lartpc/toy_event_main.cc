// kaas-toy-event: generates toy LArTPC events and prints what they hold (hits per plane and per
// truth label), the input of the reconstruction demo.

#include <chrono>
#include <cstdio>

#include "examples/lartpc/toy_event.h"
#include "examples/lartpc/toy_options.h"
#include "kaas/common/cli.h"

int main(int argc, char** argv) {
  kaas::cli::App app{
      "kaas-toy-event: toy LArTPC events (muons, delta rays, Michel electrons, showers, noise, "
      "zero-suppressed signal)"};
  kaas::examples::ToyEventConfig config;
  int events = 1;
  app.add_option("--events", events, "events to generate")->check(kaas::cli::range(1, 100000));
  kaas::examples::add_toy_event_options(app, config);
  if (const auto status = app.parse(argc, argv)) return *status;
  for (int e = 0; e < events; ++e) {
    const auto start = std::chrono::steady_clock::now();
    const auto event = kaas::examples::make_toy_event(config, uint64_t(e));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    int64_t by_truth[4] = {};
    for (const auto& h : event.hits) ++by_truth[int(h.truth)];
    const double samples = double(config.planes) * config.wires * config.ticks;
    std::printf(
        "event %d: %zu hits (track %lld, em %lld, michel %lld, noise %lld); %lld muons (%lld "
        "stopping), %lld Michel electrons, %lld delta rays, %lld showers; %.2f %% of the samples "
        "in ROIs; %.0f ms\n",
        e, event.hits.size(), (long long)by_truth[1], (long long)by_truth[2],
        (long long)by_truth[3], (long long)by_truth[0], (long long)event.muons,
        (long long)event.stopping_muons, (long long)event.michels, (long long)event.delta_rays,
        (long long)event.showers, 100.0 * double(event.roi_samples) / samples, ms);
  }
  return 0;
}
