#include "examples/lartpc/toy_event.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

namespace kaas::examples {
namespace {

ToyEventConfig small() {
  ToyEventConfig c;
  c.planes = 2;
  c.wires = 200;
  c.ticks = 1200;
  c.tracks_per_plane = 8;
  c.showers_per_plane = 2;
  return c;
}

TEST(ToyEvent, SameSeedSameEventOtherSeedOtherEvent) {
  const auto a = make_toy_event(small(), 3), b = make_toy_event(small(), 3),
             c = make_toy_event(small(), 4);
  ASSERT_EQ(a.hits.size(), b.hits.size());
  EXPECT_EQ(a.planes[1].adc, b.planes[1].adc);
  for (size_t i = 0; i < a.hits.size(); ++i) {
    EXPECT_EQ(a.hits[i].wire, b.hits[i].wire);
    EXPECT_EQ(a.hits[i].peak_tick, b.hits[i].peak_tick);
  }
  EXPECT_NE(a.planes[0].adc, c.planes[0].adc);
}

TEST(ToyEvent, HitsAreInsideTheImageOnLocalMaximaAboveThreshold) {
  const auto config = small();
  const auto event = make_toy_event(config, 1);
  ASSERT_GT(event.hits.size(), 100u);
  int64_t per_truth[4] = {};
  for (const Hit& h : event.hits) {
    ASSERT_GE(h.plane, 0);
    ASSERT_LT(h.plane, config.planes);
    ASSERT_GE(h.wire, 0);
    ASSERT_LT(h.wire, config.wires);
    ASSERT_GE(h.peak_tick, -0.5f);
    ASSERT_LT(h.peak_tick, float(config.ticks) - 0.5f);
    const auto& image = event.planes[size_t(h.plane)];
    const int t = int(std::lround(h.peak_tick));
    const float at = image.adc[size_t(h.wire) * size_t(config.ticks) + size_t(t)];
    EXPECT_GT(at, config.threshold_adc);
    EXPECT_FLOAT_EQ(h.peak_adc, at);
    EXPECT_GE(h.integral, h.peak_adc);
    ++per_truth[int(h.truth)];
  }
  EXPECT_GT(per_truth[int(Truth::kTrack)], 0);
  EXPECT_GT(per_truth[int(Truth::kEm)], 0);
}

TEST(ToyEvent, ZeroSuppressedAsProductionWithThePhysicsItModels) {
  ToyEventConfig config = small();
  config.tracks_per_plane = 30;
  config.noise.dead_wire_fraction = 0.05f;
  const auto event = make_toy_event(config, 2);
  EXPECT_EQ(event.muons, 60);
  EXPECT_GT(event.stopping_muons, 0);
  EXPECT_LT(event.stopping_muons, event.muons);
  EXPECT_GT(event.delta_rays, 0);
  int64_t zeros = 0, samples = 0, michel_hits = 0;
  for (const auto& plane : event.planes) {
    zeros += std::count(plane.adc.begin(), plane.adc.end(), 0.0f);
    samples += int64_t(plane.adc.size());
  }
  EXPECT_LE(samples - zeros, event.roi_samples) << "a non-zero sample outside the ROIs";
  EXPECT_GT(double(zeros) / double(samples), 0.5) << "most of the plane is outside any ROI";
  for (const Hit& h : event.hits) {
    EXPECT_FALSE(event.planes[size_t(h.plane)].dead[size_t(h.wire)]) << "a hit on a dead wire";
    michel_hits += h.truth == Truth::kMichel;
  }
  EXPECT_EQ(michel_hits > 0, event.michels > 0);
}

TEST(ToyEvent, HitFinderFindsOnePulsePerIsolatedDeposit) {
  PlaneImage image;
  image.wires = 2;
  image.ticks = 100;
  image.adc.assign(200, 0.0f);
  image.truth.assign(200, uint8_t(Truth::kNone));
  for (int t = 0; t < 100; ++t) {
    image.adc[size_t(t)] = 50.0f * std::exp(-0.5f * float((t - 40) * (t - 40)) / 9.0f);
    image.adc[size_t(100 + t)] = 30.0f * std::exp(-0.5f * float((t - 20) * (t - 20)) / 9.0f) +
                                 30.0f * std::exp(-0.5f * float((t - 70) * (t - 70)) / 9.0f);
  }
  const auto hits = find_hits(image, 0, 15.0f);
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_EQ(hits[0].wire, 0);
  EXPECT_NEAR(hits[0].peak_tick, 40.0f, 1e-3f);
  EXPECT_NEAR(hits[1].peak_tick, 20.0f, 1e-3f);
  EXPECT_NEAR(hits[2].peak_tick, 70.0f, 1e-3f);
}

}  // namespace
}  // namespace kaas::examples
