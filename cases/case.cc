#include "cases/case.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <exception>

#include "kaas/backends/backend_traits.h"

namespace kaas::cases {

std::string Check::detail() const {
  char text[160];
  if (guard_writes > 0) {
    std::snprintf(text, sizeof text, "%lld writes outside the outputs", (long long)guard_writes);
    return text;
  }
  if (wrong > 0 && checked == 0) return first_wrong;  // an error before anything was compared
  if (wrong > 0) {
    std::snprintf(text, sizeof text, "%lld of %lld wrong, first %s", (long long)wrong,
                  (long long)checked, first_wrong.c_str());
    return text;
  }
  if (exact) return "bit-exact";
  std::snprintf(text, sizeof text, "max error %.2e (tolerance %.2e)", max_error, tolerance);
  return text;
}

void Checker::near(double got, double expected, double tolerance, const char* name, int64_t index) {
  check_.exact = false;
  const bool nan = std::isnan(got) || std::isnan(expected);
  const double error = std::abs(got - expected);
  if (nan ? std::isnan(got) && std::isnan(expected) : error <= tolerance) {
    ++check_.checked;
    if (!nan && error >= check_.max_error) {
      check_.max_error = error;
      check_.tolerance = tolerance;
    }
    return;
  }
  char text[96];
  std::snprintf(text, sizeof text, "%.9g, expected %.9g +- %.3g", got, expected, tolerance);
  fail(name, index, text);
}

void Checker::bits(float got, float expected, const char* name, int64_t index) {
  if (std::memcmp(&got, &expected, sizeof got) == 0) {
    ++check_.checked;
    return;
  }
  char text[64];
  std::snprintf(text, sizeof text, "%.9g, expected %.9g", got, expected);
  fail(name, index, text);
}

void Checker::fail(const char* name, int64_t index, const std::string& what) {
  ++check_.checked;
  if (check_.wrong++ == 0) {
    check_.first_wrong = std::string(name) + "[" + std::to_string(index) + "]: " + what;
  }
}

std::string bench_name(const Case& c, std::string_view backend, std::string_view impl) {
  std::string name = c.name;
  for (auto [key, value] :
       {std::pair<std::string_view, std::string_view>{"{backend}", backend}, {"{impl}", impl}}) {
    for (size_t at = name.find(key); at != std::string::npos; at = name.find(key)) {
      name.replace(at, key.size(), value);
    }
  }
  return name;
}

std::vector<std::string> default_impl(const Backend&) {
  return {"auto"};
}

Check run_and_check(const Queue& queue, const Case& c, const RunOptions& options) {
  try {
    const auto instance = c.prepare(queue, options);
    instance->run();
    queue.wait();
    return instance->check();
  } catch (const std::exception& e) {
    Check failed;
    failed.wrong = 1;
    failed.first_wrong = std::string("error: ") + e.what();
    return failed;
  }
}

bool within_check_budget(const Case& c, const Backend& backend, bool first_of_kernel) {
  if (first_of_kernel) return true;
  const bool emulator = test_only(backend.id());
  const double budget = emulator ? kEmulatorCaseReferenceBudget : kCaseReferenceBudget;
  return c.reference_ops <= budget && !(emulator && c.bytes > kEmulatorCaseBytesBudget);
}

}  // namespace kaas::cases
