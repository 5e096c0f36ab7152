#pragma once
// Runs the cases of every kernel (cases/registry.h) on a backend against their host references:
// the first case of each with the backend's first implementation (kaas-info --self-check), or
// every case within the host-reference budget of cases/case.h (the kernel tests' selection) with
// every implementation the backend has (kaas-self-check, scripts/gpu_check.sh).

#include <string>
#include <vector>

#include "kaas/backends/backend.h"

namespace kaas::tools {

struct CheckResult {
  std::string kernel;
  std::string impl;  // the implementation that ran
  bool passed = false;
  std::string detail;  // max error, or the error message
  double milliseconds = 0;
};

enum class CaseSelection { kFirstOfEachKernel, kEveryCaseAndImplementation };

std::vector<CheckResult> self_check(const Backend& backend,
                                    CaseSelection selection = CaseSelection::kFirstOfEachKernel);

}  // namespace kaas::tools
