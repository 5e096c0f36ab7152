#pragma once
// The case-driven part of every kernel test: each case of the kernel (cases/registry.h), with
// each implementation it offers on the backend, against its host reference.

#include <string>
#include <string_view>

#include "cases/case.h"
#include "kaas/backends/backend.h"

namespace kaas::testing {

// The budgets of cases/case.h.
using cases::kCaseReferenceBudget;
using cases::kEmulatorCaseBytesBudget;
using cases::kEmulatorCaseReferenceBudget;

// Under AddressSanitizer (scripts/test.sh step 2) the kernels' index arithmetic is what is
// checked: a tenth of the reference budget keeps every kernel's small and mid-sized cases (edges,
// tails, empty and odd shapes) and the tests' large samples shrink; the large cases, the same
// code on more data, are checked in step 1.
#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif
inline constexpr double kSanitizerBudgetScale = kAddressSanitizer ? 0.1 : 1.0;

// Runs and checks every affordable case of `kernel`; records a failure per wrong case and
// prints how many were over budget. Skipped in a tier run that repeats the full tier.
void expect_cases_pass(const Backend& backend, std::string_view kernel);

// ctest's kernel_tiers.<tier> (KAAS_TEST_TIER_RUN=1, KAAS_MAX_CPU_ISA=<tier>) runs the case lists
// on a tier below this CPU's own. Capped at or above the CPU's own tier, the run would repeat
// test_kernels.<backend> case for case (the AVX2-only machine kind: kernel_tiers.avx2 and .avx512):
// then this says why, and the case lists are skipped.
std::string tier_run_repeats_the_full_tier();

// Whether this test run cross-checks the host references against an independent one (Eigen).
// That compares two host computations of the same case, so it depends on neither the backend
// nor the sanitizer: it runs once, with the serial backend outside AddressSanitizer (step 1 of
// the test command, whose serial runs see every case the other backends and ASan see).
bool cross_check_references(const Backend& backend);

}  // namespace kaas::testing
