#include "examples/lartpc/toy_event.h"

#include <algorithm>
#include <cmath>

#include "examples/lartpc/signal_processing.h"
#include "examples/lartpc/toy_physics.h"

namespace kaas::examples {

std::vector<Hit> find_hits(const PlaneImage& plane, int plane_index, float threshold) {
  std::vector<Hit> hits;
  for (int w = 0; w < plane.wires; ++w) {
    const float* adc = plane.adc.data() + size_t(w) * size_t(plane.ticks);
    int t = 0;
    while (t < plane.ticks) {
      if (adc[t] <= threshold) {
        ++t;
        continue;
      }
      int end = t;
      while (end < plane.ticks && adc[end] > threshold) ++end;
      float integral = 0;
      for (int i = t; i < end; ++i) integral += adc[i];
      for (int i = t; i < end; ++i) {  // one hit per local maximum of the region
        const float left = i > t ? adc[i - 1] : -1e30f, right = i + 1 < end ? adc[i + 1] : -1e30f;
        if (adc[i] < left || adc[i] <= right) continue;
        float offset = 0;  // parabola through the peak and its neighbours
        if (i > 0 && i + 1 < plane.ticks) {
          const float denominator = adc[i - 1] - 2 * adc[i] + adc[i + 1];
          if (denominator < 0)
            offset = std::clamp(0.5f * (adc[i - 1] - adc[i + 1]) / denominator, -0.5f, 0.5f);
        }
        hits.push_back({plane_index, w, float(i) + offset, adc[i], integral,
                        Truth(plane.truth[size_t(w) * size_t(plane.ticks) + size_t(i)])});
      }
      t = end;
    }
  }
  return hits;
}

ToyEvent make_toy_event(const ToyEventConfig& config, uint64_t event_number) {
  ToyEvent event;
  Rng rng(config.seed * 0x9E3779B97F4A7C15ull + event_number);
  for (int p = 0; p < config.planes; ++p) {
    PlaneImage image;
    image.wires = config.wires;
    image.ticks = config.ticks;
    image.adc.assign(size_t(config.wires) * size_t(config.ticks), 0.0f);
    image.truth.assign(image.adc.size(), uint8_t(Truth::kNone));
    Painter paint(image, rng);
    const double width = config.wires * kWirePitchCm, height = config.ticks * kCmPerTick;
    for (int m = 0; m < config.tracks_per_plane; ++m) {
      // Entry: a point on the plane's edge (by length), heading inwards within 75 degrees of
      // the edge's normal.
      const double along = rng.uniform(0, 2 * (width + height));
      const double tilt = rng.uniform(-kPi / 2.4, kPi / 2.4);
      Vec2 start;
      double inward = 0;
      if (along < width) {
        start = {along, 0.0}, inward = kPi / 2;
      } else if (along < 2 * width) {
        start = {along - width, height}, inward = -kPi / 2;
      } else if (along < 2 * width + height) {
        start = {0.0, along - 2 * width}, inward = 0;
      } else {
        start = {width, along - 2 * width - height}, inward = kPi;
      }
      const double angle = inward + tilt;
      const double exit = distance_to_exit(start, angle, width, height);
      const double range = rng.uniform(40, 240);  // cm, for a muon that stops
      const bool stopping = rng.uniform() < config.stopping_fraction && range < exit;
      const auto end = paint.muon(start, angle, stopping ? range : exit, stopping);
      ++event.muons;
      event.stopping_muons += stopping;
      if (stopping) {
        const bool decays = rng.uniform() < config.michel_probability;
        event.stopping_ends.push_back(
            {p, float(end.position.x / kWirePitchCm), float(end.position.y / kCmPerTick), decays});
        if (decays) {
          paint.electron(end.position, rng.uniform(0, 2 * kPi), michel_energy(rng), Truth::kMichel);
          ++event.michels;
        }
      }
    }
    for (int s = 0; s < config.showers_per_plane; ++s) {
      paint.shower(rng.uniform(0, config.wires), rng.uniform(0, config.ticks),
                   rng.uniform(0, 2 * kPi), rng.uniform(20, 60), 0);
      ++event.showers;
    }
    event.delta_rays += paint.delta_rays();
    add_readout_noise(image, config.noise, rng);
    event.roi_samples += process_signal(image, config.processing, config.noise.board_wires);
    const auto hits = find_hits(image, p, config.threshold_adc);
    event.hits.insert(event.hits.end(), hits.begin(), hits.end());
    event.planes.push_back(std::move(image));
  }
  return event;
}

}  // namespace kaas::examples
