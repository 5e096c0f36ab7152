#include "cases/scan_cases.h"

#include <cmath>

#include "cases/guarded.h"
#include "cases/reference.h"
#include "kaas/kernels/scan.h"

namespace kaas::cases {

template <class T>
std::vector<T> scan_inputs(int64_t n) {
  if constexpr (std::is_same_v<T, float>) {
    return random_floats(size_t(n), 41u + uint32_t(n));
  } else {
    return random_integers<T>(size_t(n), 31u + uint32_t(n), 0, 1000);
  }
}
template std::vector<int32_t> scan_inputs(int64_t);
template std::vector<int64_t> scan_inputs(int64_t);
template std::vector<float> scan_inputs(int64_t);

std::vector<ScanCase> scan_shapes() {
  return {{ScanType::kInt64, 100'003}, {ScanType::kInt64, 1 << 16}, {ScanType::kInt64, 1 << 20},
          {ScanType::kInt64, 1 << 24}, {ScanType::kInt32, 100'003}, {ScanType::kFloat, 100'003}};
}

namespace {

template <class T>
class ScanInstance : public Instance {
 public:
  ScanInstance(const Queue& queue, int64_t n, const RunOptions& options)
      : queue_(queue),
        n_(n),
        options_(options),
        x_host_(scan_inputs<T>(n)),
        x_(queue, x_host_),
        y_(queue, size_t(n)),
        workspace_(queue, size_t(exclusive_scan_workspace_size(queue, n, options.config))) {}
  void run() override {
    exclusive_scan<T>(queue_, x_.const_view(), y_.view(), workspace_.view(), options_.config);
  }
  Check check() override {
    Checker checker;
    int64_t guard_writes = 0;
    const auto out = y_.read(&guard_writes);
    checker.add_guard_writes(guard_writes);
    if constexpr (std::is_same_v<T, float>) {
      double running = 0, magnitude = 0;
      for (int64_t i = 0; i < n_; ++i) {
        checker.near(out[i], running, reduction_tolerance(i, magnitude), "y", i);
        running += x_host_[i];
        magnitude += std::abs(x_host_[i]);
      }
    } else {
      T running = 0;
      for (int64_t i = 0; i < n_; ++i) {
        checker.exact(out[i], running, "y", i);
        running += x_host_[i];
      }
    }
    return checker.result();
  }

 private:
  const Queue& queue_;
  int64_t n_;
  RunOptions options_;
  std::vector<T> x_host_;
  Guarded<T> x_, y_, workspace_;
};

const char* type_name(ScanType type) {
  return type == ScanType::kInt32 ? "i32" : type == ScanType::kInt64 ? "i64" : "f32";
}

}  // namespace

std::vector<Case> scan_cases() {
  std::vector<Case> cases;
  for (const ScanCase& c : scan_shapes()) {
    const double element = c.type == ScanType::kInt64 ? 8.0 : 4.0;
    Case k;
    k.kernel = "scan";
    k.name =
        std::string("exclusive_scan_") + type_name(c.type) + "/{backend}/" + std::to_string(c.n);
    k.title = std::string("exclusive_scan ") + type_name(c.type) + " n=" + std::to_string(c.n);
    k.bytes = 2 * element * double(c.n);
    k.flops = double(c.n);
    k.reference_ops = double(c.n);
    k.impls = default_impl;
    k.prepare = [c](const Queue& queue, const RunOptions& options) -> std::unique_ptr<Instance> {
      switch (c.type) {
        case ScanType::kInt32:
          return std::make_unique<ScanInstance<int32_t>>(queue, c.n, options);
        case ScanType::kInt64:
          return std::make_unique<ScanInstance<int64_t>>(queue, c.n, options);
        case ScanType::kFloat:
          break;
      }
      return std::make_unique<ScanInstance<float>>(queue, c.n, options);
    };
    cases.push_back(std::move(k));
  }
  return cases;
}

}  // namespace kaas::cases
