// kaas-reco's steps around the inference call: clustering, preprocessing, aggregation.

#include "examples/lartpc/reco.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <span>

#include "kaas/backends/backend.h"
#include "kaas/models/emtrk_onnx_generator.h"
#include "kaas/models/michel_from_image.h"

namespace kaas::examples {
namespace {

Hit hit(int plane, int wire, float tick) {
  return {plane, wire, tick, 50.0f, 200.0f, Truth::kTrack};
}

// The cluster id of every hit.
std::vector<int> cluster_ids(const Clusters& c, size_t hits) {
  std::vector<int> id(hits, -1);
  for (size_t k = 0; k < c.size(); ++k) {
    for (int64_t i = c.splits[k]; i < c.splits[k + 1]; ++i) id[size_t(c.hits[size_t(i)])] = int(k);
  }
  return id;
}

TEST(Reco, ClustersAreConnectedHitsOnNeighbouringWires) {
  ToyEvent event;
  // A diagonal track on plane 0 (wires 10..14, one tick apart per wire), a second one far away
  // in time, a lone hit two wires off the first track, and the same wires on plane 1.
  for (int w = 10; w < 15; ++w) event.hits.push_back(hit(0, w, 100.0f + float(w)));
  for (int w = 10; w < 15; ++w) event.hits.push_back(hit(0, w, 900.0f));
  event.hits.push_back(hit(0, 17, 114.0f));
  event.hits.push_back(hit(1, 10, 110.0f));
  event.hits.push_back(hit(1, 11, 111.0f));
  // Same wire, ticks within the gap: joined; beyond it: not.
  event.hits.push_back(hit(1, 30, 500.0f));
  event.hits.push_back(hit(1, 30, 507.0f));
  event.hits.push_back(hit(1, 30, 520.0f));
  const Clusters c = cluster_hits(event, 8.0f);
  const auto id = cluster_ids(c, event.hits.size());
  ASSERT_EQ(c.hits.size(), event.hits.size()) << "every hit in exactly one cluster";
  EXPECT_EQ(std::set<int32_t>(c.hits.begin(), c.hits.end()).size(), event.hits.size());
  for (int i = 1; i < 5; ++i) EXPECT_EQ(id[size_t(i)], id[0]) << "track 1 hit " << i;
  for (int i = 6; i < 10; ++i) EXPECT_EQ(id[size_t(i)], id[5]) << "track 2 hit " << i;
  EXPECT_NE(id[0], id[5]);
  EXPECT_NE(id[10], id[4]) << "two wires away is not a neighbour";
  EXPECT_EQ(id[11], id[12]);
  EXPECT_NE(id[11], id[0]) << "another plane";
  EXPECT_EQ(id[13], id[14]);
  EXPECT_NE(id[14], id[15]);
  EXPECT_EQ(c.size(), 6u);
  EXPECT_EQ(c.splits.front(), 0);
  EXPECT_EQ(c.splits.back(), int64_t(event.hits.size()));
}

TEST(Reco, PlanesCarryTheirHitsAndDownsampledImages) {
  ToyEventConfig config;
  config.planes = 2;
  config.wires = 120;
  config.ticks = 606;  // 101 bins; the trailing ticks of no full window are dropped
  config.tracks_per_plane = 4;
  config.showers_per_plane = 1;
  const ToyEvent event = make_toy_event(config, 7);
  const Queue queue(default_backend());
  const auto planes = prepare_planes(queue, event);
  ASSERT_EQ(planes.size(), 2u);
  size_t hits = 0;
  for (size_t p = 0; p < planes.size(); ++p) {
    EXPECT_EQ(planes[p].wires, 120);
    EXPECT_EQ(planes[p].bins, 101);
    ASSERT_EQ(planes[p].image.size(), size_t(120 * 101));
    // Bin 3 of wire 5: the mean of ticks 18..23, clamped to [-50, 150] and mapped onto
    // [-5, 15] (kernels/patches.h).
    double mean = 0;
    for (int t = 18; t < 24; ++t) mean += event.planes[p].adc[size_t(5 * 606 + t)];
    mean = std::clamp(mean / 6, -50.0, 150.0);
    EXPECT_NEAR(planes[p].image[size_t(5 * 101 + 3)], (mean + 50) * 20 / 200 - 5, 1e-4);
    EXPECT_EQ(planes[p].hit_wire.size(), planes[p].hit_tick.size());
    hits += planes[p].hit_wire.size();
  }
  ASSERT_EQ(hits, event.hits.size());
  ASSERT_GT(hits, 0u);
  EXPECT_EQ(planes[1].hit_wire.front(), event.hits[planes[0].hit_wire.size()].wire);

  const auto patches = prepare_patches(queue, planes);
  ASSERT_EQ(patches.fiducial.size(), hits);
  ASSERT_EQ(patches.patches.size(), hits * 48 * 48);
  // The first hit's patch centre is its (wire, bin) of the downsampled image.
  const auto& p0 = planes[0];
  const int w = p0.hit_wire[0], b = int(p0.hit_tick[0]) / 6;
  EXPECT_EQ(patches.patches[24 * 48 + 24], p0.image[size_t(w * p0.bins + b)]);
}

// On a toy event (production physics, zero-suppressed signal): michel_from_image's image-level
// sparse plan gives every hit the dense plan's four scores within 1e-5 and the same class.
// Under AddressSanitizer (scripts/test.sh step 2: the sparse plan's indexing on toy hits) one
// track and one shower on a quarter of the plane (~850 hits, 40 -> 20 s there); the whole event
// in step 1.
#if defined(__SANITIZE_ADDRESS__)
constexpr int kToyTracks = 1, kToyWires = 100, kToyTicks = 900;
#else
constexpr int kToyTracks = 6, kToyWires = 200, kToyTicks = 1800;
#endif

TEST(Reco, TheSparsePlanGivesEveryToyHitTheDensePlansScores) {
  ToyEventConfig config;
  config.wires = kToyWires;
  config.ticks = kToyTicks;
  config.tracks_per_plane = kToyTracks;
  config.showers_per_plane = kToyTracks / 3 + 1;
  const ToyEvent event = make_toy_event(config, 3);
  const Queue queue(default_backend());
  const auto planes = prepare_planes(queue, event);
  const auto cnn = models::generate_emtrk_onnx();
  models::MichelFromImageOptions options;
  options.sparse = models::SparsePlan::kDense;
  const auto dense = models::make_michel_from_image(cnn, default_backend(), options);
  options.sparse = models::SparsePlan::kSparse;
  const auto sparse = models::make_michel_from_image(cnn, default_backend(), options);
  int64_t hits = 0;
  for (const auto& plane : planes) {
    const int64_t n = int64_t(plane.hit_wire.size());
    const std::vector<models::HostTensor> in = {
        models::HostTensor::make<float>("image", models::DataType::kFloat32,
                                        {plane.wires, plane.bins}, plane.image),
        models::HostTensor::make<int32_t>("hit_wire", models::DataType::kInt32, {n},
                                          plane.hit_wire),
        models::HostTensor::make<float>("hit_tick", models::DataType::kFloat32, {n},
                                        plane.hit_tick)};
    const auto dense_out = dense->run(in), sparse_out = sparse->run(in);
    const auto a = dense_out[0].values<float>(), b = sparse_out[0].values<float>();
    EXPECT_TRUE(models::michel_from_image_last_run(*sparse)->sparse);
    for (int64_t h = 0; h < n; ++h) {
      for (int k = 0; k < 4; ++k) ASSERT_NEAR(b[h * 4 + k], a[h * 4 + k], 1e-5) << h;
      const auto top = [h](std::span<const float> s) {
        return std::max_element(s.begin() + h * 4, s.begin() + h * 4 + 3) - s.begin();
      };
      EXPECT_EQ(top(b), top(a)) << "hit " << h;
    }
    hits += n;
  }
  EXPECT_GT(hits, 500);
}

TEST(Reco, ClusterScoresAreTheWeightedGeometricMean) {
  const Queue queue(default_backend());
  Clusters c;
  c.splits = {0, 2, 3};
  c.hits = {0, 2, 1};
  const std::vector<float> scores = {0.7f, 0.2f, 0.1f, 0.5f,   // hit 0
                                     0.1f, 0.1f, 0.8f, 0.9f,   // hit 1
                                     0.5f, 0.4f, 0.1f, 0.3f};  // hit 2
  const std::vector<uint8_t> fiducial = {1, 1, 1};
  const auto out = aggregate(queue, scores, fiducial, c);
  ASSERT_EQ(out.size(), 8u);
  double expected[4], sum = 0;
  for (int k = 0; k < 4; ++k) {
    expected[k] = std::sqrt(double(scores[size_t(k)]) * double(scores[size_t(8 + k)]));
    sum += expected[k];
  }
  for (int k = 0; k < 4; ++k) EXPECT_NEAR(out[size_t(k)], expected[k] / sum, 1e-6) << k;
  double single = 0;
  for (int k = 0; k < 4; ++k) single += scores[size_t(4 + k)];
  for (int k = 0; k < 4; ++k)
    EXPECT_NEAR(out[size_t(4 + k)], scores[size_t(4 + k)] / single, 1e-6) << k;
  EXPECT_THROW(aggregate(queue, std::span(scores).first(8), fiducial, c), Error);
}

}  // namespace
}  // namespace kaas::examples
