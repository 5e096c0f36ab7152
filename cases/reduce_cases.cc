#include "cases/reduce_cases.h"

#include <algorithm>
#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"

namespace kaas::cases {

std::vector<float> reduce_inputs(const ReduceCase& c) {
  const int64_t n = c.rows * c.cols;
  return random_floats(size_t(n), (c.per_row ? 11u : 21u) + uint32_t(c.per_row ? c.cols : n));
}

Reduced reduce_reference(ReduceOp op, const float* x, int64_t n) {
  if (op == ReduceOp::kMax) return {n == 0 ? -INFINITY : double(*std::max_element(x, x + n)), 0};
  double sum = 0, magnitude = 0;
  for (int64_t i = 0; i < n; ++i) sum += x[i], magnitude += std::abs(x[i]);
  return {sum, reduction_tolerance(n, magnitude)};
}

std::vector<ReduceCase> reduce_shapes() {
  return {{true, ReduceOp::kSum, 97, 1030},    {false, ReduceOp::kSum, 1, 1 << 16},
          {false, ReduceOp::kSum, 1, 1 << 20}, {false, ReduceOp::kSum, 1, 1 << 24},
          {false, ReduceOp::kMax, 1, 100'003}, {true, ReduceOp::kMax, 4096, 1000}};
}

namespace {

class ReduceInstance : public Instance {
 public:
  ReduceInstance(const Queue& queue, const ReduceCase& c, const RunOptions& options)
      : queue_(queue),
        c_(c),
        options_(options),
        x_host_(reduce_inputs(c)),
        x_(queue, x_host_),
        out_(queue, size_t(c.per_row ? c.rows : 1)),
        workspace_(queue, c.per_row
                              ? 0
                              : size_t(reduce_all_workspace_size(queue, c.cols, options.config))) {}
  void run() override {
    if (c_.per_row) {
      reduce_rows(queue_, c_.op,
                  make_view<2>(static_cast<const float*>(x_.data()), {c_.rows, c_.cols}),
                  out_.view(), options_.config);
    } else {  // the workspace overload stays asynchronous
      reduce_all(queue_, c_.op, x_.const_view(), out_.view(), workspace_.view(), options_.config);
    }
  }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto out = out_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    const int64_t lines = c_.per_row ? c_.rows : 1, length = c_.per_row ? c_.cols : n_all();
    for (int64_t r = 0; r < lines; ++r) {
      const Reduced want = reduce_reference(c_.op, x_host_.data() + r * length, length);
      if (c_.op == ReduceOp::kMax) {
        checker.exact(out[r], float(want.value), "out", r);
      } else {
        checker.near(out[r], want.value, want.tolerance, "out", r);
      }
    }
    return checker.result();
  }

 private:
  int64_t n_all() const { return c_.rows * c_.cols; }
  const Queue& queue_;
  ReduceCase c_;
  RunOptions options_;
  std::vector<float> x_host_;
  Guarded<float> x_, out_, workspace_;
};

std::string op_name(ReduceOp op) {
  return op == ReduceOp::kSum ? "sum" : "max";
}

}  // namespace

std::vector<Case> reduce_cases() {
  std::vector<Case> cases;
  for (const ReduceCase& c : reduce_shapes()) {
    Case k;
    k.kernel = "reduce";
    const int64_t n = c.rows * c.cols;
    if (c.per_row) {
      const std::string shape = std::to_string(c.rows) + "x" + std::to_string(c.cols);
      k.name = "reduce_rows_" + op_name(c.op) + "/{backend}/" + shape;
      k.title = "reduce_rows " + op_name(c.op) + " " + shape;
    } else {
      k.name = "reduce_all_" + op_name(c.op) + "/{backend}/" + std::to_string(n);
      k.title = "reduce_all " + op_name(c.op) + " n=" + std::to_string(n);
    }
    k.bytes = 4.0 * double(n);
    k.flops = double(n);
    k.reference_ops = double(n);
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) {
      return std::make_unique<ReduceInstance>(queue, c, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
