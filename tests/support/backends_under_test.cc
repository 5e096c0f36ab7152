#include "tests/support/backends_under_test.h"

#include <cstdlib>
#include <sstream>

namespace kaas::testing {

namespace {

std::vector<std::string> selected_names() {
  std::vector<std::string> names;
  const char* env = std::getenv("KAAS_TEST_BACKENDS");
  if (env == nullptr || *env == '\0') {
    for (const Backend* b : compiled_backends()) names.emplace_back(b->name());
    return names;
  }
  std::stringstream list(env);
  std::string name;
  while (std::getline(list, name, ',')) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

}  // namespace

std::vector<const Backend*> backends_under_test() {
  std::vector<const Backend*> result;
  for (const auto& name : selected_names()) {
    const Backend& backend = find_backend(name);  // unknown name: kNotFound, the run fails
    if (backend.available()) result.push_back(&backend);
  }
  return result;
}

std::vector<std::string> unavailable_backends_under_test() {
  std::vector<std::string> result;
  for (const auto& name : selected_names()) {
    const Backend& backend = find_backend(name);
    if (!backend.available()) result.push_back(name + ": " + backend.unavailable_reason());
  }
  return result;
}

std::string backend_name(const ::testing::TestParamInfo<const Backend*>& info) {
  return std::string(info.param->name());
}

bool affordable(const Backend& backend, int64_t estimated_handoffs) {
  return backend.id() != BackendId::kGpuEmu || estimated_handoffs <= kEmulatorHandoffBudget;
}

// A selected backend that cannot run here shows up as a skipped test with the reason, so a
// GPU test on a machine without a GPU is visibly skipped rather than silently empty.
TEST(BackendUnderTest, IsAvailableHere) {
  const auto missing = unavailable_backends_under_test();
  if (!missing.empty()) {
    std::string reasons;
    for (const auto& m : missing) reasons += m + "; ";
    GTEST_SKIP() << "backend not available on this machine: " << reasons;
  }
  EXPECT_FALSE(backends_under_test().empty());
}

}  // namespace kaas::testing
