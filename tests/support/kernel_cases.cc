#include "tests/support/kernel_cases.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cases/registry.h"
#include "kaas/backends/cpu/cpu_features.h"

namespace kaas::testing {
namespace {

bool within_budget(const cases::Case& c, const Backend& backend, bool first_of_kernel) {
  if (!cases::within_check_budget(c, backend, first_of_kernel)) return false;
  const double budget =
      backend.id() == BackendId::kGpuEmu ? kEmulatorCaseReferenceBudget : kCaseReferenceBudget;
  return first_of_kernel || c.reference_ops <= kSanitizerBudgetScale * budget;
}

}  // namespace

std::string tier_run_repeats_the_full_tier() {
  const char* tier_run = std::getenv("KAAS_TEST_TIER_RUN");
  if (tier_run == nullptr || std::string_view(tier_run) != "1") return "";
  if (usable_isa_tier() < detected_isa_tier()) return "";
  return "the capped tier " + std::string(cpu_isa_cap()) + " is not below this CPU's own (" +
         std::string(to_string(detected_isa_tier())) + "): test_kernels.* runs its cases";
}

void expect_cases_pass(const Backend& backend, std::string_view kernel) {
  if (const std::string why = tier_run_repeats_the_full_tier(); !why.empty()) GTEST_SKIP() << why;
  const auto list = cases::cases_of(kernel);
  ASSERT_FALSE(list.empty()) << kernel << " has no case";
  Queue queue(backend);
  int64_t skipped = 0;
  for (const cases::Case& c : list) {
    if (!within_budget(c, backend, &c == &list.front())) {
      ++skipped;
      continue;
    }
    for (const std::string& impl : c.impls(backend)) {
      const std::string name = cases::bench_name(c, backend.name(), impl);
      cases::RunOptions options;
      options.impl = impl;
      const cases::Check check = cases::run_and_check(queue, c, options);
      EXPECT_TRUE(check.passed()) << name << ": " << check.detail();
      EXPECT_GT(check.checked, 0) << name << ": nothing compared";
    }
  }
  if (skipped > 0) {
    std::printf("[ budget   ] %lld %s cases over the budget not checked here\n", (long long)skipped,
                std::string(kernel).c_str());
  }
}

bool cross_check_references(const Backend& backend) {
  return !kAddressSanitizer && backend.id() == BackendId::kSerial;
}

}  // namespace kaas::testing
