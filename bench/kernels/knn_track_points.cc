#include "bench/kernels/knn_track_points.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

namespace kaas::bench {

namespace {

constexpr float kBox = 1000.0f;
constexpr float kPi = 3.14159265f;

struct Emitter {
  cases::PointSet& set;
  std::mt19937& rng;
  int64_t dims, limit;

  bool full() const { return int64_t(set.coords.size()) / dims >= limit; }
  // A hit at (x, y) with charge q (and a second charge-like value for D = 4), jittered.
  void hit(float x, float y, float q) {
    if (full()) return;
    std::normal_distribution<float> jitter(0.0f, 0.05f);
    set.coords.push_back(std::clamp(x + jitter(rng), 0.0f, kBox));
    set.coords.push_back(std::clamp(y + jitter(rng), 0.0f, kBox));
    if (dims >= 3) set.coords.push_back(q);
    if (dims >= 4) set.coords.push_back(0.5f * q + 10.0f * jitter(rng));
  }
};

// A straight track: hits every `spacing` along a random direction, charge drifting slowly.
void track(Emitter& out, float spacing, float length) {
  std::uniform_real_distribution<float> pos(0.0f, kBox), angle(0.0f, 2 * kPi), charge(15, 40);
  float x = pos(out.rng), y = pos(out.rng), q = charge(out.rng);
  const float a = angle(out.rng), dx = std::cos(a) * spacing, dy = std::sin(a) * spacing;
  std::normal_distribution<float> dq(0.0f, 0.5f);
  for (float s = 0; s < length && !out.full(); s += spacing) {
    out.hit(x, y, q);
    x += dx, y += dy, q = std::max(1.0f, q + dq(out.rng));
    if (x < 0 || x > kBox || y < 0 || y > kBox) return;
  }
}

// A shower: branches of a few units that turn and split, from one seed point.
void shower(Emitter& out, float spacing, int64_t hits) {
  std::uniform_real_distribution<float> pos(100.0f, kBox - 100.0f), angle(0.0f, 2 * kPi),
      unit(0.0f, 1.0f);
  struct Branch {
    float x, y, a, q;
  };
  std::vector<Branch> open = {{pos(out.rng), pos(out.rng), angle(out.rng), 60.0f}};
  std::normal_distribution<float> turn(0.0f, 0.3f);
  int64_t made = 0;
  while (!open.empty() && made < hits && !out.full()) {
    Branch b = open.back();
    open.pop_back();
    const int steps = 4 + int(unit(out.rng) * 16);
    for (int i = 0; i < steps && made < hits; ++i, ++made) {
      out.hit(b.x, b.y, b.q);
      b.a += turn(out.rng);
      b.x += std::cos(b.a) * spacing, b.y += std::sin(b.a) * spacing;
    }
    b.q = std::max(2.0f, b.q * 0.8f);
    open.push_back(b);
    if (unit(out.rng) < 0.6f) open.push_back({b.x, b.y, b.a + turn(out.rng) * 3, b.q});
  }
}

}  // namespace

cases::PointSet track_points(int64_t n, int64_t dims, const TrackPointsConfig& config) {
  cases::PointSet set;
  set.dims = dims;
  std::mt19937 rng(config.seed);
  Emitter out{set, rng, dims, n};
  const int64_t track_hits = int64_t(double(n) * config.track_fraction);
  const int64_t noise_hits = int64_t(double(n) * config.noise_fraction);
  std::uniform_real_distribution<float> length(20.0f, 400.0f), pos(0.0f, kBox), charge(1, 20);
  out.limit = track_hits;
  while (!out.full()) track(out, config.spacing, length(rng));
  out.limit = n - noise_hits;
  while (!out.full()) shower(out, config.spacing, 300 + int64_t(pos(rng)) * 2);
  out.limit = n;
  while (!out.full()) out.hit(pos(rng), pos(rng), charge(rng));
  set.splits = {0, n};
  return set;
}

}  // namespace kaas::bench
