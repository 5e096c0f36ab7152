#include "examples/lartpc/neighbourhood.h"

#include <cmath>
#include <string>
#include <unordered_map>

#include "examples/lartpc/toy_physics.h"
#include "kaas/common/error.h"

namespace kaas::examples {
namespace {

// Hits bucketed by plane and by a square grid of side radius_cm: a hit's neighbours lie in its
// own cell or the eight around it.
struct Grid {
  double cell_cm;
  std::unordered_map<uint64_t, std::vector<uint32_t>> cells;

  static uint64_t key(int plane, int64_t x, int64_t y) {
    return (uint64_t(uint32_t(plane)) << 48) ^ (uint64_t(uint32_t(x)) << 24) ^
           uint64_t(uint32_t(y) & 0xffffff);
  }
  int64_t cell(double cm) const { return int64_t(std::floor(cm / cell_cm)); }
};

double wire_cm(const Hit& h) {
  return double(h.wire) * kWirePitchCm;
}
double drift_cm(const Hit& h) {
  return double(h.peak_tick) * kCmPerTick;
}

}  // namespace

std::vector<float> neighbourhood_michel_scores(const ToyEvent& event, std::span<const float> scores,
                                               double radius_cm) {
  const size_t hits = event.hits.size();
  if (scores.size() != hits * 4)
    throw Error(ErrorCode::kInvalidArgument,
                "neighbourhood_michel_scores: " + std::to_string(scores.size()) + " scores for " +
                    std::to_string(hits) + " hits (4 per hit expected)");
  if (!(radius_cm >= 0.0) || !std::isfinite(radius_cm))
    throw Error(ErrorCode::kInvalidArgument,
                "neighbourhood_michel_scores: the radius must be a finite number >= 0 cm, not " +
                    std::to_string(radius_cm));
  std::vector<float> out(hits);
  for (size_t i = 0; i < hits; ++i) out[i] = scores[i * 4 + 3];
  if (radius_cm == 0.0) return out;

  Grid grid{radius_cm, {}};
  for (size_t i = 0; i < hits; ++i) {
    const Hit& h = event.hits[i];
    grid.cells[Grid::key(h.plane, grid.cell(wire_cm(h)), grid.cell(drift_cm(h)))].push_back(
        uint32_t(i));
  }
  const double r2 = radius_cm * radius_cm;
  for (size_t i = 0; i < hits; ++i) {
    const Hit& h = event.hits[i];
    const double x = wire_cm(h), y = drift_cm(h);
    const int64_t cx = grid.cell(x), cy = grid.cell(y);
    double sum = 0;
    int64_t count = 0;
    for (int64_t dx = -1; dx <= 1; ++dx)
      for (int64_t dy = -1; dy <= 1; ++dy) {
        const auto found = grid.cells.find(Grid::key(h.plane, cx + dx, cy + dy));
        if (found == grid.cells.end()) continue;
        for (const uint32_t j : found->second) {
          if (event.hits[j].plane != h.plane) continue;  // keys may collide; planes may not
          const double ddx = wire_cm(event.hits[j]) - x, ddy = drift_cm(event.hits[j]) - y;
          if (ddx * ddx + ddy * ddy > r2) continue;
          sum += double(scores[size_t(j) * 4 + 3]);
          ++count;
        }
      }
    out[i] = float(sum / double(count));  // count >= 1: the hit itself
  }
  return out;
}

std::vector<float> with_michel_scores(std::span<const float> scores,
                                      std::span<const float> michel) {
  if (scores.size() != michel.size() * 4)
    throw Error(ErrorCode::kInvalidArgument,
                "with_michel_scores: " + std::to_string(scores.size()) + " scores for " +
                    std::to_string(michel.size()) + " Michel scores (4 per hit expected)");
  std::vector<float> out(scores.begin(), scores.end());
  for (size_t i = 0; i < michel.size(); ++i) out[i * 4 + 3] = michel[i];
  return out;
}

}  // namespace kaas::examples
