#include "examples/lartpc/toy_event.h"

#include <algorithm>
#include <cmath>
#include <random>

namespace kaas::examples {

namespace {

constexpr double kPi = 3.14159265358979323846;

// Uniform [0, 1) and standard normal from mt19937_64's fully specified output.
class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}
  double uniform() { return double(engine_() >> 11) * (1.0 / 9007199254740992.0); }
  double uniform(double lo, double hi) { return lo + (hi - lo) * uniform(); }
  double normal() {  // Box-Muller
    const double u = std::max(uniform(), 1e-300), v = uniform();
    return std::sqrt(-2.0 * std::log(u)) * std::cos(2.0 * kPi * v);
  }

 private:
  std::mt19937_64 engine_;
};

class Painter {
 public:
  Painter(PlaneImage& image, Rng& rng) : image_(image), rng_(rng) {}

  // Charge along a straight segment: a Gaussian pulse in time on every wire it crosses, with a
  // Landau-like fluctuation of the amplitude.
  void segment(double w0, double t0, double w1, double t1, double amplitude, Truth truth) {
    const double length = std::max(std::abs(w1 - w0), std::abs(t1 - t0) / 4.0);
    const int steps = std::max(1, int(length * 2));
    for (int s = 0; s <= steps; ++s) {
      const double f = double(s) / steps;
      const double a =
          amplitude * (0.7 + 0.6 * rng_.uniform() + 0.3 * std::pow(rng_.uniform(), 8) * 6) / 2.0;
      deposit(w0 + f * (w1 - w0), t0 + f * (t1 - t0), a, truth);
    }
  }

  void deposit(double wire, double tick, double amplitude, Truth truth) {
    const int w = int(std::lround(wire));
    if (w < 0 || w >= image_.wires) return;
    constexpr double sigma = 3.5;
    const int lo = std::max(0, int(tick - 4 * sigma)),
              hi = std::min(image_.ticks - 1, int(tick + 4 * sigma));
    for (int t = lo; t <= hi; ++t) {
      const double x = (t - tick) / sigma;
      const float value = float(amplitude * std::exp(-0.5 * x * x));
      const size_t i = size_t(w) * size_t(image_.ticks) + size_t(t);
      if (value > 0.25f * image_.adc[i] && value > 1.0f) image_.truth[i] = uint8_t(truth);
      image_.adc[i] += value;
    }
  }

  // A shower: segments that split in two with decreasing energy.
  void shower(double w, double t, double angle, double energy, int depth) {
    const double length = rng_.uniform(4, 14);
    const double w1 = w + length * std::cos(angle), t1 = t + 6 * length * std::sin(angle);
    segment(w, t, w1, t1, 30 + energy * 10, Truth::kEm);
    if (depth >= 7 || energy < 1.0) return;
    const double split = rng_.uniform(0.3, 0.7);
    shower(w1, t1, angle + rng_.uniform(-0.6, 0.6), energy * split, depth + 1);
    if (rng_.uniform() < 0.8)
      shower(w1, t1, angle + rng_.uniform(-0.6, 0.6), energy * (1 - split), depth + 1);
  }

 private:
  PlaneImage& image_;
  Rng& rng_;
};

}  // namespace

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
    image.adc.resize(size_t(config.wires) * size_t(config.ticks));
    image.truth.assign(image.adc.size(), uint8_t(Truth::kNone));
    for (auto& v : image.adc) v = float(config.noise_adc * rng.normal());
    Painter paint(image, rng);
    for (int m = 0; m < config.tracks_per_plane; ++m) {
      const double w0 = rng.uniform(0, config.wires), t0 = rng.uniform(0, config.ticks);
      const double angle = rng.uniform(-kPi / 2.4, kPi / 2.4), length = rng.uniform(80, 500);
      const double w1 = w0 + length * std::cos(angle) * (rng.uniform() < 0.5 ? -1 : 1);
      const double t1 = t0 + 6 * length * std::sin(angle);
      paint.segment(w0, t0, w1, t1, 90, Truth::kTrack);
      ++event.muons;
      if (rng.uniform() < 0.3) {  // a Michel electron at the stopping end
        const double a = rng.uniform(0, 2 * kPi), l = rng.uniform(10, 30);
        paint.segment(w1, t1, w1 + l * std::cos(a), t1 + 6 * l * std::sin(a), 70, Truth::kMichel);
        ++event.michels;
      }
    }
    for (int s = 0; s < config.showers_per_plane; ++s) {
      paint.shower(rng.uniform(0, config.wires), rng.uniform(0, config.ticks),
                   rng.uniform(0, 2 * kPi), rng.uniform(20, 60), 0);
      ++event.showers;
    }
    const auto hits = find_hits(image, p, config.threshold_adc);
    event.hits.insert(event.hits.end(), hits.begin(), hits.end());
    event.planes.push_back(std::move(image));
  }
  return event;
}

}  // namespace kaas::examples
