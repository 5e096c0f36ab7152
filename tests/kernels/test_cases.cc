// Every public kernel (a kernels/*.h that declares a launcher) has cases, and every case is
// well formed: a kernel without a case fails here instead of going unnoticed.

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "cases/registry.h"
#include "tests/support/kernel_cases.h"

#ifndef KAAS_SOURCE_DIR
#error "KAAS_SOURCE_DIR must name the source tree"
#endif

namespace kaas::testing {
namespace {

std::set<std::string> kernel_headers() {
  std::set<std::string> kernels;
  for (const auto& entry : std::filesystem::directory_iterator(KAAS_SOURCE_DIR "/kernels")) {
    if (entry.path().extension() != ".h") continue;
    std::ifstream file(entry.path());
    std::stringstream text;
    text << file.rdbuf();
    if (text.str().find("KAAS_DECLARE_LAUNCHER(") != std::string::npos) {
      kernels.insert(entry.path().stem().string());
    }
  }
  return kernels;
}

TEST(KernelCases, EveryKernelHeaderHasCases) {
  const auto headers = kernel_headers();
  ASSERT_GE(headers.size(), 10u);
  std::set<std::string> registered;
  for (const auto& entry : cases::kernel_registry()) registered.emplace(entry.kernel);
  for (const auto& kernel : headers) {
    EXPECT_TRUE(registered.count(kernel))
        << "kernels/" << kernel << ".h has no entry in cases/registry.cc";
  }
  for (const auto& kernel : registered) {
    EXPECT_TRUE(headers.count(kernel)) << "cases/registry.cc names kernel " << kernel
                                       << " without a kernels/" << kernel << ".h launcher";
  }
}

TEST(KernelCases, CasesAreWellFormed) {
  std::set<std::string> names;
  for (const auto& entry : cases::kernel_registry()) {
    const auto list = entry.cases();
    EXPECT_FALSE(list.empty()) << entry.kernel << " has no case";
    for (const auto& c : list) {
      EXPECT_EQ(c.kernel, entry.kernel);
      EXPECT_NE(c.name.find("{backend}"), std::string::npos) << c.name;
      EXPECT_FALSE(c.title.empty()) << c.name;
      EXPECT_GT(c.bytes, 0) << c.name;
      EXPECT_GT(c.reference_ops, 0) << c.name;
      EXPECT_TRUE(c.impls && c.prepare) << c.name;
      EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name " << c.name;
    }
  }
}

// The first case of each kernel is kaas-info's self-check, checked on every backend: it must stay
// cheap (the emulated GPU included).
TEST(KernelCases, FirstCasesAreSmall) {
  for (const auto& entry : cases::kernel_registry()) {
    const auto list = entry.cases();
    ASSERT_FALSE(list.empty());
    EXPECT_LE(list.front().reference_ops, kEmulatorCaseReferenceBudget) << list.front().name;
    EXPECT_LE(list.front().bytes, 4 * kEmulatorCaseBytesBudget) << list.front().name;
  }
}

}  // namespace
}  // namespace kaas::testing
