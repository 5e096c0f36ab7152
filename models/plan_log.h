#pragma once
// What an ONNX model's plan log (Model::describe) is made of, as records in four sections rather
// than lines edited by position: the graph (import notes, then the ops and their shapes when they
// run one by one), the precision of each layer, the planner's decisions, and the one-line summary
// "plan: ..." that callers read last. lines() puts them in that order.

#include <string>
#include <vector>

namespace kaas::models {

class PlanLog {
 public:
  std::vector<std::string> graph;      // import log; "Conv conv2d -> [1,44,44,48]" per op
  std::vector<std::string> precision;  // "precision fp32: every op", per-layer 16-bit notes
  std::vector<std::string> decisions;  // "planner: ...", the sparse plan's description and rule
  std::string summary;                 // "plan: ..."

  // A decision extended after it was made ("at batch 32: kernels split").
  void extend_last_decision(const std::string& more) {
    if (!decisions.empty()) decisions.back() += more;
  }

  std::vector<std::string> lines() const {
    std::vector<std::string> out = graph;
    out.insert(out.end(), precision.begin(), precision.end());
    out.insert(out.end(), decisions.begin(), decisions.end());
    if (!summary.empty()) out.push_back(summary);
    return out;
  }
};

}  // namespace kaas::models
