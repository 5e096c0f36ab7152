#pragma once
// The Michel tag per hit as the DUNE paper measures it (EPJC 82 (2022) 903, collection plane):
// the efficiency for Michel hits at a fixed false-positive rate (the fraction of the other
// fiducial hits whose Michel score passes), and the ROC curve. Per-hit purity depends on how
// rare Michel hits are (0.075 % of the paper's hits, ~2.4 % of the toy's); the false-positive
// rate does not, which is why the paper quotes it.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace kaas::examples {

// The paper's two operating points (false-positive rate, its simulation's efficiency).
struct PaperPoint {
  double false_positive_rate, efficiency;
};
inline constexpr std::array<PaperPoint, 2> kPaperMichelPoints = {PaperPoint{0.0091, 0.822},
                                                                 PaperPoint{0.0157, 0.879}};

// One point of the curve: "score > threshold" passes `efficiency` of the Michel hits and
// `false_positive_rate` of the others.
struct RocPoint {
  float threshold = 0;
  double efficiency = 0, false_positive_rate = 0;
};

// The scores of the fiducial hits, Michel in truth and not.
struct MichelScores {
  std::vector<float> michel, other;
  MichelScores& operator+=(const MichelScores& more);
};

// The loosest threshold whose false-positive rate is at most `rate` (scores above it pass),
// and what it gives. Throws kaas::Error kInvalidArgument without Michel or other hits.
RocPoint at_false_positive_rate(const MichelScores& scores, double rate);

// The curve from the strictest threshold (no other hit passes) to the loosest (all pass), at
// the distinct scores of the other hits, thinned to about `max_points` points (the steps are
// kept at the low false-positive end, where the operating points are).
std::vector<RocPoint> roc_curve(const MichelScores& scores, size_t max_points = 400);

// The area under the curve: the probability that a Michel hit scores above another hit (ties
// count half), from the scores themselves rather than a thinned curve.
double roc_area(const MichelScores& scores);

// An SVG plot of the curve: efficiency against false-positive rate on a log axis (1e-4 .. 1),
// the paper's two points marked, `title` on top.
std::string roc_svg(std::span<const RocPoint> curve, const std::string& title);

}  // namespace kaas::examples
