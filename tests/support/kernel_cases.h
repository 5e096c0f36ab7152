#pragma once
// The case-driven part of every kernel test: each case of the kernel (cases/registry.h), with
// each implementation it offers on the backend, against its host reference.

#include <string_view>

#include "kaas/backends/backend.h"

namespace kaas::testing {

// Host-reference work above which a case is not checked on this backend; on the emulated GPU
// (a fiber switch per element and barrier) also a limit on the bytes a case touches. The first
// case of each kernel (kaas-info's self-check) is always checked; the benchmark still times the
// others, and smaller cases of the same kernel check the same code.
inline constexpr double kCaseReferenceBudget = 3e8;
inline constexpr double kEmulatorCaseReferenceBudget = 3e7;
inline constexpr double kEmulatorCaseBytesBudget = 4e6;

// Runs and checks every affordable case of `kernel`; records a failure per wrong case and
// prints how many were over budget.
void expect_cases_pass(const Backend& backend, std::string_view kernel);

}  // namespace kaas::testing
