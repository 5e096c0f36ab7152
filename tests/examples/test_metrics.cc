// Truth-matched efficiency and purity (examples/lartpc/metrics.h) on a hand-made event whose
// answers are counted by hand.

#include "examples/lartpc/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kaas/common/error.h"

namespace kaas::examples {
namespace {

Hit hit(int wire, Truth truth) {
  return {0, wire, 100.0f, 50.0f, 200.0f, truth};
}

// Scores of a hit predicted as `cls` (0 track, 1 em, 2 none), Michel score `michel`.
std::array<float, 4> predicted(int cls, float michel = 0.1f) {
  std::array<float, 4> s{0.1f, 0.1f, 0.1f, michel};
  s[size_t(cls)] = 0.8f;
  return s;
}

struct HandMadeEvent {
  ToyEvent event;
  std::vector<float> scores;
  std::vector<uint8_t> fiducial;
  Clusters clusters;
  std::vector<float> per_cluster;

  void add(Truth truth, std::array<float, 4> s, bool in_fiducial = true) {
    event.hits.push_back(hit(int(event.hits.size()), truth));
    scores.insert(scores.end(), s.begin(), s.end());
    fiducial.push_back(in_fiducial);
  }
  void add_cluster(std::vector<int32_t> members, std::array<float, 4> s) {
    clusters.hits.insert(clusters.hits.end(), members.begin(), members.end());
    clusters.splits.push_back(int64_t(clusters.hits.size()));
    per_cluster.insert(per_cluster.end(), s.begin(), s.end());
  }
};

// 10 hits: 4 track (3 predicted track, 1 em), 3 em (2 em, 1 track), 2 Michel (both predicted
// em; one with a Michel score above 0.5), 1 track outside the fiducial region (not counted).
// One track hit also has a high Michel score (a false Michel).
HandMadeEvent hand_made_event() {
  HandMadeEvent e;
  e.add(Truth::kTrack, predicted(0));                               // 0
  e.add(Truth::kTrack, predicted(0));                               // 1
  e.add(Truth::kTrack, predicted(0, 0.9f));                         // 2: false Michel
  e.add(Truth::kTrack, predicted(1));                               // 3
  e.add(Truth::kEm, predicted(1));                                  // 4
  e.add(Truth::kEm, predicted(1));                                  // 5
  e.add(Truth::kEm, predicted(0));                                  // 6
  e.add(Truth::kMichel, predicted(1, 0.7f));                        // 7: found Michel
  e.add(Truth::kMichel, predicted(1, 0.2f));                        // 8: missed Michel
  e.add(Truth::kTrack, predicted(2, 0.9f), /*in_fiducial=*/false);  // 9
  // Clusters: {0,1,2,3} track-truth predicted track; {4,5,6} em-truth predicted track;
  // {7,8} Michel (em-truth, Michel cluster) predicted em and Michel; {9} track predicted em
  // (its only hit is outside the fiducial region: the vote falls back to all its hits).
  e.add_cluster({0, 1, 2, 3}, predicted(0));
  e.add_cluster({4, 5, 6}, predicted(0));
  e.add_cluster({7, 8}, predicted(1, 0.6f));
  e.add_cluster({9}, predicted(1));
  return e;
}

TEST(Metrics, HandMadeEventGivesTheCountedAnswers) {
  const HandMadeEvent e = hand_made_event();
  const Evaluation ev = evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster, 0.5f);
  EXPECT_EQ(ev.non_fiducial_hits, 1);
  // Track: 4 in truth, predicted track for hits 0, 1, 2, 6 -> 4 predicted, 3 matched.
  EXPECT_EQ(ev.hits[0].truth, 4);
  EXPECT_EQ(ev.hits[0].predicted, 4);
  EXPECT_EQ(ev.hits[0].matched, 3);
  EXPECT_DOUBLE_EQ(ev.hits[0].efficiency(), 0.75);
  EXPECT_DOUBLE_EQ(ev.hits[0].purity(), 0.75);
  // EM (Michel counts as em): 5 in truth (4, 5, 6, 7, 8); predicted em: 3, 4, 5, 7, 8 -> 4 matched.
  EXPECT_EQ(ev.hits[1].truth, 5);
  EXPECT_EQ(ev.hits[1].predicted, 5);
  EXPECT_EQ(ev.hits[1].matched, 4);
  EXPECT_DOUBLE_EQ(ev.hits[1].efficiency(), 0.8);
  EXPECT_EQ(ev.hits[2].truth, 0);
  EXPECT_EQ(ev.hits[2].predicted, 0);
  // Michel: 2 in truth, predicted for hits 2 and 7, matched 7.
  EXPECT_EQ(ev.michel_hits.truth, 2);
  EXPECT_EQ(ev.michel_hits.predicted, 2);
  EXPECT_EQ(ev.michel_hits.matched, 1);
  EXPECT_DOUBLE_EQ(ev.michel_hits.efficiency(), 0.5);
  EXPECT_DOUBLE_EQ(ev.michel_hits.purity(), 0.5);
  // Track/em accuracy over the 9 fiducial hits: 0, 1, 2, 4, 5, 7, 8 right -> 7 / 9.
  EXPECT_EQ(ev.track_em_hits, 9);
  EXPECT_EQ(ev.track_em_correct, 7);
  // Clusters: truth track {0-3}, {9}; em {4-6}, {7,8}. Predicted track {0-3}, {4-6}; em {7,8},
  // {9}. Michel cluster {7,8}, predicted Michel.
  EXPECT_EQ(ev.clusters[0].truth, 2);
  EXPECT_EQ(ev.clusters[0].predicted, 2);
  EXPECT_EQ(ev.clusters[0].matched, 1);
  EXPECT_EQ(ev.clusters[1].truth, 2);
  EXPECT_EQ(ev.clusters[1].predicted, 2);
  EXPECT_EQ(ev.clusters[1].matched, 1);
  EXPECT_EQ(ev.michel_clusters.truth, 1);
  EXPECT_EQ(ev.michel_clusters.predicted, 1);
  EXPECT_EQ(ev.michel_clusters.matched, 1);
}

TEST(Metrics, ThresholdMovesTheMichelOperatingPoint) {
  const HandMadeEvent e = hand_made_event();
  // Above 0.8 only the false Michel (0.9) stays; above 0.95 nothing is predicted.
  const Evaluation high = evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster, 0.8f);
  EXPECT_EQ(high.michel_hits.predicted, 1);
  EXPECT_EQ(high.michel_hits.matched, 0);
  const Evaluation none = evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster, 0.95f);
  EXPECT_EQ(none.michel_hits.predicted, 0);
  EXPECT_DOUBLE_EQ(none.michel_hits.purity(), 0.0);
  // The operating-point curve at 0.5, 0.7, 0.8, 0.9, 0.95: Michel scores 0.9 (false), 0.7
  // (true; not above 0.7), 0.2.
  const std::array<int64_t, 5> predicted = {2, 1, 1, 0, 0}, matched = {1, 0, 0, 0, 0};
  for (size_t t = 0; t < kMichelCurve.size(); ++t) {
    EXPECT_EQ(high.michel_hit_curve[t].predicted, predicted[t]) << kMichelCurve[t];
    EXPECT_EQ(high.michel_hit_curve[t].matched, matched[t]) << kMichelCurve[t];
    EXPECT_EQ(high.michel_hit_curve[t].truth, 2);
  }
}

TEST(Metrics, ScoreHistogramGivesAnyThresholdAndTheBestWorkingPoint) {
  const HandMadeEvent e = hand_made_event();
  const Evaluation ev = evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster);
  for (size_t t = 0; t < kMichelCurve.size(); ++t) {
    const ClassCounts at =
        michel_hits_above(ev, int(std::lround(kMichelCurve[t] * float(kScoreBins))));
    EXPECT_EQ(at.predicted, ev.michel_hit_curve[t].predicted) << kMichelCurve[t];
    EXPECT_EQ(at.matched, ev.michel_hit_curve[t].matched) << kMichelCurve[t];
    EXPECT_EQ(at.truth, 2);
  }
  // Fiducial Michel scores: truth 0.7 and 0.2; others 0.9 and six of exactly 0.1. Above 0.1
  // (not at it): 0.9, 0.7, 0.2 tagged, both Michel hits found: efficiency 1 x purity 2/3, the
  // best product (below 0.1 purity is 2/9; from 0.2 on 0.5 x 0.5).
  const WorkingPoint best = best_michel_working_point(ev);
  EXPECT_FLOAT_EQ(best.threshold, 0.1f);
  EXPECT_EQ(best.michel_hits.predicted, 3);
  EXPECT_EQ(best.michel_hits.matched, 2);
  Evaluation doubled = ev;
  doubled += ev;
  EXPECT_FLOAT_EQ(best_michel_working_point(doubled).threshold, 0.1f);
  EXPECT_EQ(michel_hits_above(doubled, 20).predicted, 6);
}

TEST(Metrics, NoWorkingPointWithoutMichelHits) {
  HandMadeEvent e;
  e.add(Truth::kTrack, predicted(0, 0.9f));
  e.add_cluster({0}, predicted(0));
  const Evaluation ev = evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster);
  EXPECT_THROW(best_michel_working_point(ev), Error);
}

TEST(Metrics, TotalsAddUp) {
  const HandMadeEvent e = hand_made_event();
  const Evaluation one = evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster);
  Evaluation two = one;
  two += one;
  EXPECT_EQ(two.hits[0].matched, 2 * one.hits[0].matched);
  EXPECT_EQ(two.michel_clusters.truth, 2 * one.michel_clusters.truth);
  EXPECT_DOUBLE_EQ(two.track_em_accuracy(), one.track_em_accuracy());
  const std::string table = summary_table(two);
  EXPECT_NE(table.find("| hits track | 8 | 8 | 6 | 0.750 | 0.750 |"), std::string::npos) << table;
  EXPECT_NE(summary_line(one).find("Michel 0.500/0.500"), std::string::npos) << summary_line(one);
  EXPECT_NE(table.find("at score > 0.50: 0.500/0.500; 0.70: 0.000/0.000;"), std::string::npos)
      << table;
}

TEST(Metrics, MismatchedSizesAreRefused) {
  HandMadeEvent e = hand_made_event();
  const std::vector<float> short_scores(e.scores.begin(), e.scores.end() - 4);
  EXPECT_THROW(evaluate(e.event, short_scores, e.fiducial, e.clusters, e.per_cluster), Error);
  const std::vector<float> short_clusters(e.per_cluster.begin(), e.per_cluster.end() - 4);
  EXPECT_THROW(evaluate(e.event, e.scores, e.fiducial, e.clusters, short_clusters), Error);
  Clusters bad_splits = e.clusters;
  bad_splits.splits[2] = 1;  // cluster 1 would end before it starts
  EXPECT_THROW(evaluate(e.event, e.scores, e.fiducial, bad_splits, e.per_cluster), Error);
  e.clusters.hits[0] = 99;
  EXPECT_THROW(evaluate(e.event, e.scores, e.fiducial, e.clusters, e.per_cluster), Error);
}

// Two stopping ends on plane 0: a decay at wire 100 tick 1000 with three tagged hits within
// 10 cm (and one beyond), a capture at wire 300 tick 2000 with two tagged hits near it and a
// third on the other plane: the decay is kept, the capture rejected; a lower threshold tags
// the capture's hits as well and loses it.
TEST(Metrics, MichelSelectionCountsTaggedHitsNearStoppingEnds) {
  ToyEvent event;
  std::vector<float> scores;
  std::vector<uint8_t> fiducial;
  auto add = [&](int plane, int wire, float tick, float michel) {
    event.hits.push_back({plane, wire, tick, 50.0f, 200.0f, Truth::kEm});
    scores.insert(scores.end(), {0.1f, 0.8f, 0.1f, michel});
    fiducial.push_back(1);
  };
  event.stopping_ends = {{0, 100.0f, 1000.0f, true}, {0, 300.0f, 2000.0f, false}};
  add(0, 101, 1000.0f, 0.9f);
  add(0, 104, 1010.0f, 0.9f);
  add(0, 110, 1040.0f, 0.9f);  // 4.8 cm across, 3.2 cm down: inside
  add(0, 130, 1000.0f, 0.9f);  // 14.4 cm away
  add(0, 301, 2000.0f, 0.9f);
  add(0, 302, 2005.0f, 0.9f);
  add(1, 300, 2000.0f, 0.9f);  // other plane
  add(0, 303, 2003.0f, 0.4f);  // below 0.5
  const MichelSelection at_half = select_michels(event, scores, fiducial, 0.5f);
  EXPECT_EQ(at_half.decays, 1);
  EXPECT_EQ(at_half.decays_tagged, 1);
  EXPECT_EQ(at_half.captures, 1);
  EXPECT_EQ(at_half.captures_tagged, 0);
  EXPECT_DOUBLE_EQ(at_half.efficiency(), 1.0);
  EXPECT_DOUBLE_EQ(at_half.rejection(), 1.0);
  const MichelSelection loose = select_michels(event, scores, fiducial, 0.3f);
  EXPECT_EQ(loose.captures_tagged, 1);
  EXPECT_DOUBLE_EQ(loose.rejection(), 0.0);
  fiducial[0] = 0;  // a hit outside the fiducial region does not count: two left near the decay
  EXPECT_EQ(select_michels(event, scores, fiducial, 0.5f).decays_tagged, 0);
  MichelSelection sum = at_half;
  sum += loose;
  EXPECT_EQ(sum.decays, 2);
  EXPECT_EQ(sum.captures_tagged, 1);
  scores.pop_back();
  EXPECT_THROW(select_michels(event, scores, fiducial, 0.5f), Error);
}

}  // namespace
}  // namespace kaas::examples
