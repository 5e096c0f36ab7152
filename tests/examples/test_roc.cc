// The per-hit Michel ROC (examples/lartpc/roc.h) on score sets whose answers are counted by hand.

#include "examples/lartpc/roc.h"

#include <gtest/gtest.h>

#include "kaas/common/error.h"

namespace kaas::examples {
namespace {

// 1000 other hits scored 0.000 .. 0.999, 10 Michel hits scored 0.9855 .. 0.9935 and 0.5005
// (between the others' scores: no ties).
MichelScores hand_made() {
  MichelScores s;
  for (int i = 0; i < 1000; ++i) s.other.push_back(float(i) / 1000.0f);
  for (int i = 0; i < 9; ++i) s.michel.push_back((float(985 + i) + 0.5f) / 1000.0f);
  s.michel.push_back(0.5005f);
  return s;
}

TEST(MichelRoc, EfficiencyAtAFalsePositiveRateCountsWhatPasses) {
  const MichelScores s = hand_made();
  // 0.91 % of 1000 allows 9 other hits: those above the 10th largest, 0.990.
  const RocPoint p = at_false_positive_rate(s, 0.0091);
  EXPECT_FLOAT_EQ(p.threshold, 0.990f);
  EXPECT_DOUBLE_EQ(p.false_positive_rate, 0.009);
  EXPECT_DOUBLE_EQ(p.efficiency, 0.4);  // 0.9905 .. 0.9935 of the 10
  // 1.57 % allows 15: above 0.984 -> all nine high Michel hits.
  const RocPoint q = at_false_positive_rate(s, 0.0157);
  EXPECT_FLOAT_EQ(q.threshold, 0.984f);
  EXPECT_DOUBLE_EQ(q.false_positive_rate, 0.015);
  EXPECT_DOUBLE_EQ(q.efficiency, 0.9);
}

TEST(MichelRoc, TiedScoresPassOrFailTogether) {
  MichelScores s;
  s.other = {0.9f, 0.9f, 0.9f, 0.1f};
  s.michel = {0.95f, 0.9f};
  // 50 % allows 2 of 4, but the three 0.9s tie: only the strict threshold 0.9 keeps it <= 2.
  const RocPoint p = at_false_positive_rate(s, 0.5);
  EXPECT_FLOAT_EQ(p.threshold, 0.9f);
  EXPECT_DOUBLE_EQ(p.false_positive_rate, 0.0);
  EXPECT_DOUBLE_EQ(p.efficiency, 0.5);
}

TEST(MichelRoc, CurveRunsFromStrictToLooseAndTheAreaIsTheRankStatistic) {
  const MichelScores s = hand_made();
  const auto curve = roc_curve(s, 10000);
  ASSERT_FALSE(curve.empty());
  for (size_t i = 1; i < curve.size(); ++i) {
    EXPECT_GE(curve[i].false_positive_rate, curve[i - 1].false_positive_rate);
    EXPECT_GE(curve[i].efficiency, curve[i - 1].efficiency);
  }
  EXPECT_DOUBLE_EQ(curve.back().false_positive_rate, 1.0);
  EXPECT_DOUBLE_EQ(curve.back().efficiency, 1.0);
  EXPECT_DOUBLE_EQ(curve.front().false_positive_rate, 0.0);
  // The area is P(Michel score > other score), ties half: counted pair by pair.
  double wins = 0;
  for (float m : s.michel)
    for (float o : s.other) wins += m > o ? 1.0 : m == o ? 0.5 : 0.0;
  EXPECT_NEAR(roc_area(s), wins / 10000.0, 1e-12);
  MichelScores tied;
  tied.michel = {0.5f};
  tied.other = {0.5f, 0.2f};
  EXPECT_DOUBLE_EQ(roc_area(tied), 0.75);
}

TEST(MichelRoc, WithoutMichelOrOtherHitsItSaysSo) {
  MichelScores s;
  s.other = {0.1f};
  try {
    at_false_positive_rate(s, 0.01);
    FAIL() << "no Michel hits accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("0 Michel"), std::string::npos) << e.what();
  }
}

TEST(MichelRoc, SvgHasTheCurveAndThePapersPoints) {
  const auto svg = roc_svg(roc_curve(hand_made()), "hand-made");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("<polyline"), std::string::npos);
  EXPECT_NE(svg.find("hand-made"), std::string::npos);
  size_t circles = 0;
  for (size_t at = svg.find("<circle"); at != std::string::npos; at = svg.find("<circle", at + 1))
    ++circles;
  EXPECT_EQ(circles, kPaperMichelPoints.size());
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
}

}  // namespace
}  // namespace kaas::examples
