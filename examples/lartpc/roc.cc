#include "examples/lartpc/roc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>

#include "kaas/common/error.h"

namespace kaas::examples {

MichelScores& MichelScores::operator+=(const MichelScores& more) {
  michel.insert(michel.end(), more.michel.begin(), more.michel.end());
  other.insert(other.end(), more.other.begin(), more.other.end());
  return *this;
}

namespace {

void require_both(const MichelScores& scores) {
  if (scores.michel.empty() || scores.other.empty())
    throw Error(ErrorCode::kInvalidArgument,
                "Michel ROC: " + std::to_string(scores.michel.size()) + " Michel and " +
                    std::to_string(scores.other.size()) + " other fiducial hits: both are needed");
}

std::vector<float> descending(const std::vector<float>& v) {
  std::vector<float> out(v);
  std::sort(out.begin(), out.end(), std::greater<float>());
  return out;
}

// How many of the descending `sorted` are > threshold.
double passing(const std::vector<float>& sorted, float threshold) {
  return double(
      std::partition_point(sorted.begin(), sorted.end(), [&](float s) { return s > threshold; }) -
      sorted.begin());
}

}  // namespace

RocPoint at_false_positive_rate(const MichelScores& scores, double rate) {
  require_both(scores);
  const auto other = descending(scores.other), michel = descending(scores.michel);
  // At most floor(rate * n) other hits may pass: "score > other[allowed]" passes those above
  // the allowed-th largest (fewer where scores tie), and any lower threshold passes one more.
  const auto allowed = size_t(std::floor(rate * double(other.size())));
  const float threshold = other[std::min(allowed, other.size() - 1)];
  RocPoint point;
  point.threshold = threshold;
  point.efficiency = passing(michel, threshold) / double(michel.size());
  point.false_positive_rate = passing(other, threshold) / double(other.size());
  return point;
}

std::vector<RocPoint> roc_curve(const MichelScores& scores, size_t max_points) {
  require_both(scores);
  const auto other = descending(scores.other), michel = descending(scores.michel);
  std::vector<RocPoint> curve{
      {other.front(), passing(michel, other.front()) / double(michel.size()), 0.0}};
  // One point per distinct other-hit score, strictest first; the rate steps grow
  // geometrically so the low false-positive end keeps its resolution.
  const double n = double(other.size());
  double next_rate = 0.0;
  for (size_t k = 0; k < other.size(); ++k) {
    if (k + 1 < other.size() && other[k + 1] == other[k]) continue;
    const float threshold = k + 1 < other.size() ? other[k + 1] : -INFINITY;
    const double rate = double(k + 1) / n;
    if (rate < next_rate && k + 1 < other.size()) continue;
    curve.push_back({threshold, passing(michel, threshold) / double(michel.size()), rate});
    next_rate = std::max(rate * (1.0 + 8.0 / double(max_points)), rate + 1.0 / n);
  }
  return curve;
}

double roc_area(const MichelScores& scores) {
  require_both(scores);
  std::vector<float> other(scores.other);
  std::sort(other.begin(), other.end());
  double wins = 0;
  for (float m : scores.michel) {
    const auto below = std::lower_bound(other.begin(), other.end(), m) - other.begin();
    const auto tied = std::upper_bound(other.begin(), other.end(), m) - other.begin() - below;
    wins += double(below) + 0.5 * double(tied);
  }
  return wins / (double(scores.michel.size()) * double(other.size()));
}

std::string roc_svg(std::span<const RocPoint> curve, const std::string& title) {
  constexpr double kLeft = 70, kTop = 40, kWidth = 480, kHeight = 320;
  constexpr double kMinRate = 1e-4;
  const auto x_of = [&](double rate) {
    const double clamped = std::clamp(rate, kMinRate, 1.0);
    return kLeft + kWidth * (std::log10(clamped) - std::log10(kMinRate)) / -std::log10(kMinRate);
  };
  const auto y_of = [&](double efficiency) { return kTop + kHeight * (1.0 - efficiency); };
  std::string svg;
  char text[256];
  const auto add = [&](const char* pattern, auto... values) {
    std::snprintf(text, sizeof text, pattern, values...);
    svg += text;
  };
  add("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
      "font-family=\"sans-serif\" font-size=\"12\">\n",
      int(kLeft + kWidth + 30), int(kTop + kHeight + 60));
  add("<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  svg += "<text x=\"" + std::to_string(int(kLeft)) + "\" y=\"24\" font-size=\"14\">" + title +
         "</text>\n";
  for (int decade = -4; decade <= 0; ++decade) {  // grid and labels of the log axis
    const double x = x_of(std::pow(10.0, decade));
    add("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", x, kTop, x,
        kTop + kHeight);
    add("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">1e%d</text>\n", x, kTop + kHeight + 18,
        decade);
  }
  for (int tenth = 0; tenth <= 10; tenth += 2) {
    const double y = y_of(tenth / 10.0);
    add("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n", kLeft, y,
        kLeft + kWidth, y);
    add("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.1f</text>\n", kLeft - 6, y + 4,
        tenth / 10.0);
  }
  add("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
      "stroke=\"black\"/>\n",
      kLeft, kTop, kWidth, kHeight);
  add("<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">false-positive rate (other hits "
      "tagged)</text>\n",
      kLeft + kWidth / 2, kTop + kHeight + 40);
  add("<text transform=\"translate(18 %.1f) rotate(-90)\" text-anchor=\"middle\">Michel hit "
      "efficiency</text>\n",
      kTop + kHeight / 2);
  svg += "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"";
  for (const RocPoint& p : curve) {
    if (p.false_positive_rate <= 0) continue;
    add("%.1f,%.1f ", x_of(p.false_positive_rate), y_of(p.efficiency));
  }
  svg += "\"/>\n";
  for (const PaperPoint& p : kPaperMichelPoints) {
    add("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#d62728\"/>\n", x_of(p.false_positive_rate),
        y_of(p.efficiency));
  }
  add("<text x=\"%.1f\" y=\"%.1f\" fill=\"#d62728\">DUNE EPJC 82 (2022) 903, simulation</text>\n",
      kLeft + 10, kTop + kHeight - 10);
  svg += "</svg>\n";
  return svg;
}

}  // namespace kaas::examples
