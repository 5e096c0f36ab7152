#pragma once
// The planner: at a choice point (which implementation, which split, how big a slab) the
// candidates are an ordered list, already filtered to those that apply to the shape, backend and
// CPU, the first being what the fixed rules pick. In measuring mode (the default) the planner
// times each candidate briefly on the real shapes, keeps the fastest and remembers the decision
// in a small cache file keyed by CPU model, kaas version, a digest of the kernel sources it was
// built from, choice point and candidate names, so a restart costs no trial and a rebuild with
// changed kernels measures again. In fixed mode (KAAS_PLANNER=fixed) it takes the first candidate
// and measures nothing: deterministic plans for tests.
//
// The cache: $KAAS_PLANNER_CACHE if set ("off": none), else $XDG_CACHE_HOME/kaas/plans.tsv, else
// $HOME/.cache/kaas/plans.tsv. Writers take an exclusive lock and replace the file by rename, so
// concurrent processes never see half a file; unreadable or malformed lines are ignored (and
// dropped at the next write), a file that cannot be written only costs the next process a trial.

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace kaas::planner {

enum class Mode { kMeasure, kFixed };

// KAAS_PLANNER: unset, "" or "measure" -> kMeasure, "fixed" -> kFixed; anything else throws
// kInvalidArgument naming the value.
Mode mode_from_environment();

struct Candidate {
  std::string name;           // unique within the list; part of the cache key
  std::function<void()> run;  // one complete execution on the real shapes (results discarded)
};

struct Budget {
  double max_seconds = 1.0;  // per choice point: runs stop once this is spent (each candidate
                             // still gets one warm-up and one timed run)
  int max_runs = 3;          // timed runs per candidate (the minimum is kept)
};

struct Decision {
  size_t chosen = 0;
  std::string chosen_name;
  std::vector<double> ms;          // per candidate, best timed run; empty when nothing was measured
  std::vector<std::string> names;  // the candidates' names, in list order
  bool from_cache = false;
  bool fixed = false;
  bool pinned = false;         // named by the caller (e.g. a model option), not measured
  double trial_seconds = 0.0;  // wall time spent measuring (0 from the cache or fixed)
  std::string measured_on;     // the CPU model of the measurement (cache and plan file entries)
  bool from_plan_file = false;
  bool plan_file_written = true;  // false: a plan_file was given and could not be written
  // "<point>: <chosen> (measured a 12.3 ms, b 10.1 ms; 0.35 s trial)" or "(cached; measured
  // ...)" or "(fixed rule)".
  std::string describe(const std::string& point) const;
};

// Chooses among `candidates` (non-empty) for choice point `point` (e.g. "emtrk fused fp32
// batch 256 threads 2"). Exceptions of a candidate propagate.
//
// `plan_file` (a model's plan, e.g. <repository>/<model>/<version>/kaas_plan.tsv): the decision
// belongs to the model rather than to this machine. Its key leaves out the CPU model (the file
// records it), and the lookup, the trial and the write happen under the file's exclusive lock:
// of several processes loading the model at once, the first measures and the others wait and
// read its decision, so every process answers with the same plan (docs/reproducibility.md).
// A plan file that cannot be written is logged by the caller (Decision::plan_file_written).
Decision choose(const std::string& point, std::span<const Candidate> candidates, Mode mode,
                const Budget& budget = {}, const std::string& plan_file = {});

// The cache file in use (empty when caching is off).
std::string cache_path();

// Forgets the decisions this process remembers (the next choose() reads the cache file again,
// as a restarted process would): for tests, and for a long-running process that re-plans.
void forget_process_decisions();

}  // namespace kaas::planner
