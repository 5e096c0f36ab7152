#include "tools/self_check.h"

#include <chrono>

#include "cases/case.h"
#include "cases/registry.h"
#include "kaas/common/error.h"

namespace kaas::tools {

namespace {

CheckResult run_one(const Queue& queue, const cases::Case& c, const std::string& impl) {
  const auto start = std::chrono::steady_clock::now();
  CheckResult result;
  result.kernel = c.kernel;
  result.impl = impl;
  try {
    cases::RunOptions options;
    options.impl = impl;
    const cases::Check check = cases::run_and_check(queue, c, options);
    result.passed = check.passed();
    result.detail = c.title + ": " + check.detail();
  } catch (const Error& e) {  // a launch failure is a failed check, reported with the rest
    result.detail = c.title + ": " + e.what();
  }
  result.milliseconds =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  return result;
}

}  // namespace

std::vector<CheckResult> self_check(const Backend& backend, CaseSelection selection) {
  std::vector<CheckResult> results;
  Queue queue(backend);
  for (const cases::KernelCases& entry : cases::kernel_registry()) {
    const std::vector<cases::Case> list = entry.cases();
    if (list.empty()) {  // a kernel without a case is a failed check, not a silent gap
      CheckResult missing;
      missing.kernel = std::string(entry.kernel);
      missing.detail = "no case in cases/" + missing.kernel + "_cases.cc";
      results.push_back(std::move(missing));
      continue;
    }
    if (selection == CaseSelection::kFirstOfEachKernel) {
      results.push_back(run_one(queue, list.front(), list.front().impls(backend).front()));
      continue;
    }
    // As the kernel tests: the cases within the host-reference budget (cases/case.h).
    for (const cases::Case& c : list) {
      if (!cases::within_check_budget(c, backend, &c == &list.front())) continue;
      for (const std::string& impl : c.impls(backend)) results.push_back(run_one(queue, c, impl));
    }
  }
  return results;
}

}  // namespace kaas::tools
