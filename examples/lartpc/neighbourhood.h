#pragma once
// The Michel tag read over a hit's neighbourhood. A Michel electron is a few cm of hits, and
// one hit's patch decides badly where the electron leaves the muon (the patch holds both
// branches). Production reads the tag per cluster (the mean of its hits' outputs, metrics.h),
// but a Michel electron's hits join their muon's cluster here, so the hits within a few cm on
// the same plane stand in for the Michel cluster: a hit's neighbourhood score is the mean
// Michel score of those hits, itself included.

#include <span>
#include <vector>

#include "examples/lartpc/toy_event.h"

namespace kaas::examples {

// Per hit of `event`: the mean of scores[j * 4 + 3] over the hits j of its plane whose
// (wire, peak tick) lie within `radius_cm` of it (kWirePitchCm across, kCmPerTick down).
// radius_cm 0 returns the hits' own Michel scores. Throws kaas::Error kInvalidArgument when
// `scores` is not [hits, 4] or the radius is negative or not finite.
std::vector<float> neighbourhood_michel_scores(const ToyEvent& event, std::span<const float> scores,
                                               double radius_cm);

// `scores` with every hit's Michel score (column 3) replaced by `michel`.
std::vector<float> with_michel_scores(std::span<const float> scores, std::span<const float> michel);

}  // namespace kaas::examples
