// The neighbourhood Michel score (examples/lartpc/neighbourhood.h) on hand-placed hits whose
// means are worked out by hand.

#include "examples/lartpc/neighbourhood.h"

#include <gtest/gtest.h>

#include <cmath>

#include "kaas/common/error.h"

namespace kaas::examples {
namespace {

// Hits at (plane, wire, tick) with the given Michel scores; the other scores are arbitrary.
struct Placed {
  ToyEvent event;
  std::vector<float> scores;
  void add(int plane, int wire, float tick, float michel) {
    event.hits.push_back({plane, wire, tick, 50.0f, 200.0f, Truth::kMichel});
    scores.insert(scores.end(), {0.2f, 0.7f, 0.1f, michel});
  }
};

TEST(Neighbourhood, MeanOverTheHitsOfThePlaneWithinTheRadius) {
  Placed p;
  // 2 cm is 4.17 wires across or 25 ticks down.
  p.add(0, 100, 1000.0f, 0.9f);  // 0
  p.add(0, 104, 1000.0f, 0.3f);  // 1: 1.92 cm from 0
  p.add(0, 100, 1024.0f, 0.6f);  // 2: 1.92 cm from 0, 2.72 cm from 1
  p.add(0, 110, 1000.0f, 0.0f);  // 3: 4.8 cm from 0, 2.88 cm from 1
  p.add(1, 100, 1000.0f, 0.0f);  // 4: another plane, same place as 0
  const auto got = neighbourhood_michel_scores(p.event, p.scores, 2.0);
  ASSERT_EQ(got.size(), 5u);
  EXPECT_NEAR(got[0], (0.9 + 0.3 + 0.6) / 3, 1e-6);
  EXPECT_NEAR(got[1], (0.3 + 0.9) / 2, 1e-6);
  EXPECT_NEAR(got[2], (0.6 + 0.9) / 2, 1e-6);
  EXPECT_NEAR(got[3], 0.0, 1e-6);  // alone
  EXPECT_NEAR(got[4], 0.0, 1e-6);  // plane 0's hits are not its neighbours
  // A wider radius takes hit 3 into hit 1's neighbourhood.
  const auto wide = neighbourhood_michel_scores(p.event, p.scores, 3.0);
  EXPECT_NEAR(wide[1], (0.3 + 0.9 + 0.6 + 0.0) / 4, 1e-6);
}

TEST(Neighbourhood, RadiusZeroGivesTheHitsOwnScores) {
  Placed p;
  p.add(0, 10, 100.0f, 0.25f);
  p.add(0, 10, 100.0f, 0.75f);  // same place: still its own score
  const auto got = neighbourhood_michel_scores(p.event, p.scores, 0.0);
  EXPECT_EQ(got, (std::vector<float>{0.25f, 0.75f}));
}

TEST(Neighbourhood, WithMichelScoresReplacesOnlyTheMichelColumn) {
  Placed p;
  p.add(0, 10, 100.0f, 0.25f);
  p.add(0, 11, 100.0f, 0.75f);
  const auto got = with_michel_scores(p.scores, std::vector<float>{0.5f, 0.125f});
  EXPECT_EQ(got, (std::vector<float>{0.2f, 0.7f, 0.1f, 0.5f, 0.2f, 0.7f, 0.1f, 0.125f}));
}

TEST(Neighbourhood, BadInputIsRefused) {
  Placed p;
  p.add(0, 10, 100.0f, 0.25f);
  EXPECT_THROW(neighbourhood_michel_scores(p.event, std::vector<float>(3), 2.0), Error);
  EXPECT_THROW(neighbourhood_michel_scores(p.event, p.scores, -1.0), Error);
  EXPECT_THROW(neighbourhood_michel_scores(p.event, p.scores, std::nan("")), Error);
  EXPECT_THROW(with_michel_scores(p.scores, std::vector<float>(2)), Error);
}

}  // namespace
}  // namespace kaas::examples
