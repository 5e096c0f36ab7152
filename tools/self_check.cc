#include "tools/self_check.h"

#include <chrono>

#include "cases/registry.h"

namespace kaas::tools {

std::vector<CheckResult> self_check(const Backend& backend) {
  std::vector<CheckResult> results;
  Queue queue(backend);
  for (const cases::KernelCases& entry : cases::kernel_registry()) {
    const auto start = std::chrono::steady_clock::now();
    CheckResult result;
    result.kernel = std::string(entry.kernel);
    const std::vector<cases::Case> list = entry.cases();
    if (list.empty()) {  // a kernel without a case is a failed check, not a silent gap
      result.detail = "no case in cases/" + result.kernel + "_cases.cc";
    } else {
      const cases::Case& first = list.front();
      cases::RunOptions options;
      options.impl = first.impls(backend).front();
      const cases::Check check = cases::run_and_check(queue, first, options);
      result.passed = check.passed();
      result.detail = first.title + ": " + check.detail();
    }
    result.milliseconds =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    results.push_back(std::move(result));
  }
  return results;
}

}  // namespace kaas::tools
