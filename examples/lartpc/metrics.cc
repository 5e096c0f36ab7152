#include "examples/lartpc/metrics.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "examples/lartpc/toy_physics.h"
#include "kaas/common/error.h"

namespace kaas::examples {

ClassCounts& ClassCounts::operator+=(const ClassCounts& other) {
  truth += other.truth;
  predicted += other.predicted;
  matched += other.matched;
  return *this;
}

Evaluation& Evaluation::operator+=(const Evaluation& other) {
  for (size_t c = 0; c < 3; ++c) {
    hits[c] += other.hits[c];
    clusters[c] += other.clusters[c];
  }
  michel_hits += other.michel_hits;
  michel_clusters += other.michel_clusters;
  for (size_t t = 0; t < michel_hit_curve.size(); ++t)
    michel_hit_curve[t] += other.michel_hit_curve[t];
  for (size_t k = 0; k < michel_scores_truth.size(); ++k) {
    michel_scores_truth[k] += other.michel_scores_truth[k];
    michel_scores_other[k] += other.michel_scores_other[k];
  }
  michel_scores += other.michel_scores;
  track_em_hits += other.track_em_hits;
  track_em_correct += other.track_em_correct;
  non_fiducial_hits += other.non_fiducial_hits;
  return *this;
}

MichelSelection& MichelSelection::operator+=(const MichelSelection& other) {
  decays += other.decays;
  decays_tagged += other.decays_tagged;
  captures += other.captures;
  captures_tagged += other.captures_tagged;
  return *this;
}

MichelSelection select_michels(const ToyEvent& event, std::span<const float> scores,
                               std::span<const uint8_t> fiducial, float threshold) {
  if (scores.size() != event.hits.size() * 4 || fiducial.size() != event.hits.size())
    throw Error(ErrorCode::kInvalidArgument,
                "select_michels: " + std::to_string(event.hits.size()) + " hits but " +
                    std::to_string(scores.size()) + " scores and " +
                    std::to_string(fiducial.size()) + " fiducial flags");
  MichelSelection out;
  const double radius2 = kSelectionRadiusCm * kSelectionRadiusCm;
  for (const StoppingEnd& end : event.stopping_ends) {
    int tagged = 0;
    for (size_t i = 0; i < event.hits.size() && tagged < kSelectionMinHits; ++i) {
      const Hit& h = event.hits[i];
      if (h.plane != end.plane || !fiducial[i] || !(scores[i * 4 + 3] > threshold)) continue;
      const double dx = (double(h.wire) - end.wire) * kWirePitchCm;
      const double dy = (double(h.peak_tick) - end.tick) * kCmPerTick;
      tagged += dx * dx + dy * dy <= radius2;
    }
    const bool is_tagged = tagged >= kSelectionMinHits;
    (end.decayed ? out.decays : out.captures) += 1;
    (end.decayed ? out.decays_tagged : out.captures_tagged) += is_tagged;
  }
  return out;
}

int truth_class(Truth truth) {
  switch (truth) {
    case Truth::kTrack:
      return 0;
    case Truth::kEm:
    case Truth::kMichel:
      return 1;
    case Truth::kNone:
      break;
  }
  return 2;
}

namespace {

int largest_of_three(const float* s) {
  return int(std::max_element(s, s + 3) - s);
}

// The histogram slot of a score: exact against the float thresholds k / kScoreBins.
size_t score_slot(float score) {
  const auto edge = [](int k) { return float(k) / float(kScoreBins); };
  if (!(score > 0.0f)) return 0;
  int k = std::clamp(int(std::ceil(double(score) * kScoreBins)) - 1, 0, kScoreBins - 1);
  if (k > 0 && !(score > edge(k))) --k;
  if (k + 1 < kScoreBins && score > edge(k + 1)) ++k;
  return size_t(k) + 1;
}

void count(ClassCounts& counts, bool is_truth, bool is_predicted) {
  counts.truth += is_truth;
  counts.predicted += is_predicted;
  counts.matched += is_truth && is_predicted;
}

}  // namespace

Evaluation evaluate(const ToyEvent& event, std::span<const float> scores,
                    std::span<const uint8_t> fiducial, const Clusters& clusters,
                    std::span<const float> per_cluster, float michel_threshold) {
  const size_t hits = event.hits.size();
  if (scores.size() != hits * 4 || fiducial.size() != hits)
    throw Error(ErrorCode::kInvalidArgument,
                "evaluate: " + std::to_string(hits) + " hits but " + std::to_string(scores.size()) +
                    " scores (4 per hit) and " + std::to_string(fiducial.size()) +
                    " fiducial flags");
  if (per_cluster.size() != clusters.size() * 4)
    throw Error(ErrorCode::kInvalidArgument,
                "evaluate: " + std::to_string(clusters.size()) + " clusters but " +
                    std::to_string(per_cluster.size()) + " cluster scores (4 per cluster)");
  Evaluation out;
  for (size_t i = 0; i < hits; ++i) {
    if (!fiducial[i]) {
      ++out.non_fiducial_hits;
      continue;
    }
    const float* s = &scores[i * 4];
    const int truth = truth_class(event.hits[i].truth), predicted = largest_of_three(s);
    for (int c = 0; c < 3; ++c) count(out.hits[size_t(c)], truth == c, predicted == c);
    const bool is_michel = event.hits[i].truth == Truth::kMichel;
    count(out.michel_hits, is_michel, s[3] > michel_threshold);
    for (size_t t = 0; t < kMichelCurve.size(); ++t)
      count(out.michel_hit_curve[t], is_michel, s[3] > kMichelCurve[t]);
    ++(is_michel ? out.michel_scores_truth : out.michel_scores_other)[score_slot(s[3])];
    (is_michel ? out.michel_scores.michel : out.michel_scores.other).push_back(s[3]);
    if (truth != 2) {
      ++out.track_em_hits;
      out.track_em_correct += predicted == truth;
    }
  }
  for (size_t c = 0; c < clusters.size(); ++c) {
    const int64_t first = clusters.splits[c], last = clusters.splits[c + 1];
    if (first < 0 || last < first || size_t(last) > clusters.hits.size())
      throw Error(ErrorCode::kInvalidArgument, "evaluate: cluster " + std::to_string(c) +
                                                   " spans hits [" + std::to_string(first) + ", " +
                                                   std::to_string(last) + ") of " +
                                                   std::to_string(clusters.hits.size()));
    // The vote counts the fiducial hits (those the prediction is made of), or all hits of a
    // cluster without any.
    std::array<int64_t, 3> by_class{};
    int64_t michel = 0, members = 0;
    for (const bool fiducial_only : {true, false}) {
      for (int64_t k = first; k < last; ++k) {
        const size_t hit = size_t(clusters.hits[size_t(k)]);
        if (hit >= hits)
          throw Error(ErrorCode::kInvalidArgument, "evaluate: cluster " + std::to_string(c) +
                                                       " names hit " + std::to_string(hit) +
                                                       " of " + std::to_string(hits));
        if (fiducial_only && !fiducial[hit]) continue;
        ++by_class[size_t(truth_class(event.hits[hit].truth))];
        michel += event.hits[hit].truth == Truth::kMichel;
        ++members;
      }
      if (members > 0) break;
    }
    if (members == 0) continue;
    const int truth = int(std::max_element(by_class.begin(), by_class.end()) - by_class.begin());
    const float* s = &per_cluster[c * 4];
    const int predicted = largest_of_three(s);
    for (int k = 0; k < 3; ++k) count(out.clusters[size_t(k)], truth == k, predicted == k);
    count(out.michel_clusters, 2 * michel > members, s[3] > michel_threshold);
  }
  return out;
}

namespace {

std::string format(const char* pattern, double a, double b) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}

}  // namespace

ClassCounts michel_hits_above(const Evaluation& e, int k) {
  ClassCounts counts;
  for (size_t slot = 0; slot < e.michel_scores_truth.size(); ++slot) {
    counts.truth += e.michel_scores_truth[slot];
    if (int(slot) >= k + 1) {
      counts.matched += e.michel_scores_truth[slot];
      counts.predicted += e.michel_scores_truth[slot] + e.michel_scores_other[slot];
    }
  }
  return counts;
}

WorkingPoint best_michel_working_point(const Evaluation& e) {
  WorkingPoint best;
  double best_product = -1;
  for (int k = 1; k < kScoreBins; ++k) {
    const ClassCounts counts = michel_hits_above(e, k);
    if (counts.truth == 0)
      throw Error(ErrorCode::kInvalidArgument,
                  "no Michel hit in these events: no working point can be chosen");
    const double product = counts.efficiency() * counts.purity();
    if (product > best_product) {
      best_product = product;
      best = {float(k) / float(kScoreBins), counts};
    }
  }
  return best;
}

std::string summary_line(const Evaluation& e) {
  std::string line = "hits efficiency/purity:";
  for (size_t c = 0; c < 2; ++c)
    line += std::string(" ") + kClassNames[c] +
            format(" %.3f/%.3f,", e.hits[c].efficiency(), e.hits[c].purity());
  line += format(" Michel %.3f/%.3f;", e.michel_hits.efficiency(), e.michel_hits.purity());
  line +=
      format(" track/em accuracy %.3f (%.0f hits)", e.track_em_accuracy(), double(e.track_em_hits));
  return line;
}

std::string summary_table(const Evaluation& e) {
  std::string table =
      "| truth-matched | truth | predicted | both | efficiency | purity |\n"
      "|---|---:|---:|---:|---:|---:|\n";
  auto row = [&](const std::string& name, const ClassCounts& c) {
    char text[160];
    std::snprintf(text, sizeof text, "| %s | %lld | %lld | %lld | %.3f | %.3f |\n", name.c_str(),
                  static_cast<long long>(c.truth), static_cast<long long>(c.predicted),
                  static_cast<long long>(c.matched), c.efficiency(), c.purity());
    table += text;
  };
  for (size_t c = 0; c < 3; ++c) row(std::string("hits ") + kClassNames[c], e.hits[c]);
  row("hits Michel", e.michel_hits);
  for (size_t c = 0; c < 3; ++c) row(std::string("clusters ") + kClassNames[c], e.clusters[c]);
  row("clusters Michel", e.michel_clusters);
  char text[160];
  std::snprintf(text, sizeof text,
                "track/em hit accuracy: %.3f (%lld hits; %lld hits outside the fiducial region "
                "not counted)\n",
                e.track_em_accuracy(), static_cast<long long>(e.track_em_hits),
                static_cast<long long>(e.non_fiducial_hits));
  table += text;
  table += "Michel hits, efficiency/purity at score >";
  for (size_t t = 0; t < kMichelCurve.size(); ++t) {
    std::snprintf(text, sizeof text, "%s %.2f: %.3f/%.3f", t ? ";" : "", double(kMichelCurve[t]),
                  e.michel_hit_curve[t].efficiency(), e.michel_hit_curve[t].purity());
    table += text;
  }
  table += "\n";
  return table;
}

}  // namespace kaas::examples
