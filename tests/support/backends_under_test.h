#pragma once
// Which backends a test run covers. CTest registers each backend-parameterised test binary
// once per compiled backend with KAAS_TEST_BACKENDS=<name>; without it every available
// backend runs.

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kaas/backends/backend.h"

namespace kaas::testing {

// The selected backends that are available here.
std::vector<const Backend*> backends_under_test();
// Selected but unavailable backends with the reason (e.g. "cuda: no CUDA device: ...").
std::vector<std::string> unavailable_backends_under_test();

// gtest parameter naming: the backend's name.
std::string backend_name(const ::testing::TestParamInfo<const Backend*>& info);

// The emulated GPU hands a baton between element threads at every sync() (a fiber switch), so
// tests skip configurations on it whose estimated number of hand-overs exceeds this budget;
// serial and openmp run every configuration.
inline constexpr int64_t kEmulatorHandoffBudget = 4'000'000;
bool affordable(const Backend& backend, int64_t estimated_handoffs);

}  // namespace kaas::testing

#define KAAS_INSTANTIATE_FOR_BACKENDS(suite)                                            \
  GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(suite);                                 \
  INSTANTIATE_TEST_SUITE_P(Backends, suite,                                             \
                           ::testing::ValuesIn(::kaas::testing::backends_under_test()), \
                           ::kaas::testing::backend_name)
