#include "cases/axpy_cases.h"

#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "kaas/kernels/axpy.h"

namespace kaas::cases {

AxpyInputs axpy_inputs(int64_t n) {
  return {random_floats(size_t(n), 1u + uint32_t(n)), random_floats(size_t(n), 7u + uint32_t(n))};
}

double axpy_expected(float a, float x, float y) {
  return double(a) * x + y;
}

double axpy_tolerance(float a, float x, float y) {
  return 2 * kFloatUnitRoundoff * (std::abs(double(a) * x) + std::abs(y));
}

std::vector<AxpyCase> axpy_shapes() {
  return {{100'003, 0.5f}, {1 << 16, -1.75f}, {1 << 20, -1.75f}, {1 << 24, -1.75f}};
}

namespace {

class AxpyInstance : public Instance {
 public:
  AxpyInstance(const Queue& queue, const AxpyCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        in_(axpy_inputs(c.n)),
        x_(queue, in_.x),
        y_(queue, in_.y) {}
  void run() override { axpy(queue_, c_.a, x_.const_view(), y_.view(), options_.config); }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto out = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    for (int64_t i = 0; i < c_.n; ++i) {
      checker.near(out[i], axpy_expected(c_.a, in_.x[i], in_.y[i]),
                   axpy_tolerance(c_.a, in_.x[i], in_.y[i]), "y", i);
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  AxpyCase c_;
  RunOptions options_;
  AxpyInputs in_;
  Guarded<float> x_, y_;
};

}  // namespace

std::vector<Case> axpy_cases() {
  std::vector<Case> cases;
  for (const AxpyCase& c : axpy_shapes()) {
    Case k;
    k.kernel = "axpy";
    k.name = "axpy/{backend}/" + std::to_string(c.n);
    k.title = "axpy n=" + std::to_string(c.n);
    k.bytes = 12.0 * double(c.n);
    k.flops = 2.0 * double(c.n);
    k.reference_ops = double(c.n);
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<AxpyInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
