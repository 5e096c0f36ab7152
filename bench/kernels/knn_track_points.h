#pragma once
// LArTPC-like clustered points for the kNN benchmark, independent of kaas-toy-event: straight
// tracks with a hit every `spacing` units, branching showers, and sparse noise, in a 1000-unit box
// (think cm). D = 2: (wire position, drift position); D = 3 adds a charge-like coordinate that
// varies slowly along a track; D = 4 a second one. One event of n points.

#include <cstdint>

#include "cases/knn_cases.h"

namespace kaas::bench {

struct TrackPointsConfig {
  float spacing = 0.5f;          // distance between consecutive hits of a track or shower branch
  double track_fraction = 0.6;   // of the points; showers take 1 - track - noise
  double noise_fraction = 0.05;  // uniform over the box
  uint32_t seed = 17;
};

cases::PointSet track_points(int64_t n, int64_t dims, const TrackPointsConfig& config = {});

}  // namespace kaas::bench
