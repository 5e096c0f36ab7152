#pragma once
// The case-driven part of every kernel test: each case of the kernel (cases/registry.h), with
// each implementation it offers on the backend, against its host reference.

#include <string_view>

#include "cases/case.h"
#include "kaas/backends/backend.h"

namespace kaas::testing {

// The budgets of cases/case.h.
using cases::kCaseReferenceBudget;
using cases::kEmulatorCaseBytesBudget;
using cases::kEmulatorCaseReferenceBudget;

// Runs and checks every affordable case of `kernel`; records a failure per wrong case and
// prints how many were over budget.
void expect_cases_pass(const Backend& backend, std::string_view kernel);

}  // namespace kaas::testing
