#pragma once
// A kernel case: one shape of one kernel with its input generator, host reference, tolerance,
// and the bytes and FLOPs one run moves and computes. The same cases are checked by the kernel
// tests on every backend (tests/kernels/test_<kernel>.cc), timed by kaas-bench
// (bench/kernels/bench_<kernel>.cc) and, the first of each kernel, run by
// `kaas-info --self-check`. Every kernel's list is in cases/registry.h.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "kaas/backends/backend.h"
#include "kaas/backends/launch_config.h"
#include "kaas/backends/queue.h"

namespace kaas::cases {

// The outcome of comparing one run's outputs with the host reference.
struct Check {
  int64_t checked = 0;       // output elements compared
  int64_t wrong = 0;         // outside their tolerance (or not bit-identical where exact)
  int64_t guard_writes = 0;  // elements written outside the outputs
  double max_error = 0;      // worst |got - expected| over the elements with a tolerance
  double tolerance = 0;      // the tolerance at that element
  bool exact = true;         // every element had to match bit for bit
  std::string first_wrong;   // the first wrong element, for the report
  bool passed() const { return wrong == 0 && guard_writes == 0; }
  // "bit-exact", "max error 5.96e-08 (tolerance 2.38e-07)" or what went wrong.
  std::string detail() const;
};

// Accumulates a Check element by element; the report of an element is only formatted when it
// is wrong (a case may compare millions).
class Checker {
 public:
  // |got - expected| <= tolerance; NaN only matches NaN.
  void near(double got, double expected, double tolerance, const char* name, int64_t index);
  // got == expected (integers, indices, exact float results; NaN matches NaN).
  template <class T>
  void exact(T got, T expected, const char* name, int64_t index) {
    if (got == expected || (got != got && expected != expected)) {
      ++check_.checked;
    } else {
      fail(name, index, std::to_string(got) + ", expected " + std::to_string(expected));
    }
  }
  // The same bits.
  void bits(float got, float expected, const char* name, int64_t index);
  // A property of the element; what() says what is wrong with it.
  template <class F>
  void require(bool ok, const char* name, int64_t index, F&& what) {
    if (ok) {
      ++check_.checked;
    } else {
      fail(name, index, what());
    }
  }
  void add_guard_writes(int64_t n) { check_.guard_writes += n; }
  const Check& result() const { return check_; }

 private:
  void fail(const char* name, int64_t index, const std::string& what);
  Check check_;
};

// How a case runs: the launch configuration and the implementation, by the kernel's own name
// ("auto", "portable", "avx2", "binned", ...).
struct RunOptions {
  LaunchConfig config{};
  std::string impl = "auto";
};

// A case prepared on a queue: inputs on the device, outputs poisoned between guard zones.
class Instance {
 public:
  virtual ~Instance() = default;
  // Launches the kernel; the caller waits for the queue.
  virtual void run() = 0;
  // The outputs of the first run against the host reference (waits for the queue).
  virtual Check check() = 0;
  // What actually ran where the options leave a choice (e.g. the implementation auto picked).
  virtual std::string label() const { return {}; }
};

struct Case {
  std::string kernel;  // its header is kernels/<kernel>.h
  // The implementation tables whose rows impls() names (kernels/impl_table.h), e.g. "gemm fp32";
  // an implementation runs its row of each. Empty for a kernel with one implementation.
  std::vector<std::string> impl_tables;
  // The benchmark name; "{backend}" and "{impl}" are replaced by the backend and implementation.
  std::string name;
  std::string title;               // short, for the self-check table
  double bytes = 0;                // read and written once per run
  double flops = 0;                // per run (0: not a FLOP-bound kernel)
  bool reduced_precision = false;  // bf16 / fp16 operands: benchmarks add the bf16-peak fraction
  double items = 0;                // per run, reported as the rate `items_name` (0: none)
  std::string items_name;          // e.g. "hits/s"
  double reference_ops = 0;  // work of the host reference: tests skip what exceeds their budget
  // The implementations this case can run on `backend`; the first is the default.
  std::function<std::vector<std::string>(const Backend&)> impls;
  std::function<std::unique_ptr<Instance>(const Queue&, const RunOptions&)> prepare;
};

// The case's name with {backend} and {impl} filled in.
std::string bench_name(const Case& c, std::string_view backend, std::string_view impl);

// impls for kernels that have one implementation.
std::vector<std::string> default_impl(const Backend&);

// Prepares `c` on `queue`, runs it once and checks it; an exception is a failed check.
Check run_and_check(const Queue& queue, const Case& c, const RunOptions& options);

// Host-reference work above which a case is not checked on a backend (the kernel tests and
// kaas-self-check); on the emulated GPU (a fiber switch per element and barrier) also a limit on
// the bytes a case touches. The first case of each kernel (kaas-info's self-check) is always
// checked; the benchmark still times the others, and smaller cases of the same kernel check the
// same code.
inline constexpr double kCaseReferenceBudget = 3e8;
inline constexpr double kEmulatorCaseReferenceBudget = 3e7;
inline constexpr double kEmulatorCaseBytesBudget = 4e6;
bool within_check_budget(const Case& c, const Backend& backend, bool first_of_kernel);

}  // namespace kaas::cases
