#pragma once
// What a physicist checks first: the network's classes against the toy event's truth.
// Hit classes are track, em and none (a Michel electron's hits are EM, as in EmTrkMichelId's
// training labels); a hit is predicted as the largest of its three softmax scores and as a
// Michel hit when its Michel score is above the threshold. Hits outside the fiducial region
// (their patch is not inside the plane) have no meaningful scores and are left out of the hit
// figures. A cluster's truth is the label of most of its fiducial hits (all its hits when none
// is fiducial; ties to the lower class), its prediction the largest aggregated score (made of the
// fiducial hits), and it is a Michel cluster when most of those hits are Michel hits.

#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "examples/lartpc/reco.h"
#include "examples/lartpc/roc.h"
#include "examples/lartpc/toy_event.h"

namespace kaas::examples {

// How many items of one class there are in truth, were predicted, and both.
struct ClassCounts {
  int64_t truth = 0, predicted = 0, matched = 0;
  double efficiency() const { return truth ? double(matched) / double(truth) : 0.0; }
  double purity() const { return predicted ? double(matched) / double(predicted) : 0.0; }
  ClassCounts& operator+=(const ClassCounts& other);
};

inline constexpr std::array<const char*, 3> kClassNames = {"track", "em", "none"};
// Michel-score thresholds of the operating-point line (efficiency / purity at each).
inline constexpr std::array<float, 5> kMichelCurve = {0.5f, 0.7f, 0.8f, 0.9f, 0.95f};

// Michel scores are also histogrammed (fiducial hits, Michel in truth or not) so that any
// threshold k / kScoreBins can be evaluated after the fact: slot 0 holds scores <= 0, slot
// k + 1 scores in (k, k + 1] / kScoreBins, so "score > k / kScoreBins" is slots k + 1 and up.
inline constexpr int kScoreBins = 200;

struct Evaluation {
  std::array<ClassCounts, 3> hits, clusters;  // track, em, none
  ClassCounts michel_hits, michel_clusters;
  std::array<ClassCounts, kMichelCurve.size()> michel_hit_curve;  // at each kMichelCurve threshold
  std::array<int64_t, kScoreBins + 1> michel_scores_truth{}, michel_scores_other{};
  MichelScores michel_scores;  // every fiducial hit's own score: the ROC (roc.h)
  int64_t track_em_hits = 0, track_em_correct = 0;  // hits whose truth is track or em
  int64_t non_fiducial_hits = 0;
  double track_em_accuracy() const {
    return track_em_hits ? double(track_em_correct) / double(track_em_hits) : 0.0;
  }
  Evaluation& operator+=(const Evaluation& other);
};

// The cluster-level Michel selection, as the DUNE paper selects Michel electrons (per
// candidate, near a stopping track's end, rather than per hit): a stopping muon's end is tagged
// when at least kSelectionMinHits fiducial hits within kSelectionRadiusCm of it on its plane
// score above the threshold. The toy reconstructs no tracks, so the ends are the true ones.
// Decays are the signal, kept; stopping muons without a Michel electron (mu- captured on argon)
// the background, rejected.
inline constexpr double kSelectionRadiusCm = 10.0;
inline constexpr int kSelectionMinHits = 3;
struct MichelSelection {
  int64_t decays = 0, decays_tagged = 0, captures = 0, captures_tagged = 0;
  double efficiency() const { return decays ? double(decays_tagged) / double(decays) : 0.0; }
  double rejection() const {
    return captures ? 1.0 - double(captures_tagged) / double(captures) : 0.0;
  }
  MichelSelection& operator+=(const MichelSelection& other);
};
// scores: [hits, 4] in event hit order (the Michel score is [3]); fiducial: one flag per hit.
MichelSelection select_michels(const ToyEvent& event, std::span<const float> scores,
                               std::span<const uint8_t> fiducial, float threshold);

// Class index (0 track, 1 em, 2 none) of a truth label.
int truth_class(Truth truth);

// scores: [hits, 4] (track, em, none, michel) in event hit order; fiducial: one flag per hit;
// per_cluster: [clusters, 4] as aggregate() returns them. Throws kaas::Error kInvalidArgument
// when the sizes do not match the event and its clusters.
Evaluation evaluate(const ToyEvent& event, std::span<const float> scores,
                    std::span<const uint8_t> fiducial, const Clusters& clusters,
                    std::span<const float> per_cluster, float michel_threshold = 0.5f);

// Michel hits at "score > threshold" for a threshold k / kScoreBins (from the histograms).
ClassCounts michel_hits_above(const Evaluation& evaluation, int k);

// A Michel-tag working point: the threshold and what it gives.
struct WorkingPoint {
  float threshold = 0.5f;
  ClassCounts michel_hits;
};
// The threshold k / kScoreBins (0 < k < kScoreBins) that maximizes efficiency x purity of the
// Michel hits; throws kaas::Error kFailedPrecondition when the events hold no Michel hit.
WorkingPoint best_michel_working_point(const Evaluation& evaluation);

// One line: hit efficiency / purity per class and for Michel hits, the track/em accuracy.
std::string summary_line(const Evaluation& evaluation);
// A Markdown table of every class for hits and clusters, and the Michel operating points.
std::string summary_table(const Evaluation& evaluation);

}  // namespace kaas::examples
